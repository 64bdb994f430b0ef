//! A timer task is due: mark the timer fired; the state may move on to execute.

use chrono::Utc;
use xdb_engine::decide;
use xdb_engine::Task;

use super::locks::{lock_for_task, lock_process, take_task};
use super::task_transition::finish_transition;
use super::transaction::Tx;
use super::PostgresStore;
use crate::{Applied, StoreError};

pub(crate) async fn fire_timer(
    store: &PostgresStore,
    task: &Task,
    owner: &str,
) -> Result<Applied, StoreError> {
    let tx = Tx::on(store.timekeeping_pool()).await?;
    let (Some(state_id), Some(index)) = (&task.state, task.timer_index) else {
        // Not a state's timer (never written so): only the task goes.
        tx.begin_with(async {
            lock_process(tx.client(), task.process_execution_id).await?;
            take_task(tx.client(), task, owner).await
        })
        .await?;
        tx.commit().await?;
        return Ok(Applied::default());
    };
    // The process row first, like every transaction that touches an execution.
    let (process, state) = tx
        .begin_with(lock_for_task(tx.client(), task, owner, state_id))
        .await?;
    let Some(state) = state else {
        tx.commit().await?;
        return Ok(Applied::default());
    };
    let now = Utc::now();
    let plan = decide::fire_timer(&process, &state, index, now);
    finish_transition(tx, store, owner, &process, &plan, &state, now).await
}
