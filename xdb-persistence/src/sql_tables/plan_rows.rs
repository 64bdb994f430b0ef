//! Writes [`TransitionPlan`]s over a [`SqlConn`], written once: the plan writer of
//! MySQL, and of the batched transitions and first starts (PostgreSQL's own plan
//! writer sends a plan as one statement, see `postgres::pipeline`).
//!
//! [`PlanRows`] gathers what the plans of one transaction change, and sends one
//! statement per kind of row for all of them: the execution rows' updates, the state
//! rows' updates (each guarded by the version its plan was decided from), and the new
//! states, tasks and history events, together in one round trip where the dialect can
//! ([`SqlConn::execute_all`]); their answers are checked after ([`send_checked`]). The
//! writes that abort, delete or consume rows (closes, timers, messages: rare) go first,
//! one statement each, so that they never remove a row the plan adds. Otherwise a
//! transaction's plans change disjoint rows (each plan never changes one row twice, see
//! [`crate::plan_writes`], and a batch holds one plan per execution), so the order
//! between the other statements does not matter.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;
use xdb_engine::{
    HistoryEntry, NewStateExecution, NewTask, ProcessExecution, ProcessUpdate,
    StateExecutionStatus, StateUpdate, Task, TransitionPlan,
};

use super::attribute_rows::write_local_attributes;
use super::business_rows::{self, BusinessConn};
use super::in_list::{in_list, padded};
use crate::continuation::LeaseTo;
use crate::plan_writes::{checked_attribute_writes, plan_writes, Write};
use crate::sql::{json, Param, SqlConn, SqlKind, Statement};
use crate::trace_context::{self, TaskInfo};
use crate::{Applied, StoreError};

/// Applies `plan` for `process`. A state row whose version moved meanwhile, or a message
/// consumed meanwhile, fails it with [`StoreError::Stale`]. With `lease_to`, the plan's
/// continuation is inserted already leased and returned.
pub(crate) async fn apply_plan<'a, C: BusinessConn>(
    conn: &mut C,
    process: &ProcessExecution,
    plan: &'a TransitionPlan,
    now: DateTime<Utc>,
    lease_to: Option<LeaseTo<'a>>,
) -> Result<Applied, StoreError> {
    let mut rows = PlanRows::default();
    let info = trace_context::task_info();
    rows.write(process.id, plan, now, lease_to, info);
    let mut continuations = rows.send(conn).await?;
    let writes = &plan.attribute_writes;
    if let Some(config) = checked_attribute_writes(process, writes)? {
        business_rows::update(conn, config, &writes.global_attributes).await?;
    }
    write_local_attributes(conn, process.id, &writes.local_attributes).await?;
    Ok(applied(process, plan, continuations.remove(&process.id)))
}

/// What a committed `plan` of `process` did, its leased `continuation` included.
pub(crate) fn applied(
    process: &ProcessExecution,
    plan: &TransitionPlan,
    continuation: Option<Task>,
) -> Applied {
    Applied {
        created_tasks: plan.new_tasks.len() > usize::from(continuation.is_some()),
        closed_process: plan.closes_process(),
        closed_outcome: crate::plan_writes::closed_outcome(process, plan).map(Box::new),
        continuation,
        continuation_call: None,
    }
}

/// A task row to insert.
struct TaskRow<'a> {
    process: Uuid,
    now: DateTime<Utc>,
    task: &'a NewTask,
    leased: Option<LeaseTo<'a>>,
    info: Option<Value>,
    traceparent: Option<String>,
}

/// The rows that plans change, gathered to go out as one statement per kind.
#[derive(Default)]
pub(crate) struct PlanRows<'a> {
    processes: Vec<(Uuid, &'a ProcessUpdate)>,
    states: Vec<(Uuid, &'a StateUpdate, StateExecutionStatus)>,
    new_states: Vec<(Uuid, &'a NewStateExecution)>,
    tasks: Vec<TaskRow<'a>>,
    history: Vec<(Uuid, &'a HistoryEntry, DateTime<Utc>)>,
    /// The writes that abort, delete or consume rows, in the order of their plans.
    removals: Vec<Checked<'a>>,
}

impl<'a> PlanRows<'a> {
    /// Gathers the writes of `plan` (for execution `id`, decided at `now`); `info` goes
    /// with its tasks.
    pub fn write(
        &mut self,
        id: Uuid,
        plan: &'a TransitionPlan,
        now: DateTime<Utc>,
        lease_to: Option<LeaseTo<'a>>,
        info: Option<TaskInfo>,
    ) {
        let traceparent = info.as_ref().and_then(|i| i.traceparent.clone());
        let info = info.as_ref().map(json);
        for write in plan_writes(plan, now, lease_to) {
            match write {
                Write::Process(update) => self.processes.push((id, update)),
                Write::State { update, status } => self.states.push((id, update, status)),
                Write::NewState(state) => self.new_states.push((id, state)),
                Write::NewTask { task, leased } => self.tasks.push(TaskRow {
                    process: id,
                    now,
                    task,
                    leased,
                    info: info.clone(),
                    traceparent: traceparent.clone(),
                }),
                Write::History(entries) => {
                    self.history.extend(entries.iter().map(|e| (id, e, now)))
                }
                write => self.removals.push(removal(id, write)),
            }
        }
    }

    /// Sends the writes gathered; returns the leased continuations by execution.
    pub async fn send<C: SqlConn>(self, conn: &mut C) -> Result<HashMap<Uuid, Task>, StoreError> {
        let statements = self.statements(C::KIND, C::tells_inserted_ids(conn));
        send_checked(conn, statements).await
    }

    /// The statements that send the writes gathered, each with what its answer must
    /// tell: first those that abort, delete or consume rows (a plan's new tasks must not
    /// be among the tasks it deletes), then one per kind of row.
    pub fn statements(self, kind: SqlKind, tells_ids: bool) -> Vec<Checked<'a>> {
        let mut statements = self.removals;
        statements.extend(update_processes(kind, &self.processes));
        statements.extend(update_states(kind, &self.states));
        statements.extend(insert_states(&self.new_states));
        statements.extend(insert_tasks(kind, tells_ids, &self.tasks));
        statements.extend(insert_history(&self.history));
        statements
    }
}

/// A statement, and what its answer must tell.
pub(crate) type Checked<'a> = (Statement<'a>, Expect);

/// What a statement's answer must tell.
pub(crate) enum Expect {
    /// Anything.
    Nothing,
    /// That it matched this many rows; else the transaction is [`StoreError::Stale`],
    /// for the reason given.
    Matched(u64, &'static str),
    /// The ids of these leased continuations (of their executions), in order.
    Continuations(Vec<(Uuid, Task)>),
}

/// Runs `statements` together (see [`SqlConn::execute_all`]) and checks each answer;
/// returns the leased continuations by execution.
pub(crate) async fn send_checked<C: SqlConn>(
    conn: &mut C,
    statements: Vec<Checked<'_>>,
) -> Result<HashMap<Uuid, Task>, StoreError> {
    let (statements, expects): (Vec<_>, Vec<_>) = statements.into_iter().unzip();
    let done = conn.execute_all(&statements).await?;
    let mut continuations = HashMap::new();
    for (expect, done) in expects.into_iter().zip(done) {
        match expect {
            Expect::Nothing => {}
            Expect::Matched(rows, stale) => {
                if done.matched() != rows {
                    return Err(StoreError::Stale(stale.into()));
                }
            }
            Expect::Continuations(tasks) => {
                for ((process, mut task), id) in tasks.into_iter().zip(done.into_ids()) {
                    task.id = id;
                    continuations.insert(process, task);
                }
            }
        }
    }
    Ok(continuations)
}

/// A placeholder for a value of `sql_type`: PostgreSQL cannot infer the type of a
/// parameter that a `CASE` returns, MySQL needs no cast.
fn typed(kind: SqlKind, sql_type: &str) -> String {
    kind.pick(format!("CAST(? AS {sql_type})"), "?".to_string())
}

/// The execution rows' updates in one statement: each changed column of each row, the
/// others kept.
fn update_processes<'a>(
    kind: SqlKind,
    updates: &[(Uuid, &'a ProcessUpdate)],
) -> Option<Checked<'a>> {
    if updates.is_empty() {
        return None;
    }
    type Value = fn(&ProcessUpdate) -> Param<'_>;
    let columns: [(&str, &str, Value); 7] = [
        ("status", "text", |u| {
            Param::Text(u.status.map(|s| s.as_str()))
        }),
        ("close_time", "timestamptz", |u| Param::Time(u.close_time)),
        ("running_state_executions", "int", |u| {
            Param::Int(u.running_state_executions)
        }),
        ("graceful_completion", "jsonb", |u| {
            Param::Json(u.graceful_completion.as_ref().map(json))
        }),
        ("state_execution_sequences", "jsonb", |u| {
            Param::Json(u.state_execution_sequences.as_ref().map(json))
        }),
        ("result", "jsonb", |u| {
            Param::Json(u.result.as_ref().map(json))
        }),
        ("failure", "jsonb", |u| {
            Param::Json(u.failure.as_ref().map(json))
        }),
    ];
    let mut params = Vec::new();
    let mut assignments = Vec::with_capacity(columns.len());
    for (column, sql_type, value) in columns {
        let when = format!(" WHEN ? THEN {}", typed(kind, sql_type));
        let mut cases = String::new();
        for (id, update) in padded(updates) {
            cases.push_str(&when);
            params.extend([id.into(), value(update)]);
        }
        assignments.push(format!("{column} = COALESCE(CASE id{cases} END, {column})"));
    }
    params.extend(updates.iter().map(|(id, _)| Param::from(*id)));
    let ids = in_list(&mut params, updates.len());
    let sql = format!(
        "UPDATE xdb_sys_process_executions SET {} WHERE id IN ({ids})",
        assignments.join(", ")
    );
    Some((Statement::matched(sql, params), Expect::Nothing))
}

/// The state rows' updates in one statement, each only while at the version its plan
/// read; `Stale` when one was not.
fn update_states<'a>(
    kind: SqlKind,
    updates: &[(Uuid, &'a StateUpdate, StateExecutionStatus)],
) -> Option<Checked<'a>> {
    if updates.is_empty() {
        return None;
    }
    type Value<'v> = fn(&'v StateUpdate, StateExecutionStatus) -> Param<'v>;
    let columns: [(&str, &str, Value<'_>); 4] = [
        ("status", "text", |_, status| {
            Param::Text(Some(status.as_str()))
        }),
        ("command_request", "jsonb", |u, _| {
            Param::Json(u.command_request.as_ref().map(json))
        }),
        ("command_results", "jsonb", |u, _| {
            Param::Json(u.command_progress.as_ref().map(json))
        }),
        ("last_failure", "jsonb", |u, _| {
            Param::JsonRef(u.last_failure.as_ref())
        }),
    ];
    const ROW: &str = "process_execution_id = ? AND state_id = ? AND state_execution_number = ?";
    let mut params = Vec::new();
    let mut assignments = Vec::with_capacity(columns.len() + 1);
    for (column, sql_type, value) in columns {
        let when = format!(" WHEN {ROW} THEN {}", typed(kind, sql_type));
        let mut cases = String::new();
        for (id, update, status) in padded(updates) {
            cases.push_str(&when);
            params.extend(state_key(id, update));
            params.push(value(update, status));
        }
        let case = format!("CASE{cases} END");
        assignments.push(match column {
            "last_failure" => format!("{column} = COALESCE({case}, {column})"),
            _ => format!("{column} = {case}"),
        });
    }
    assignments.push("version = version + 1".into());
    let mut guards = Vec::new();
    for (id, update, _) in padded(updates) {
        guards.push(format!("({ROW} AND version = ?)"));
        params.extend(state_key(id, update));
        params.push(update.expected_version.into());
    }
    let sql = format!(
        "UPDATE xdb_sys_async_state_executions SET {} WHERE {}",
        assignments.join(", "),
        guards.join(" OR ")
    );
    let expect = Expect::Matched(updates.len() as u64, "a state execution changed meanwhile");
    Some((Statement::matched(sql, params), expect))
}

/// The parameters of a state row's key, as [`update_states`] matches it.
fn state_key(id: Uuid, update: &StateUpdate) -> [Param<'_>; 3] {
    [
        id.into(),
        update.id.state_id.as_str().into(),
        update.id.number.into(),
    ]
}

/// The statement of one write that aborts, deletes or consumes rows of execution `id`.
fn removal(id: Uuid, write: Write<'_>) -> Checked<'_> {
    let statement = match write {
        Write::AbortActiveStates { except } => {
            let mut params = vec![
                StateExecutionStatus::Aborted.as_str().into(),
                id.into(),
                StateExecutionStatus::WaitUntilRunning.as_str().into(),
                StateExecutionStatus::WaitingCommands.as_str().into(),
                StateExecutionStatus::ExecuteRunning.as_str().into(),
            ];
            // The states the plan updates are aborted by their own update.
            let mut excluded = String::new();
            for state in except {
                excluded.push_str(" AND NOT (state_id = ? AND state_execution_number = ?)");
                params.extend([state.state_id.as_str().into(), state.number.into()]);
            }
            let sql = format!(
                "UPDATE xdb_sys_async_state_executions SET status = ?, version = version + 1 \
                 WHERE process_execution_id = ? AND status IN (?, ?, ?){excluded}"
            );
            Statement::matched(sql, params)
        }
        Write::DeleteTasks => {
            let sql = "DELETE FROM xdb_sys_tasks WHERE process_execution_id = ?";
            Statement::matched(sql.into(), vec![id.into()])
        }
        Write::DeleteTimers(state) => {
            let sql = "DELETE FROM xdb_sys_tasks WHERE process_execution_id = ? \
                 AND state_id = ? AND state_execution_number = ? AND task_type = 'TIMER'";
            let params = vec![
                id.into(),
                state.state_id.as_str().into(),
                state.number.into(),
            ];
            Statement::matched(sql.into(), params)
        }
        Write::Consume(consumption) => {
            let consumed_by = consumption.consumed_by.to_string();
            let mut params = vec![Param::String(consumed_by), id.into()];
            let sequence_ids = &consumption.sequence_ids;
            params.extend(sequence_ids.iter().map(|s| Param::from(*s)));
            let list = in_list(&mut params, sequence_ids.len());
            let sql = format!(
                "UPDATE xdb_sys_local_queue_messages SET consumed_by = ? \
                 WHERE process_execution_id = ? AND sequence_id IN ({list}) \
                   AND consumed_by IS NULL"
            );
            let expect = Expect::Matched(
                sequence_ids.len() as u64,
                "a local-queue message was consumed meanwhile",
            );
            return (Statement::matched(sql, params), expect);
        }
        Write::Process(_)
        | Write::State { .. }
        | Write::NewState(_)
        | Write::NewTask { .. }
        | Write::History(_) => unreachable!("PlanRows gathers these"),
    };
    (statement, Expect::Nothing)
}

/// The new states in one statement.
fn insert_states<'a>(states: &[(Uuid, &'a NewStateExecution)]) -> Option<Checked<'a>> {
    if states.is_empty() {
        return None;
    }
    let mut params = Vec::with_capacity(states.len() * 6);
    for (id, state) in states {
        params.extend([
            Param::from(*id),
            state.id.state_id.as_str().into(),
            state.id.number.into(),
            state.status.as_str().into(),
            Param::Json(state.input.as_ref().map(json)),
            Param::Json(Some(json(&state.config))),
        ]);
    }
    let rows = vec!["(?, ?, ?, ?, ?, ?)"; states.len()].join(", ");
    let sql = format!(
        "INSERT INTO xdb_sys_async_state_executions (process_execution_id, state_id, \
           state_execution_number, status, input, config) VALUES {rows}"
    );
    Some((Statement::matched(sql, params), Expect::Nothing))
}

/// The new tasks, in as few statements as their ids allow (`tells_ids`: as
/// [`SqlConn::tells_inserted_ids`]), the leased continuations' ids told by their
/// statement. A leased row is leased from the database's now.
fn insert_tasks<'a>(kind: SqlKind, tells_ids: bool, tasks: &[TaskRow<'a>]) -> Vec<Checked<'a>> {
    let (leased, unleased): (Vec<_>, Vec<_>) = tasks.iter().partition(|t| t.leased.is_some());
    let continuations = |rows: &[&TaskRow]| {
        Expect::Continuations(
            rows.iter()
                .map(|row| (row.process, leased_task(row)))
                .collect(),
        )
    };
    let mut statements = Vec::new();
    if tells_ids || leased.len() <= 1 {
        // The leased rows first: their ids are the first told.
        let rows: Vec<&TaskRow> = leased.iter().chain(&unleased).copied().collect();
        statements.extend(insert_task_rows(kind, &rows).map(|s| (s, continuations(&leased))));
    } else {
        for row in &leased {
            statements.extend(insert_task_rows(kind, &[row]).map(|s| (s, continuations(&[row]))));
        }
        statements.extend(insert_task_rows(kind, &unleased).map(|s| (s, Expect::Nothing)));
    }
    statements
}

/// `tasks` in one statement, run for their ids (see [`SqlConn::insert_numbered`]).
fn insert_task_rows<'a>(kind: SqlKind, tasks: &[&TaskRow<'a>]) -> Option<Statement<'a>> {
    if tasks.is_empty() {
        return None;
    }
    let mut params = Vec::with_capacity(tasks.len() * 10);
    for row in tasks {
        let (task, leased) = (row.task, row.leased);
        params.extend([
            task.task_type.as_str().into(),
            task.fire_at.into(),
            row.process.into(),
            Param::Text(task.state.as_ref().map(|s| s.state_id.as_str())),
            Param::Int(task.state.as_ref().map(|s| s.number)),
            Param::Int(task.timer_index),
            Param::Text(leased.map(|to| to.owner)),
            Param::BigInt(leased.map(|to| to.lease.as_micros() as i64)),
            Param::Time(leased.map(|_| row.now)),
            Param::Json(row.info.clone()),
        ]);
    }
    let lease_ends = kind.pick(
        "clock_timestamp() + CAST(? AS BIGINT) * interval '1 microsecond'",
        "UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND",
    );
    let rows = vec![format!("(?, ?, ?, ?, ?, ?, ?, {lease_ends}, ?, ?)"); tasks.len()].join(", ");
    let sql = format!(
        "INSERT INTO xdb_sys_tasks (task_type, fire_at, process_execution_id, state_id, \
           state_execution_number, timer_index, lease_owner, lease_expires_at, \
           first_attempt_at, info) VALUES {rows}"
    );
    Some(Statement::ids(sql, params, tasks.len()))
}

/// The continuation a leased task row became, as its claim would read it, but for its
/// id, told by its insert.
fn leased_task(row: &TaskRow) -> Task {
    Task {
        id: 0,
        task_type: row.task.task_type,
        fire_at: row.task.fire_at,
        process_execution_id: row.process,
        state: row.task.state.clone(),
        timer_index: row.task.timer_index,
        attempt: 1,
        first_attempt_at: Some(row.now),
        traceparent: row.traceparent.clone(),
    }
}

/// Every event in one statement keeps history off the critical path.
fn insert_history<'a>(entries: &[(Uuid, &'a HistoryEntry, DateTime<Utc>)]) -> Option<Checked<'a>> {
    if entries.is_empty() {
        return None;
    }
    let mut params = Vec::with_capacity(entries.len() * 4);
    for (id, entry, now) in entries {
        params.extend([
            Param::from(*id),
            Param::from(*now),
            Param::from(entry.event_type),
            Param::JsonRef(Some(&entry.details)),
        ]);
    }
    let rows = vec!["(?, ?, ?, ?)"; entries.len()].join(", ");
    let sql = format!(
        "INSERT INTO xdb_sys_history_events \
           (process_execution_id, event_time, event_type, details) VALUES {rows}"
    );
    Some((Statement::matched(sql, params), Expect::Nothing))
}
