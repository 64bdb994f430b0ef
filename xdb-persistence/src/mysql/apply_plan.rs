//! Writes a [`TransitionPlan`] inside the caller's transaction: each write of
//! [`crate::plan_writes`] as its statement, in order, except the inserts of new states,
//! tasks and history events, which [`PlanRows`] gathers and sends as one multi-row
//! statement each (for one plan, or for every plan of a batch of transitions).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use mysql_async::prelude::Queryable;
use mysql_async::{Transaction, Value};
use uuid::Uuid;
use xdb_engine::{
    HistoryEntry, NewStateExecution, NewTask, ProcessExecution, StateExecutionStatus, Task,
    TransitionPlan,
};

use super::global_attributes;
use super::rows::{in_list, json_text, opt_time_value, time_value, uuid_value};
use super::MySqlStore;
use crate::continuation::LeaseTo;
use crate::plan_writes::{checked_attribute_writes, plan_writes, Write};
use crate::trace_context::TaskInfo;
use crate::{trace_context, Applied, StoreError};

/// Applies `plan` for `process`. A state row whose version moved meanwhile, or a message
/// consumed meanwhile, makes the whole transaction fail with [`StoreError::Stale`]. With
/// `lease_to`, the plan's continuation is inserted already leased and returned.
pub(crate) async fn apply_plan(
    tx: &mut Transaction<'_>,
    store: &MySqlStore,
    process: &ProcessExecution,
    plan: &TransitionPlan,
    now: DateTime<Utc>,
    lease_to: Option<LeaseTo<'_>>,
) -> Result<Applied, StoreError> {
    let mut rows = PlanRows::default();
    rows.write(
        tx,
        process.id,
        plan,
        now,
        lease_to,
        trace_context::task_info(),
    )
    .await?;
    let mut continuations = rows.insert(tx, store.consecutive_insert_ids()).await?;
    write_attributes(tx, store, process, &plan.attribute_writes).await?;
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
    info: Option<TaskInfo>,
}

/// The rows that plans insert, gathered to go out as one statement per table.
#[derive(Default)]
pub(crate) struct PlanRows<'a> {
    states: Vec<(Uuid, &'a NewStateExecution)>,
    tasks: Vec<TaskRow<'a>>,
    history: Vec<(Uuid, &'a HistoryEntry, DateTime<Utc>)>,
}

impl<'a> PlanRows<'a> {
    /// Sends the writes of `plan` (for execution `id`, decided at `now`) that change
    /// existing rows, and keeps its new rows for [`PlanRows::insert`]; `info` goes with
    /// its tasks.
    pub async fn write(
        &mut self,
        tx: &mut Transaction<'_>,
        id: Uuid,
        plan: &'a TransitionPlan,
        now: DateTime<Utc>,
        lease_to: Option<LeaseTo<'a>>,
        info: Option<TaskInfo>,
    ) -> Result<(), StoreError> {
        for write in plan_writes(plan, now, lease_to) {
            match write {
                Write::NewState(state) => self.states.push((id, state)),
                Write::NewTask { task, leased } => self.tasks.push(TaskRow {
                    process: id,
                    now,
                    task,
                    leased,
                    info: info.clone(),
                }),
                Write::History(entries) => {
                    self.history.extend(entries.iter().map(|e| (id, e, now)))
                }
                write => update_rows(tx, id, write).await?,
            }
        }
        Ok(())
    }

    /// Inserts the rows gathered; returns the leased continuations by execution. With
    /// `consecutive_ids` (the server numbers a multi-row insert's rows one after the
    /// other), every task goes in one statement; otherwise each leased one alone, to
    /// read its id.
    pub async fn insert(
        self,
        tx: &mut Transaction<'_>,
        consecutive_ids: bool,
    ) -> Result<HashMap<Uuid, Task>, StoreError> {
        insert_states(tx, &self.states).await?;
        let mut continuations = HashMap::new();
        let (leased, unleased): (Vec<_>, Vec<_>) =
            self.tasks.iter().partition(|row| row.leased.is_some());
        if consecutive_ids || leased.len() <= 1 {
            let rows: Vec<&TaskRow> = leased.iter().chain(&unleased).copied().collect();
            if let Some(first) = insert_tasks(tx, &rows).await? {
                for (offset, row) in leased.iter().enumerate() {
                    continuations.insert(row.process, leased_task(row, first + offset as u64));
                }
            }
        } else {
            for row in &leased {
                let id = insert_tasks(tx, &[row]).await?;
                let id = id
                    .ok_or_else(|| StoreError::Database("the task insert returned no id".into()))?;
                continuations.insert(row.process, leased_task(row, id));
            }
            insert_tasks(tx, &unleased).await?;
        }
        insert_history(tx, &self.history).await?;
        Ok(continuations)
    }
}

/// The continuation a leased task row became, as its claim would read it.
fn leased_task(row: &TaskRow, id: u64) -> Task {
    Task {
        id: id as i64,
        task_type: row.task.task_type,
        fire_at: row.task.fire_at,
        process_execution_id: row.process,
        state: row.task.state.clone(),
        timer_index: row.task.timer_index,
        attempt: 1,
        first_attempt_at: Some(row.now),
        traceparent: row.info.as_ref().and_then(|i| i.traceparent.clone()),
    }
}

/// One write that changes existing rows of execution `id`.
async fn update_rows(
    tx: &mut Transaction<'_>,
    id: Uuid,
    write: Write<'_>,
) -> Result<(), StoreError> {
    match write {
        Write::Process(update) => {
            tx.exec_drop(
                "UPDATE xdb_sys_process_executions SET \
                   status = COALESCE(?, status), \
                   close_time = COALESCE(?, close_time), \
                   running_state_executions = COALESCE(?, running_state_executions), \
                   graceful_completion = COALESCE(?, graceful_completion), \
                   state_execution_sequences = COALESCE(?, state_execution_sequences), \
                   result = COALESCE(?, result), \
                   failure = COALESCE(?, failure) \
                 WHERE id = ?",
                vec![
                    Value::from(update.status.map(|s| s.as_str())),
                    opt_time_value(update.close_time),
                    Value::from(update.running_state_executions),
                    Value::from(update.graceful_completion.as_ref().map(json_text)),
                    Value::from(update.state_execution_sequences.as_ref().map(json_text)),
                    Value::from(update.result.as_ref().map(json_text)),
                    Value::from(update.failure.as_ref().map(json_text)),
                    uuid_value(id),
                ],
            )
            .await?;
        }
        Write::State { update, status } => {
            tx.exec_drop(
                "UPDATE xdb_sys_async_state_executions SET status = ?, version = version + 1, \
                   command_request = ?, command_results = ?, \
                   last_failure = COALESCE(?, last_failure) \
                 WHERE process_execution_id = ? AND state_id = ? \
                   AND state_execution_number = ? AND version = ?",
                vec![
                    Value::from(status.as_str()),
                    Value::from(update.command_request.as_ref().map(json_text)),
                    Value::from(update.command_progress.as_ref().map(json_text)),
                    Value::from(update.last_failure.as_ref().map(json_text)),
                    uuid_value(id),
                    Value::from(update.id.state_id.as_str()),
                    Value::from(update.id.number),
                    Value::from(update.expected_version),
                ],
            )
            .await?;
            if tx.affected_rows() != 1 {
                return Err(StoreError::Stale(format!(
                    "state execution {} changed meanwhile",
                    update.id
                )));
            }
        }
        Write::AbortActiveStates { except } => {
            let mut params = vec![
                Value::from(StateExecutionStatus::Aborted.as_str()),
                uuid_value(id),
                Value::from(StateExecutionStatus::WaitUntilRunning.as_str()),
                Value::from(StateExecutionStatus::WaitingCommands.as_str()),
                Value::from(StateExecutionStatus::ExecuteRunning.as_str()),
            ];
            // The states updated above are aborted by their own update already.
            let mut excluded = String::new();
            for state in except {
                excluded.push_str(" AND NOT (state_id = ? AND state_execution_number = ?)");
                params.extend([
                    Value::from(state.state_id.as_str()),
                    Value::from(state.number),
                ]);
            }
            tx.exec_drop(
                format!(
                    "UPDATE xdb_sys_async_state_executions SET status = ?, \
                       version = version + 1 \
                     WHERE process_execution_id = ? AND status IN (?, ?, ?){excluded}"
                ),
                params,
            )
            .await?;
        }
        Write::DeleteTasks => {
            tx.exec_drop(
                "DELETE FROM xdb_sys_tasks WHERE process_execution_id = ?",
                (id.to_string(),),
            )
            .await?;
        }
        Write::DeleteTimers(state) => {
            tx.exec_drop(
                "DELETE FROM xdb_sys_tasks WHERE process_execution_id = ? AND state_id = ? \
                   AND state_execution_number = ? AND task_type = 'TIMER'",
                (id.to_string(), state.state_id.as_str(), state.number),
            )
            .await?;
        }
        Write::Consume(consumption) => {
            let mut params = vec![
                Value::from(consumption.consumed_by.to_string()),
                uuid_value(id),
            ];
            params.extend(consumption.sequence_ids.iter().map(|s| Value::from(*s)));
            let placeholders = in_list(&mut params, consumption.sequence_ids.len());
            tx.exec_drop(
                format!(
                    "UPDATE xdb_sys_local_queue_messages SET consumed_by = ? \
                     WHERE process_execution_id = ? AND sequence_id IN ({placeholders}) \
                     AND consumed_by IS NULL"
                ),
                params,
            )
            .await?;
            if tx.affected_rows() as usize != consumption.sequence_ids.len() {
                return Err(StoreError::Stale(
                    "a local-queue message was consumed meanwhile".into(),
                ));
            }
        }
        Write::NewState(_) | Write::NewTask { .. } | Write::History(_) => {
            unreachable!("PlanRows keeps new rows for insert")
        }
    }
    Ok(())
}

async fn write_attributes(
    tx: &mut Transaction<'_>,
    store: &MySqlStore,
    process: &ProcessExecution,
    writes: &xdb_protocol::AttributeWrites,
) -> Result<(), StoreError> {
    if let Some(config) = checked_attribute_writes(process, writes)? {
        global_attributes::update(tx, store, config, &writes.global_attributes).await?;
    }
    for attribute in &writes.local_attributes {
        tx.exec_drop(
            "INSERT INTO xdb_sys_local_attributes (process_execution_id, `key`, value) \
             VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE value = VALUES(value)",
            (
                process.id.to_string(),
                attribute.key.as_str(),
                json_text(&attribute.value),
            ),
        )
        .await?;
    }
    Ok(())
}

/// The states in one statement.
async fn insert_states(
    tx: &mut Transaction<'_>,
    states: &[(Uuid, &NewStateExecution)],
) -> Result<(), StoreError> {
    if states.is_empty() {
        return Ok(());
    }
    let mut params = Vec::with_capacity(states.len() * 6);
    for (id, state) in states {
        params.extend([
            uuid_value(*id),
            Value::from(state.id.state_id.as_str()),
            Value::from(state.id.number),
            Value::from(state.status.as_str()),
            Value::from(state.input.as_ref().map(json_text)),
            Value::from(json_text(&state.config)),
        ]);
    }
    let rows = vec!["(?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(6))"; states.len()].join(", ");
    tx.exec_drop(
        format!(
            "INSERT INTO xdb_sys_async_state_executions \
               (process_execution_id, state_id, state_execution_number, status, input, \
                config, created_at) VALUES {rows}"
        ),
        params,
    )
    .await?;
    Ok(())
}

/// The tasks in one statement, in order; the id of the first, if any was inserted.
/// A leased row is leased from the database's now, an unleased one has no lease.
async fn insert_tasks(
    tx: &mut Transaction<'_>,
    tasks: &[&TaskRow<'_>],
) -> Result<Option<u64>, StoreError> {
    if tasks.is_empty() {
        return Ok(None);
    }
    let mut params = Vec::with_capacity(tasks.len() * 10);
    for row in tasks {
        let task = row.task;
        params.extend([
            Value::from(task.task_type.as_str()),
            time_value(task.fire_at),
            uuid_value(row.process),
            Value::from(task.state.as_ref().map(|s| s.state_id.as_str())),
            Value::from(task.state.as_ref().map(|s| s.number)),
            Value::from(task.timer_index),
            Value::from(row.leased.map(|to| to.owner)),
            Value::from(row.leased.map(|to| to.lease.as_micros() as i64)),
            row.leased.map_or(Value::NULL, |_| time_value(row.now)),
            Value::from(row.info.as_ref().map(json_text)),
        ]);
    }
    let rows =
        vec!["(?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, ?, ?)"; tasks.len()]
            .join(", ");
    tx.exec_drop(
        format!(
            "INSERT INTO xdb_sys_tasks (task_type, fire_at, process_execution_id, state_id, \
               state_execution_number, timer_index, lease_owner, lease_expires_at, \
               first_attempt_at, info) VALUES {rows}"
        ),
        params,
    )
    .await?;
    let first = tx
        .last_insert_id()
        .ok_or_else(|| StoreError::Database("the task insert returned no id".into()))?;
    Ok(Some(first))
}

/// Every event in one statement keeps history off the critical path.
async fn insert_history(
    tx: &mut Transaction<'_>,
    entries: &[(Uuid, &HistoryEntry, DateTime<Utc>)],
) -> Result<(), StoreError> {
    if entries.is_empty() {
        return Ok(());
    }
    let rows = vec!["(?, ?, ?, ?)"; entries.len()].join(", ");
    let mut params = Vec::with_capacity(entries.len() * 4);
    for (id, entry, now) in entries {
        params.extend([
            uuid_value(*id),
            time_value(*now),
            Value::from(entry.event_type),
            Value::from(entry.details.to_string()),
        ]);
    }
    tx.exec_drop(
        format!(
            "INSERT INTO xdb_sys_history_events \
               (process_execution_id, event_time, event_type, details) VALUES {rows}"
        ),
        params,
    )
    .await?;
    Ok(())
}
