//! Writes a [`TransitionPlan`] inside the caller's transaction: each write of
//! [`crate::plan_writes`] as its statement, in order.

use chrono::{DateTime, Utc};
use mysql_async::prelude::Queryable;
use mysql_async::{Transaction, Value};
use uuid::Uuid;
use xdb_engine::{HistoryEntry, ProcessExecution, StateExecutionStatus, Task, TransitionPlan};

use super::global_attributes;
use super::rows::{in_list, json_text, opt_time_value, time_value, uuid_value};
use super::MySqlStore;
use crate::continuation::LeaseTo;
use crate::plan_writes::{checked_attribute_writes, plan_writes, Write};
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
    let id = process.id;
    let info = trace_context::task_info();
    let info_text = info.as_ref().map(json_text);
    let mut continuation = None;
    for write in plan_writes(plan, now, lease_to) {
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
            Write::NewState(state) => {
                tx.exec_drop(
                    "INSERT INTO xdb_sys_async_state_executions \
                       (process_execution_id, state_id, state_execution_number, status, input, \
                        config, created_at) \
                     VALUES (?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(6))",
                    vec![
                        uuid_value(id),
                        Value::from(state.id.state_id.as_str()),
                        Value::from(state.id.number),
                        Value::from(state.status.as_str()),
                        Value::from(state.input.as_ref().map(json_text)),
                        Value::from(json_text(&state.config)),
                    ],
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
            Write::NewTask {
                task,
                leased: Some(to),
            } => {
                tx.exec_drop(
                    "INSERT INTO xdb_sys_tasks (task_type, fire_at, process_execution_id, \
                       state_id, state_execution_number, timer_index, lease_owner, \
                       lease_expires_at, first_attempt_at, info) \
                     VALUES (?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, ?, ?)",
                    vec![
                        Value::from(task.task_type.as_str()),
                        time_value(task.fire_at),
                        uuid_value(id),
                        Value::from(task.state.as_ref().map(|s| s.state_id.as_str())),
                        Value::from(task.state.as_ref().map(|s| s.number)),
                        Value::from(task.timer_index),
                        Value::from(to.owner),
                        Value::from(to.lease.as_micros() as i64),
                        time_value(now),
                        Value::from(info_text.clone()),
                    ],
                )
                .await?;
                let task_id = tx
                    .last_insert_id()
                    .ok_or_else(|| StoreError::Database("the task insert returned no id".into()))?;
                continuation = Some(Task {
                    id: task_id as i64,
                    task_type: task.task_type,
                    fire_at: task.fire_at,
                    process_execution_id: id,
                    state: task.state.clone(),
                    timer_index: task.timer_index,
                    attempt: 1,
                    first_attempt_at: Some(now),
                    traceparent: info.as_ref().and_then(|i| i.traceparent.clone()),
                });
            }
            Write::NewTask { task, leased: None } => {
                tx.exec_drop(
                    "INSERT INTO xdb_sys_tasks (task_type, fire_at, process_execution_id, \
                       state_id, state_execution_number, timer_index, info) \
                     VALUES (?, ?, ?, ?, ?, ?, ?)",
                    vec![
                        Value::from(task.task_type.as_str()),
                        time_value(task.fire_at),
                        uuid_value(id),
                        Value::from(task.state.as_ref().map(|s| s.state_id.as_str())),
                        Value::from(task.state.as_ref().map(|s| s.number)),
                        Value::from(task.timer_index),
                        Value::from(info_text.clone()),
                    ],
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
            Write::History(entries) => write_history(tx, id, entries, now).await?,
        }
    }
    write_attributes(tx, store, process, &plan.attribute_writes).await?;
    Ok(Applied {
        created_tasks: plan.new_tasks.len() > usize::from(continuation.is_some()),
        closed_process: plan.closes_process(),
        continuation,
        continuation_call: None,
    })
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

/// One statement for all of a transition's events keeps history off the critical path.
async fn write_history(
    tx: &mut Transaction<'_>,
    id: Uuid,
    entries: &[HistoryEntry],
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let rows = vec!["(?, ?, ?, ?)"; entries.len()].join(", ");
    let mut params = Vec::with_capacity(entries.len() * 4);
    for entry in entries {
        params.extend([
            uuid_value(id),
            time_value(now),
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
