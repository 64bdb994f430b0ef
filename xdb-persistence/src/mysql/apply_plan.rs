//! Writes a [`TransitionPlan`] inside the caller's transaction: each write of
//! [`crate::plan_writes`] as its statement, all of them in one round trip (see
//! `statement_batch`).

use chrono::{DateTime, Utc};
use mysql_async::{Transaction, Value};
use uuid::Uuid;
use xdb_engine::{HistoryEntry, ProcessExecution, StateExecutionStatus, Task, TransitionPlan};

use super::global_attributes;
use super::rows::{in_list, json_text, opt_time_value, time_value, uuid_value};
use super::statement_batch::{Expect, StatementBatch};
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
    let mut batch = StatementBatch::default();
    // The continuation's task and the index of its insert among the batch's writes.
    let mut leased = None;
    for write in plan_writes(plan, now, lease_to) {
        match write {
            Write::Process(update) => {
                batch.push(
                    "UPDATE xdb_sys_process_executions SET \
                       status = COALESCE(?, status), \
                       close_time = COALESCE(?, close_time), \
                       running_state_executions = COALESCE(?, running_state_executions), \
                       graceful_completion = COALESCE(?, graceful_completion), \
                       state_execution_sequences = COALESCE(?, state_execution_sequences), \
                       result = COALESCE(?, result), \
                       failure = COALESCE(?, failure) \
                     WHERE id = ?",
                    &[
                        Value::from(update.status.map(|s| s.as_str())),
                        opt_time_value(update.close_time),
                        Value::from(update.running_state_executions),
                        Value::from(update.graceful_completion.as_ref().map(json_text)),
                        Value::from(update.state_execution_sequences.as_ref().map(json_text)),
                        Value::from(update.result.as_ref().map(json_text)),
                        Value::from(update.failure.as_ref().map(json_text)),
                        uuid_value(id),
                    ],
                    Expect::Nothing,
                );
            }
            Write::State { update, status } => {
                batch.push(
                    "UPDATE xdb_sys_async_state_executions SET status = ?, version = version + 1, \
                       command_request = ?, command_results = ?, \
                       last_failure = COALESCE(?, last_failure) \
                     WHERE process_execution_id = ? AND state_id = ? \
                       AND state_execution_number = ? AND version = ?",
                    &[
                        Value::from(status.as_str()),
                        Value::from(update.command_request.as_ref().map(json_text)),
                        Value::from(update.command_progress.as_ref().map(json_text)),
                        Value::from(update.last_failure.as_ref().map(json_text)),
                        uuid_value(id),
                        Value::from(update.id.state_id.as_str()),
                        Value::from(update.id.number),
                        Value::from(update.expected_version),
                    ],
                    Expect::Rows(1, "a state execution changed meanwhile"),
                );
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
                batch.push(
                    &format!(
                        "UPDATE xdb_sys_async_state_executions SET status = ?, \
                           version = version + 1 \
                         WHERE process_execution_id = ? AND status IN (?, ?, ?){excluded}"
                    ),
                    &params,
                    Expect::Nothing,
                );
            }
            Write::DeleteTasks => batch.push(
                "DELETE FROM xdb_sys_tasks WHERE process_execution_id = ?",
                &[uuid_value(id)],
                Expect::Nothing,
            ),
            Write::NewState(state) => {
                batch.push(
                    "INSERT INTO xdb_sys_async_state_executions \
                       (process_execution_id, state_id, state_execution_number, status, input, \
                        config, created_at) \
                     VALUES (?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(6))",
                    &[
                        uuid_value(id),
                        Value::from(state.id.state_id.as_str()),
                        Value::from(state.id.number),
                        Value::from(state.status.as_str()),
                        Value::from(state.input.as_ref().map(json_text)),
                        Value::from(json_text(&state.config)),
                    ],
                    Expect::Nothing,
                );
            }
            Write::DeleteTimers(state) => batch.push(
                "DELETE FROM xdb_sys_tasks WHERE process_execution_id = ? AND state_id = ? \
                   AND state_execution_number = ? AND task_type = 'TIMER'",
                &[
                    uuid_value(id),
                    Value::from(state.state_id.as_str()),
                    Value::from(state.number),
                ],
                Expect::Nothing,
            ),
            Write::NewTask {
                task,
                leased: Some(to),
            } => {
                leased = Some((task, batch.len()));
                batch.push(
                    "INSERT INTO xdb_sys_tasks (task_type, fire_at, process_execution_id, \
                       state_id, state_execution_number, timer_index, lease_owner, \
                       lease_expires_at, first_attempt_at, info) \
                     VALUES (?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, ?, ?)",
                    &[
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
                    Expect::Nothing,
                );
            }
            Write::NewTask { task, leased: None } => {
                batch.push(
                    "INSERT INTO xdb_sys_tasks (task_type, fire_at, process_execution_id, \
                       state_id, state_execution_number, timer_index, info) \
                     VALUES (?, ?, ?, ?, ?, ?, ?)",
                    &[
                        Value::from(task.task_type.as_str()),
                        time_value(task.fire_at),
                        uuid_value(id),
                        Value::from(task.state.as_ref().map(|s| s.state_id.as_str())),
                        Value::from(task.state.as_ref().map(|s| s.number)),
                        Value::from(task.timer_index),
                        Value::from(info_text.clone()),
                    ],
                    Expect::Nothing,
                );
            }
            Write::Consume(consumption) => {
                let mut params = vec![
                    Value::from(consumption.consumed_by.to_string()),
                    uuid_value(id),
                ];
                params.extend(consumption.sequence_ids.iter().map(|s| Value::from(*s)));
                let placeholders = in_list(&mut params, consumption.sequence_ids.len());
                batch.push(
                    &format!(
                        "UPDATE xdb_sys_local_queue_messages SET consumed_by = ? \
                         WHERE process_execution_id = ? AND sequence_id IN ({placeholders}) \
                         AND consumed_by IS NULL"
                    ),
                    &params,
                    Expect::Rows(
                        consumption.sequence_ids.len() as u64,
                        "a local-queue message was consumed meanwhile",
                    ),
                );
            }
            Write::History(entries) => push_history(&mut batch, id, entries, now),
        }
    }
    let global_table = checked_attribute_writes(process, &plan.attribute_writes)?;
    for attribute in &plan.attribute_writes.local_attributes {
        batch.push(
            "INSERT INTO xdb_sys_local_attributes (process_execution_id, `key`, value) \
             VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE value = VALUES(value)",
            &[
                uuid_value(id),
                Value::from(attribute.key.as_str()),
                Value::from(json_text(&attribute.value)),
            ],
            Expect::Nothing,
        );
    }
    let answers = batch.run(tx).await?;
    if let Some(config) = global_table {
        global_attributes::update(tx, store, config, &plan.attribute_writes.global_attributes)
            .await?;
    }
    let continuation = match leased {
        Some((task, at)) => {
            let task_id = answers[at]
                .last_insert_id
                .ok_or_else(|| StoreError::Database("the task insert returned no id".into()))?;
            Some(Task {
                id: task_id as i64,
                task_type: task.task_type,
                fire_at: task.fire_at,
                process_execution_id: id,
                state: task.state.clone(),
                timer_index: task.timer_index,
                attempt: 1,
                first_attempt_at: Some(now),
                traceparent: info.as_ref().and_then(|i| i.traceparent.clone()),
            })
        }
        None => None,
    };
    Ok(Applied {
        created_tasks: plan.new_tasks.len() > usize::from(continuation.is_some()),
        closed_process: plan.closes_process(),
        continuation,
        continuation_call: None,
    })
}

/// One statement for all of a transition's events keeps history off the critical path.
fn push_history(
    batch: &mut StatementBatch,
    id: Uuid,
    entries: &[HistoryEntry],
    now: DateTime<Utc>,
) {
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
    batch.push(
        &format!(
            "INSERT INTO xdb_sys_history_events \
               (process_execution_id, event_time, event_type, details) VALUES {rows}"
        ),
        &params,
        Expect::Nothing,
    );
}
