//! Writes a [`TransitionPlan`] inside the caller's transaction.

use chrono::{DateTime, Utc};
use deadpool_postgres::Transaction;
use serde_json::Value;
use uuid::Uuid;
use xdb_engine::{ProcessExecution, StateExecutionStatus, TransitionPlan};

use super::global_attributes;
use super::notifications::{CHANNEL_PROCESS_CLOSED, CHANNEL_TASKS};
use super::rows::{task_from_row, to_json, TASK_COLUMNS};
use crate::continuation::{continuation_index, LeaseTo};
use crate::{trace_context, Applied, StoreError};

/// Which notifications a transaction sends besides "process closed".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Announce {
    /// A client's request created tasks: wake every async-service instance.
    NewTasks,
    /// The async service wakes itself for the tasks it creates (see `Applied`), so its
    /// transactions skip the NOTIFY and the commit-time serialization it costs.
    ClosuresOnly,
}

/// Applies `plan` for `process`. A state row whose version moved meanwhile makes the
/// whole transaction fail with [`StoreError::Stale`]. With `lease_to`, the plan's
/// continuation (see [`crate::continuation`]) is inserted already leased and returned.
pub(crate) async fn apply_plan(
    tx: &Transaction<'_>,
    process: &ProcessExecution,
    plan: &TransitionPlan,
    now: DateTime<Utc>,
    announce: Announce,
    lease_to: Option<LeaseTo<'_>>,
) -> Result<Applied, StoreError> {
    let id = process.id;
    if let Some(update) = &plan.process {
        let statement = tx
            .prepare_cached(
                "UPDATE xdb_sys_process_executions SET \
                   status = COALESCE($2, status), \
                   close_time = COALESCE($3, close_time), \
                   running_state_executions = COALESCE($4, running_state_executions), \
                   graceful_completion = COALESCE($5, graceful_completion), \
                   state_execution_sequences = COALESCE($6, state_execution_sequences), \
                   result = COALESCE($7, result), \
                   failure = COALESCE($8, failure) \
                 WHERE id = $1",
            )
            .await?;
        tx.execute(
            &statement,
            &[
                &id,
                &update.status.map(|s| s.as_str()),
                &update.close_time,
                &update.running_state_executions,
                &update.graceful_completion.as_ref().map(to_json),
                &update.state_execution_sequences.as_ref().map(to_json),
                &update.result.as_ref().map(to_json),
                &update.failure.as_ref().map(to_json),
            ],
        )
        .await?;
    }

    if !plan.state_updates.is_empty() {
        let statement = tx
            .prepare_cached(
                "UPDATE xdb_sys_async_state_executions SET status = $4, version = version + 1, \
                   command_request = $5, command_results = $6, \
                   last_failure = COALESCE($7, last_failure) \
                 WHERE process_execution_id = $1 AND state_id = $2 \
                   AND state_execution_number = $3 AND version = $8",
            )
            .await?;
        for update in &plan.state_updates {
            let changed = tx
                .execute(
                    &statement,
                    &[
                        &id,
                        &update.id.state_id,
                        &update.id.number,
                        &update.status.as_str(),
                        &update.command_request.as_ref().map(to_json),
                        &update.command_progress.as_ref().map(to_json),
                        &update.last_failure,
                        &update.expected_version,
                    ],
                )
                .await?;
            if changed != 1 {
                return Err(StoreError::Stale(format!(
                    "state execution {} changed meanwhile",
                    update.id
                )));
            }
        }
    }

    if plan.close_execution {
        let abort = tx
            .prepare_cached(
                "UPDATE xdb_sys_async_state_executions SET status = $2, version = version + 1 \
                 WHERE process_execution_id = $1 AND status IN ($3, $4, $5)",
            )
            .await?;
        tx.execute(
            &abort,
            &[
                &id,
                &StateExecutionStatus::Aborted.as_str(),
                &StateExecutionStatus::WaitUntilRunning.as_str(),
                &StateExecutionStatus::WaitingCommands.as_str(),
                &StateExecutionStatus::ExecuteRunning.as_str(),
            ],
        )
        .await?;
        let delete = tx
            .prepare_cached("DELETE FROM xdb_sys_tasks WHERE process_execution_id = $1")
            .await?;
        tx.execute(&delete, &[&id]).await?;
    }

    if !plan.new_states.is_empty() {
        let statement = tx
            .prepare_cached(
                "INSERT INTO xdb_sys_async_state_executions \
                   (process_execution_id, state_id, state_execution_number, status, input, config) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .await?;
        for state in &plan.new_states {
            tx.execute(
                &statement,
                &[
                    &id,
                    &state.id.state_id,
                    &state.id.number,
                    &state.status.as_str(),
                    &state.input.as_ref().map(to_json),
                    &to_json(&state.config),
                ],
            )
            .await?;
        }
    }

    for state in &plan.delete_timers_of {
        let statement = tx
            .prepare_cached(
                "DELETE FROM xdb_sys_tasks WHERE process_execution_id = $1 AND state_id = $2 \
                   AND state_execution_number = $3 AND task_type = 'TIMER'",
            )
            .await?;
        tx.execute(&statement, &[&id, &state.state_id, &state.number])
            .await?;
    }

    let info = trace_context::task_info().as_ref().map(to_json);
    let leased = lease_to.and_then(|to| Some((to, continuation_index(plan, now)?)));
    let mut continuation = None;
    if let Some((to, index)) = leased {
        let task = &plan.new_tasks[index];
        let statement = tx
            .prepare_cached(&format!(
                "INSERT INTO xdb_sys_tasks (task_type, fire_at, process_execution_id, state_id, \
                   state_execution_number, timer_index, lease_owner, lease_expires_at, \
                   first_attempt_at, info) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, \
                   clock_timestamp() + make_interval(secs => $8), clock_timestamp(), $9) \
                 RETURNING {TASK_COLUMNS}"
            ))
            .await?;
        let row = tx
            .query_one(
                &statement,
                &[
                    &task.task_type.as_str(),
                    &task.fire_at,
                    &id,
                    &task.state.as_ref().map(|s| s.state_id.as_str()),
                    &task.state.as_ref().map(|s| s.number),
                    &task.timer_index,
                    &to.owner,
                    &to.lease.as_secs_f64(),
                    &info,
                ],
            )
            .await?;
        continuation = Some(task_from_row(&row)?);
    }
    if plan.new_tasks.len() > usize::from(continuation.is_some()) {
        let statement = tx
            .prepare_cached(
                "INSERT INTO xdb_sys_tasks (task_type, fire_at, process_execution_id, state_id, \
                   state_execution_number, timer_index, info) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .await?;
        let others = plan
            .new_tasks
            .iter()
            .enumerate()
            .filter(|(index, _)| leased.map(|(_, leased)| leased) != Some(*index));
        for (_, task) in others {
            tx.execute(
                &statement,
                &[
                    &task.task_type.as_str(),
                    &task.fire_at,
                    &id,
                    &task.state.as_ref().map(|s| s.state_id.as_str()),
                    &task.state.as_ref().map(|s| s.number),
                    &task.timer_index,
                    &info,
                ],
            )
            .await?;
        }
    }

    if !plan.consume_messages.is_empty() {
        let statement = tx
            .prepare_cached(
                "UPDATE xdb_sys_local_queue_messages SET consumed_by = $3 \
                 WHERE process_execution_id = $1 AND sequence_id = ANY($2) AND consumed_by IS NULL",
            )
            .await?;
        for consumption in &plan.consume_messages {
            let consumed_by = consumption.consumed_by.to_string();
            let changed = tx
                .execute(&statement, &[&id, &consumption.sequence_ids, &consumed_by])
                .await?;
            if changed as usize != consumption.sequence_ids.len() {
                return Err(StoreError::Stale(
                    "a local-queue message was consumed meanwhile".into(),
                ));
            }
        }
    }

    write_attributes(tx, process, &plan.attribute_writes).await?;
    write_history(tx, id, plan, now).await?;

    let applied = Applied {
        created_tasks: plan.new_tasks.len() > usize::from(continuation.is_some()),
        closed_process: plan.closes_process(),
        continuation,
    };
    if announce == Announce::NewTasks && plan.has_tasks() {
        notify(tx, CHANNEL_TASKS, "").await?;
    }
    if applied.closed_process {
        notify(tx, CHANNEL_PROCESS_CLOSED, &id.to_string()).await?;
    }
    Ok(applied)
}

pub(crate) async fn write_attributes(
    tx: &Transaction<'_>,
    process: &ProcessExecution,
    writes: &xdb_protocol::AttributeWrites,
) -> Result<(), StoreError> {
    if !writes.global_attributes.is_empty() {
        let Some(config) = &process.global_attribute_config else {
            return Err(StoreError::Decide(
                xdb_engine::decide::DecideError::InvalidWorkerResponse(
                    "global attributes written, but the process has no global attribute table"
                        .into(),
                ),
            ));
        };
        global_attributes::update(tx, config, &writes.global_attributes).await?;
    }
    if !writes.local_attributes.is_empty() {
        let statement = tx
            .prepare_cached(
                "INSERT INTO xdb_sys_local_attributes (process_execution_id, key, value) \
                 VALUES ($1, $2, $3) ON CONFLICT (process_execution_id, key) \
                 DO UPDATE SET value = EXCLUDED.value",
            )
            .await?;
        for attribute in &writes.local_attributes {
            xdb_engine::validation::check_id("localAttributes.key", &attribute.key)
                .map_err(|e| StoreError::Decide(e.into()))?;
            tx.execute(
                &statement,
                &[&process.id, &attribute.key, &to_json(&attribute.value)],
            )
            .await?;
        }
    }
    Ok(())
}

async fn write_history(
    tx: &Transaction<'_>,
    id: Uuid,
    plan: &TransitionPlan,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    if plan.history.is_empty() {
        return Ok(());
    }
    let types: Vec<&str> = plan.history.iter().map(|h| h.event_type).collect();
    let details: Vec<Value> = plan.history.iter().map(|h| h.details.clone()).collect();
    // One statement for all of a transition's events keeps history off the critical path.
    let statement = tx
        .prepare_cached(
            "INSERT INTO xdb_sys_history_events (process_execution_id, event_time, event_type, details) \
             SELECT $1, $2, t, d FROM unnest($3::varchar[], $4::jsonb[]) AS e(t, d)",
        )
        .await?;
    tx.execute(&statement, &[&id, &now, &types, &details])
        .await?;
    Ok(())
}

pub(crate) async fn notify(
    tx: &Transaction<'_>,
    channel: &str,
    payload: &str,
) -> Result<(), StoreError> {
    let statement = tx.prepare_cached("SELECT pg_notify($1, $2)").await?;
    tx.execute(&statement, &[&channel, &payload]).await?;
    Ok(())
}
