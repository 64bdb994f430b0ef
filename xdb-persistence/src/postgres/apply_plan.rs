//! Writes a [`TransitionPlan`] inside the caller's transaction.

use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;
use serde_json::Value;
use uuid::Uuid;
use xdb_engine::{HistoryEntry, ProcessExecution, StateExecutionStatus, TransitionPlan};
use xdb_protocol::ProcessExecutionWaitForCompletionResponse;

use super::notifications::{closed_payload, CHANNEL_PROCESS_CLOSED, CHANNEL_TASKS};
use super::pipeline::{param, Answer, Answers, Pipeline};
use super::rows::{task_at, to_json, TASK_COLUMNS};
use crate::continuation::LeaseTo;
pub(crate) use crate::plan_writes::commits_with_writes;
use crate::plan_writes::{closed_outcome, Write};
pub(crate) use crate::tables::{Announce, Finish};
use crate::{trace_context, Applied, StoreError};

/// `Transaction::apply_plan` with the caller's `lead` writes in the same statement,
/// ending the transaction as `finish` asks where the plan allows it; returns whether it
/// committed. The plan's attribute writes are left to the caller, to follow
/// (`plan_rows::write_attributes`): a plan with any never commits here.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn apply_plan_then(
    tx: &impl GenericClient,
    lead: Pipeline,
    process: &ProcessExecution,
    plan: &TransitionPlan,
    now: DateTime<Utc>,
    announce: Announce,
    lease_to: Option<LeaseTo<'_>>,
    finish: Finish,
) -> Result<(Applied, bool), StoreError> {
    let commit = finish == Finish::WithWrites && commits_with_writes(plan);
    let (writes, reading) = plan_writes(lead, process, plan, now, announce, lease_to);
    let answers = writes.run(tx, commit).await?;
    Ok((reading.applied(&answers)?, commit))
}

/// How to read what a plan's writes answered (see [`plan_writes`]).
pub(crate) struct WriteAnswers {
    continuation: bool,
    new_tasks: usize,
    closed_outcome: Option<ProcessExecutionWaitForCompletionResponse>,
}

impl WriteAnswers {
    /// What the writes did. The rows they had to find, the statement asserted itself
    /// (a state update, a message consumption that finds other rows fails it).
    pub fn applied(&self, answers: &Answers) -> Result<Applied, StoreError> {
        let continuation = match (self.continuation, answers.row()) {
            (true, Some((row, at))) => Some(task_at(row, at)?),
            (true, None) => {
                return Err(StoreError::Database(
                    "the continuation was not inserted".into(),
                ))
            }
            (false, _) => None,
        };
        Ok(Applied {
            created_tasks: self.new_tasks > usize::from(continuation.is_some()),
            closed_process: self.closed_outcome.is_some(),
            closed_outcome: self.closed_outcome.clone().map(Box::new),
            continuation,
            continuation_call: None,
        })
    }
}

/// `plan`'s writes (see [`crate::plan_writes`]), after `lead`'s, as one pipeline (the
/// attribute writes excepted: `plan_rows::write_attributes` follows it), and how to
/// read their answers.
pub(crate) fn plan_writes(
    lead: Pipeline,
    process: &ProcessExecution,
    plan: &TransitionPlan,
    now: DateTime<Utc>,
    announce: Announce,
    lease_to: Option<LeaseTo<'_>>,
) -> (Pipeline, WriteAnswers) {
    let id = process.id;
    let priority = i32::from(process.priority);
    let fairness = |task_type| {
        crate::columns::fairness_columns(crate::columns::task_fairness(
            process.fairness.as_ref(),
            task_type,
        ))
    };
    let mut writes = lead;
    // A write to an existing row waits for the lead's lock, when it takes one.
    let after_first = writes.after_first();
    let info = trace_context::task_info().as_ref().map(to_json);
    let mut continuation = false;
    for write in crate::plan_writes::plan_writes(plan, now, lease_to) {
        match write {
            Write::Process(update) => writes.push(
                format!(
                    "UPDATE xdb_sys_process_executions SET \
                       status = COALESCE($2, status), \
                       close_time = COALESCE($3, close_time), \
                       running_state_executions = COALESCE($4, running_state_executions), \
                       graceful_completion = COALESCE($5, graceful_completion), \
                       state_execution_sequences = COALESCE($6, state_execution_sequences), \
                       result = COALESCE($7, result), \
                       failure = COALESCE($8, failure) \
                     WHERE id = $1{after_first}"
                ),
                vec![
                    param(id),
                    param(update.status.map(|s| s.as_str())),
                    param(update.close_time),
                    param(update.running_state_executions),
                    param(update.graceful_completion.as_ref().map(to_json)),
                    param(update.state_execution_sequences.as_ref().map(to_json)),
                    param(update.result.as_ref().map(to_json)),
                    param(update.failure.as_ref().map(to_json)),
                ],
                Answer::Nothing,
            ),
            // A version that moved meanwhile makes `version` NULL, which its NOT NULL
            // constraint refuses: the transaction fails (as Stale, see `error`) even when
            // its COMMIT was sent along (Finish::WithWrites).
            Write::State { update, status } => writes.push(
                format!(
                    "UPDATE xdb_sys_async_state_executions SET status = $4, \
                       version = CASE WHEN version = $8 THEN version + 1 END, \
                       command_request = $5, command_results = $6, \
                       last_failure = COALESCE($7, last_failure) \
                     WHERE process_execution_id = $1 AND state_id = $2 \
                       AND state_execution_number = $3{after_first} \
                     RETURNING 1"
                ),
                vec![
                    param(id),
                    param(update.id.state_id.clone()),
                    param(update.id.number),
                    param(status.as_str()),
                    param(update.command_request.as_ref().map(to_json)),
                    param(update.command_progress.as_ref().map(to_json)),
                    param(update.last_failure.clone()),
                    param(update.expected_version),
                ],
                Answer::Exactly(1),
            ),
            Write::AbortActiveStates { except } => {
                let (ids, numbers): (Vec<String>, Vec<i32>) = except
                    .iter()
                    .map(|state| (state.state_id.clone(), state.number))
                    .unzip();
                writes.push(
                    format!(
                        "UPDATE xdb_sys_async_state_executions SET status = $2, \
                           version = version + 1 \
                         WHERE process_execution_id = $1 AND status IN ($3, $4, $5) \
                           AND (state_id, state_execution_number) NOT IN \
                             (SELECT * FROM unnest($6::varchar[], $7::int[])){after_first}"
                    ),
                    vec![
                        param(id),
                        param(StateExecutionStatus::Aborted.as_str()),
                        param(StateExecutionStatus::WaitUntilRunning.as_str()),
                        param(StateExecutionStatus::WaitingCommands.as_str()),
                        param(StateExecutionStatus::ExecuteRunning.as_str()),
                        param(ids),
                        param(numbers),
                    ],
                    Answer::Nothing,
                );
            }
            Write::DeleteTasks => writes.push(
                format!("DELETE FROM xdb_sys_tasks WHERE process_execution_id = $1{after_first}"),
                vec![param(id)],
                Answer::Nothing,
            ),
            Write::DeleteParkedTasks => writes.push(
                format!(
                    "DELETE FROM xdb_sys_parked_tasks \
                     WHERE process_execution_id = $1{after_first}"
                ),
                vec![param(id)],
                Answer::Nothing,
            ),
            Write::NewState(state) => writes.push(
                "INSERT INTO xdb_sys_async_state_executions \
                   (process_execution_id, state_id, state_execution_number, status, input, \
                    config) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
                vec![
                    param(id),
                    param(state.id.state_id.clone()),
                    param(state.id.number),
                    param(state.status.as_str()),
                    param(state.input.as_ref().map(to_json)),
                    param(to_json(&state.config)),
                ],
                Answer::Nothing,
            ),
            Write::DeleteTimers(state) => writes.push(
                format!(
                    "DELETE FROM xdb_sys_tasks WHERE process_execution_id = $1 \
                       AND state_id = $2 AND state_execution_number = $3 \
                       AND task_type = 'TIMER'{after_first}"
                ),
                vec![
                    param(id),
                    param(state.state_id.clone()),
                    param(state.number),
                ],
                Answer::Nothing,
            ),
            Write::NewTask {
                task,
                leased: Some(to),
            } => {
                continuation = true;
                let (fairness_key, fairness_weight) = fairness(task.task_type);
                writes.push(
                    format!(
                        "INSERT INTO xdb_sys_tasks (task_type, fire_at, process_execution_id, \
                           state_id, state_execution_number, timer_index, lease_owner, \
                           lease_expires_at, first_attempt_at, info, priority, \
                           fairness_key, fairness_weight) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, \
                           clock_timestamp() + make_interval(secs => $8), clock_timestamp(), \
                           $9, $10, $11, $12) \
                         RETURNING {TASK_COLUMNS}"
                    ),
                    vec![
                        param(task.task_type.as_str()),
                        param(task.fire_at),
                        param(id),
                        param(task.state.as_ref().map(|s| s.state_id.clone())),
                        param(task.state.as_ref().map(|s| s.number)),
                        param(task.timer_index),
                        param(to.owner.to_string()),
                        param(to.lease.as_secs_f64()),
                        param(info.clone()),
                        param(priority),
                        param(fairness_key.to_owned()),
                        param(fairness_weight),
                    ],
                    Answer::Row,
                );
            }
            Write::NewTask { task, leased: None } => {
                let (fairness_key, fairness_weight) = fairness(task.task_type);
                writes.push(
                "INSERT INTO xdb_sys_tasks (task_type, fire_at, process_execution_id, state_id, \
                   state_execution_number, timer_index, info, priority, fairness_key, \
                   fairness_weight) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                vec![
                    param(task.task_type.as_str()),
                    param(task.fire_at),
                    param(id),
                    param(task.state.as_ref().map(|s| s.state_id.clone())),
                    param(task.state.as_ref().map(|s| s.number)),
                    param(task.timer_index),
                    param(info.clone()),
                    param(priority),
                    param(fairness_key.to_owned()),
                    param(fairness_weight),
                ],
                Answer::Nothing,
                )
            }
            Write::Consume(consumption) => writes.push(
                format!(
                    "UPDATE xdb_sys_local_queue_messages SET consumed_by = $3 \
                     WHERE process_execution_id = $1 AND sequence_id = ANY($2) \
                       AND consumed_by IS NULL{after_first} \
                     RETURNING 1"
                ),
                vec![
                    param(id),
                    param(consumption.sequence_ids.clone()),
                    param(consumption.consumed_by.to_string()),
                ],
                Answer::Exactly(consumption.sequence_ids.len() as i64),
            ),
            Write::History(entries) => push_history(&mut writes, id, entries, now),
        }
    }
    let closed_outcome = closed_outcome(process, plan);
    for (channel, payload) in announcements(plan, announce, closed_outcome.as_ref()) {
        writes.push(NOTIFY, vec![param(channel), param(payload)], Answer::Count);
    }
    let reading = WriteAnswers {
        continuation,
        new_tasks: plan.new_tasks.len(),
        closed_outcome,
    };
    (writes, reading)
}

/// Sends a notification: parameters channel, payload.
pub(crate) const NOTIFY: &str = "SELECT pg_notify($1, $2)";

/// The notifications `plan` sends as `announce` asks, as (channel, payload): new tasks,
/// and its close with `closed` (the outcome [`closed_outcome`] gave) when it closes.
pub(crate) fn announcements(
    plan: &TransitionPlan,
    announce: Announce,
    closed: Option<&ProcessExecutionWaitForCompletionResponse>,
) -> impl Iterator<Item = (&'static str, String)> {
    let tasks =
        (announce == Announce::NewTasks && plan.has_tasks()) || announce == Announce::TasksDue;
    let tasks = tasks.then(|| (CHANNEL_TASKS, String::new()));
    let closed = closed.map(|outcome| (CHANNEL_PROCESS_CLOSED, closed_payload(outcome)));
    tasks.into_iter().chain(closed)
}

/// One statement for all of a transition's events keeps history off the critical path.
fn push_history(writes: &mut Pipeline, id: Uuid, entries: &[HistoryEntry], now: DateTime<Utc>) {
    let types: Vec<String> = entries.iter().map(|h| h.event_type.to_string()).collect();
    let details: Vec<Value> = entries.iter().map(|h| h.details.clone()).collect();
    writes.push(
        "INSERT INTO xdb_sys_history_events (process_execution_id, event_time, event_type, details) \
         SELECT $1, $2, t, d FROM unnest($3::varchar[], $4::jsonb[]) AS e(t, d)",
        vec![param(id), param(now), param(types), param(details)],
        Answer::Nothing,
    );
}
