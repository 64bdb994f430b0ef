//! A worker call failed: schedule the retry, or apply the state's failure recovery.

use xdb_engine::decide::{self, AttemptFailure, FailureOutcome, StateApi};
use xdb_engine::{Task, TransitionPlan};

use crate::tables::{
    Announce, Dialect, Finish, Lane, OperatorRows, ParkReason, PlanWriter, ProcessRows, StateRows,
    TaskRows, Transaction,
};
use crate::{Applied, Retry, StateCall, StoreError};

pub(crate) async fn state_api_failed<D: Dialect>(
    store: &D,
    task: &Task,
    owner: &str,
    call: &StateCall,
    api: StateApi,
    failure: &AttemptFailure,
    retry: Retry,
) -> Result<Applied, StoreError> {
    let error = failure.error.as_str();
    let mut tx = store.begin(Lane::Main).await?;
    let process = tx.lock_process(call.process.id).await?;
    let state = tx
        .lock_state(process.id, &call.state.id)
        .await?
        .filter(|s| s.version == call.state.version)
        .ok_or_else(|| StoreError::Stale(format!("state {} changed meanwhile", call.state.id)))?;
    let now = store.database_clock().now();
    let first_attempt_at = task.first_attempt_at.unwrap_or(now);
    let attempt = task.attempt.max(1) as u32;
    let outcome = match retry {
        Retry::ByPolicy => decide::state_api_failed(
            &process,
            &state,
            api,
            attempt,
            first_attempt_at,
            failure,
            now,
        ),
        Retry::Never => FailureOutcome::GiveUp(Box::new(decide::state_api_given_up(
            &process, &state, api, attempt, error, now,
        ))),
    };
    let lease_to = store.lease_to(owner);
    let applied = match outcome {
        FailureOutcome::Retry { at, history } => {
            tx.retry_task(task, owner, at).await?;
            let plan = TransitionPlan {
                history: vec![history],
                ..Default::default()
            };
            tx.apply_plan(
                &process,
                &plan,
                now,
                Announce::ClosuresOnly,
                lease_to,
                Finish::Later,
            )
            .await?;
            Applied {
                created_tasks: true,
                ..Applied::default()
            }
        }
        FailureOutcome::Park { note, history } => {
            // As the next attempt, so that retry-now runs attempt 2; set aside at once,
            // in the same transaction as its history.
            tx.retry_task(task, owner, now).await?;
            if !tx
                .park(task.id, None, ParkReason::NonRetryable, Some(&note), now)
                .await?
            {
                return Err(StoreError::Stale(format!(
                    "task {} is no longer ours",
                    task.id
                )));
            }
            let plan = TransitionPlan {
                history,
                ..Default::default()
            };
            tx.apply_plan(
                &process,
                &plan,
                now,
                Announce::ClosuresOnly,
                lease_to,
                Finish::Later,
            )
            .await?;
            Applied::default()
        }
        FailureOutcome::GiveUp(plan) => {
            tx.take_task(task, owner).await?;
            let (applied, _) = tx
                .apply_plan(
                    &process,
                    &plan,
                    now,
                    Announce::ClosuresOnly,
                    lease_to,
                    Finish::Later,
                )
                .await?;
            applied
        }
    };
    tx.commit().await?;
    Ok(applied)
}
