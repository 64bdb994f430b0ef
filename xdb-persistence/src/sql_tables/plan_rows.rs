//! Writes [`TransitionPlan`]s over a [`SqlConn`], written once: the plan writer of
//! MySQL, of the batched transitions and first starts, and of PostgreSQL in the tests
//! that keep the generic forms tested there (its own plan writer sends a plan as one
//! statement, see `postgres::pipeline`, then ends with [`write_attributes`] as this
//! one does).
//!
//! [`PlanRows`] gathers what the plans of one transaction change, and sends one
//! statement per kind of row for all of them: the execution rows' updates, the state
//! rows' updates (each guarded by the version its plan was decided from), and the new
//! states, tasks and history events. The writes that abort, delete or consume rows
//! (closes, timers, messages: rare) go first, one statement each. One plan's statements
//! go out together (see [`crate::steps`]: one round trip on MariaDB). A transaction's
//! plans change disjoint rows (each plan never changes one row twice, see
//! [`crate::plan_writes`], and a batch holds one plan per execution), so the order
//! between the statements does not matter.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;
use xdb_engine::{
    HistoryEntry, NewStateExecution, NewTask, ProcessExecution, ProcessUpdate,
    StateExecutionStatus, StateUpdate, Task, TransitionPlan,
};
use xdb_protocol::AttributeWrites;

use super::attribute_rows::write_local_attributes;
use super::business_rows::{self, BusinessConn};
use super::in_list::{in_list, padded};
use crate::continuation::LeaseTo;
use crate::plan_writes::{checked_attribute_writes, plan_writes, Write};
use crate::sql::{json, Param, SqlConn, SqlKind};
use crate::steps::{run_each, Expect, Step};
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
    rows.write(process, plan, now, lease_to, info);
    let mut continuations = rows.send(conn, []).await?;
    write_attributes(conn, process, &plan.attribute_writes).await?;
    Ok(applied(process, plan, continuations.remove(&process.id)))
}

/// Writes a plan's attribute `writes` for `process`, after its other writes: the keys
/// are checked as they are written. Every dialect's plan writer ends with this.
pub(crate) async fn write_attributes<C: BusinessConn>(
    conn: &mut C,
    process: &ProcessExecution,
    writes: &AttributeWrites,
) -> Result<(), StoreError> {
    if let Some(config) = checked_attribute_writes(process, writes)? {
        business_rows::update(conn, config, &writes.global_attributes).await?;
    }
    write_local_attributes(conn, process.id, &writes.local_attributes).await
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
    /// Its execution's, which claims read tasks by.
    priority: u8,
    /// Its execution's fairness key and weight, which claims share a priority by.
    fairness: Option<xdb_engine::Fairness>,
    now: DateTime<Utc>,
    task: &'a NewTask,
    leased: Option<LeaseTo<'a>>,
    info: Option<Value>,
    traceparent: Option<String>,
}

/// The rows that plans change, gathered to go out as one statement per kind.
#[derive(Default)]
pub(crate) struct PlanRows<'a> {
    /// Plans written: the statements of one go out together (see [`PlanRows::send`]).
    plans: usize,
    /// Statements that go first, in order: those the caller puts first (see
    /// [`PlanRows::first`]), then the writes that abort, delete or consume rows.
    lead: Vec<Step<'a>>,
    processes: Vec<(Uuid, &'a ProcessUpdate)>,
    states: Vec<(Uuid, &'a StateUpdate, StateExecutionStatus)>,
    new_states: Vec<(Uuid, &'a NewStateExecution)>,
    tasks: Vec<TaskRow<'a>>,
    history: Vec<(Uuid, &'a HistoryEntry, DateTime<Utc>)>,
}

impl<'a> PlanRows<'a> {
    /// Puts `step` before every plan's writes (and after those put first before it).
    pub fn first(&mut self, step: Step<'a>) {
        self.lead.push(step);
    }

    /// Gathers the writes of `plan` (for execution `process`, decided at `now`); those
    /// that abort, delete or consume rows go first, in order. `info` goes with its tasks.
    pub fn write(
        &mut self,
        process: &ProcessExecution,
        plan: &'a TransitionPlan,
        now: DateTime<Utc>,
        lease_to: Option<LeaseTo<'a>>,
        info: Option<TaskInfo>,
    ) {
        self.plans += 1;
        let id = process.id;
        let traceparent = info.as_ref().and_then(|i| i.traceparent.clone());
        let info = info.as_ref().map(json);
        for write in plan_writes(plan, now, lease_to) {
            match write {
                Write::Process(update) => self.processes.push((id, update)),
                Write::State { update, status } => self.states.push((id, update, status)),
                Write::NewState(state) => self.new_states.push((id, state)),
                Write::NewTask { task, leased } => self.tasks.push(TaskRow {
                    process: id,
                    priority: process.priority,
                    fairness: crate::columns::task_fairness(
                        process.fairness.as_ref(),
                        task.task_type,
                    )
                    .cloned(),
                    now,
                    task,
                    leased,
                    info: info.clone(),
                    traceparent: traceparent.clone(),
                }),
                Write::History(entries) => {
                    self.history.extend(entries.iter().map(|e| (id, e, now)))
                }
                write => self.lead.push(removal(id, write)),
            }
        }
    }

    /// Sends the writes gathered, then `last` (statements of the caller's that follow
    /// them); returns the leased continuations by execution. One plan's statements go
    /// out together ([`SqlConn::run_in_order`]: one round trip on MariaDB); several
    /// plans' one after the other, as the text of a group is one statement to prepare,
    /// and the sizes of many plans' statements would multiply into ever new texts that
    /// push each other out of the connection's cache.
    pub async fn send<'s, C: SqlConn>(
        self,
        conn: &mut C,
        last: impl IntoIterator<Item = Step<'s>>,
    ) -> Result<HashMap<Uuid, Task>, StoreError> {
        let PlanRows {
            plans,
            lead,
            processes,
            states,
            new_states,
            tasks,
            history,
        } = self;
        let mut steps: Vec<Step<'_>> = lead;
        steps.extend(update_processes(C::KIND, &processes));
        steps.extend(update_states(C::KIND, &states));
        steps.extend(insert_states(&new_states));
        let leased = insert_tasks(C::KIND, &tasks, conn.tells_inserted_ids(), &mut steps);
        steps.extend(insert_history(&history));
        // Pushed one by one: each is then taken for as long as the plans' rows are
        // borrowed here.
        for step in last {
            steps.push(step);
        }
        let told = if plans <= 1 {
            conn.run_in_order(&steps).await?
        } else {
            run_each(conn, &steps).await?
        };
        // The leased rows' ids are the first told (see `insert_tasks`).
        let ids = told.into_iter().flatten();
        Ok(leased
            .into_iter()
            .zip(ids)
            .map(|(row, id)| (row.process, leased_task(row, id)))
            .collect())
    }
}

/// A placeholder for a value of `sql_type`: PostgreSQL cannot infer the type of a
/// parameter that a `CASE` returns, MySQL needs no cast.
fn typed(kind: SqlKind, sql_type: &str) -> String {
    kind.pick(format!("CAST(? AS {sql_type})"), "?".to_string())
}

/// The execution rows' updates in one statement: each changed column of each row, the
/// others kept.
fn update_processes<'u>(kind: SqlKind, updates: &[(Uuid, &'u ProcessUpdate)]) -> Option<Step<'u>> {
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
    Some(Step::new(sql, params))
}

/// The state rows' updates in one statement, each only while at the version its plan
/// read; `Stale` when one was not.
fn update_states<'u>(
    kind: SqlKind,
    updates: &[(Uuid, &'u StateUpdate, StateExecutionStatus)],
) -> Option<Step<'u>> {
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
    let stale = Expect::Rows(updates.len() as u64, "a state execution changed meanwhile");
    Some(Step::expecting(sql, params, stale))
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
fn removal(id: Uuid, write: Write<'_>) -> Step<'_> {
    match write {
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
            Step::new(sql, params)
        }
        Write::DeleteTasks => Step::new(
            "DELETE FROM xdb_sys_tasks WHERE process_execution_id = ?".into(),
            vec![id.into()],
        ),
        Write::DeleteParkedTasks => Step::new(
            "DELETE FROM xdb_sys_parked_tasks WHERE process_execution_id = ?".into(),
            vec![id.into()],
        ),
        Write::DeleteTimers(state) => Step::new(
            "DELETE FROM xdb_sys_tasks WHERE process_execution_id = ? \
             AND state_id = ? AND state_execution_number = ? AND task_type = 'TIMER'"
                .into(),
            vec![
                id.into(),
                state.state_id.as_str().into(),
                state.number.into(),
            ],
        ),
        Write::Consume(consumption) => {
            let consumed_by = Param::OwnedText(consumption.consumed_by.to_string());
            let mut params = vec![consumed_by, id.into()];
            let sequence_ids = &consumption.sequence_ids;
            params.extend(sequence_ids.iter().map(|s| Param::from(*s)));
            let list = in_list(&mut params, sequence_ids.len());
            let sql = format!(
                "UPDATE xdb_sys_local_queue_messages SET consumed_by = ? \
                 WHERE process_execution_id = ? AND sequence_id IN ({list}) \
                   AND consumed_by IS NULL"
            );
            let consumed = "a local-queue message was consumed meanwhile";
            Step::expecting(
                sql,
                params,
                Expect::Rows(sequence_ids.len() as u64, consumed),
            )
        }
        Write::Process(_)
        | Write::State { .. }
        | Write::NewState(_)
        | Write::NewTask { .. }
        | Write::History(_) => unreachable!("PlanRows gathers these"),
    }
}

/// The new states in one statement.
fn insert_states<'s>(states: &[(Uuid, &'s NewStateExecution)]) -> Option<Step<'s>> {
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
    Some(Step::new(sql, params))
}

/// Adds to `steps` the inserts of the new tasks, in as few statements as their ids allow
/// (all in one where the connection `tells_ids` of every row); the leased rows, whose
/// ids are those the steps tell, in the order they tell them. A leased row is leased
/// from the database's now.
fn insert_tasks<'t>(
    kind: SqlKind,
    tasks: &'t [TaskRow<'t>],
    tells_ids: bool,
    steps: &mut Vec<Step<'t>>,
) -> Vec<&'t TaskRow<'t>> {
    let (leased, unleased): (Vec<_>, Vec<_>) = tasks.iter().partition(|t| t.leased.is_some());
    if leased.is_empty() {
        steps.extend(insert_task_rows(kind, &unleased, false));
    } else if tells_ids || leased.len() == 1 {
        // The leased rows first: their ids are the first told.
        let rows: Vec<&TaskRow> = leased.iter().chain(&unleased).copied().collect();
        steps.extend(insert_task_rows(kind, &rows, true));
    } else {
        for row in &leased {
            steps.extend(insert_task_rows(kind, &[row], true));
        }
        steps.extend(insert_task_rows(kind, &unleased, false));
    }
    leased
}

/// `tasks` in one statement; with `numbered`, one that tells their ids.
fn insert_task_rows<'t>(
    kind: SqlKind,
    tasks: &[&'t TaskRow<'t>],
    numbered: bool,
) -> Option<Step<'t>> {
    if tasks.is_empty() {
        return None;
    }
    let mut params = Vec::with_capacity(tasks.len() * 13);
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
            Param::JsonRef(row.info.as_ref()),
            i32::from(row.priority).into(),
        ]);
        let (key, weight) = crate::columns::fairness_columns(row.fairness.as_ref());
        params.extend([Param::from(key), weight.into()]);
    }
    let lease_ends = kind.pick(
        "clock_timestamp() + CAST(? AS BIGINT) * interval '1 microsecond'",
        "UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND",
    );
    let rows =
        vec![format!("(?, ?, ?, ?, ?, ?, ?, {lease_ends}, ?, ?, ?, ?, ?)"); tasks.len()].join(", ");
    let sql = format!(
        "INSERT INTO xdb_sys_tasks (task_type, fire_at, process_execution_id, state_id, \
           state_execution_number, timer_index, lease_owner, lease_expires_at, \
           first_attempt_at, info, priority, fairness_key, fairness_weight) VALUES {rows}"
    );
    let expect = if numbered {
        Expect::Ids(tasks.len())
    } else {
        Expect::Anything
    };
    Some(Step::expecting(sql, params, expect))
}

/// The continuation a leased task row became, as its claim would read it.
fn leased_task(row: &TaskRow, id: i64) -> Task {
    Task {
        id,
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
fn insert_history<'e>(entries: &[(Uuid, &'e HistoryEntry, DateTime<Utc>)]) -> Option<Step<'e>> {
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
    Some(Step::new(sql, params))
}
