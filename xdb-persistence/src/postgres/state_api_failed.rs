//! A worker call failed: schedule the retry, or apply the state's failure recovery.

use chrono::Utc;
use xdb_engine::decide::{self, FailureOutcome, StateApi};
use xdb_engine::{Task, TransitionPlan};

use super::apply_plan::{apply_plan, Announce};
use super::locks::{lock_process, lock_state, take_task};
use super::PostgresStore;
use crate::{Applied, Retry, StateCall, StoreError};

pub(crate) async fn state_api_failed(
    store: &PostgresStore,
    task: &Task,
    owner: &str,
    call: &StateCall,
    api: StateApi,
    error: &str,
    retry: Retry,
) -> Result<Applied, StoreError> {
    let mut client = store.pool().get().await?;
    let tx = client.transaction().await?;
    let process = lock_process(&tx, call.process.id).await?;
    let state = lock_state(&tx, process.id, &call.state.id)
        .await?
        .filter(|s| s.version == call.state.version)
        .ok_or_else(|| StoreError::Stale(format!("state {} changed meanwhile", call.state.id)))?;
    let now = Utc::now();
    let first_attempt_at = task.first_attempt_at.unwrap_or(now);
    let attempt = task.attempt.max(1) as u32;
    let outcome = match retry {
        Retry::ByPolicy => {
            decide::state_api_failed(&process, &state, api, attempt, first_attempt_at, error, now)
        }
        Retry::Never => FailureOutcome::GiveUp(Box::new(decide::state_api_given_up(
            &process, &state, api, attempt, error, now,
        ))),
    };
    let applied = match outcome {
        FailureOutcome::Retry { at, history } => {
            let statement = tx
                .prepare_cached(
                    "UPDATE xdb_sys_tasks SET attempt = attempt + 1, fire_at = $3, \
                       lease_owner = NULL, lease_expires_at = NULL \
                     WHERE id = $1 AND lease_owner IS NOT DISTINCT FROM $2",
                )
                .await?;
            if tx.execute(&statement, &[&task.id, &owner, &at]).await? != 1 {
                return Err(StoreError::Stale(format!(
                    "task {} is no longer leased to us",
                    task.id
                )));
            }
            let plan = TransitionPlan {
                history: vec![history],
                ..Default::default()
            };
            apply_plan(
                &tx,
                &process,
                &plan,
                now,
                Announce::ClosuresOnly,
                store.lease_to(owner),
            )
            .await?;
            Applied {
                created_tasks: true,
                closed_process: false,
                continuation: None,
                continuation_call: None,
            }
        }
        FailureOutcome::GiveUp(plan) => {
            take_task(&tx, task, owner).await?;
            apply_plan(
                &tx,
                &process,
                &plan,
                now,
                Announce::ClosuresOnly,
                store.lease_to(owner),
            )
            .await?
        }
    };
    tx.commit().await?;
    Ok(applied)
}
