//! A timer task is due: mark the timer fired; the state may move on to execute.

use chrono::Utc;
use xdb_engine::decide;
use xdb_engine::Task;

use super::apply_plan::{apply_plan, Announce};
use super::load_state_call::preload_continuation;
use super::locks::{lock_process, lock_state, take_task};
use super::PostgresStore;
use crate::{Applied, StoreError};

pub(crate) async fn fire_timer(
    store: &PostgresStore,
    task: &Task,
    owner: &str,
) -> Result<Applied, StoreError> {
    let mut client = store.timekeeping_pool().get().await?;
    let tx = client.transaction().await?;
    // The process row first, like every transaction that touches an execution.
    let process = lock_process(&tx, task.process_execution_id).await?;
    take_task(&tx, task, owner).await?;
    let (Some(state_id), Some(index)) = (&task.state, task.timer_index) else {
        tx.commit().await?;
        return Ok(Applied::default());
    };
    let Some(state) = lock_state(&tx, process.id, state_id).await? else {
        tx.commit().await?;
        return Ok(Applied::default());
    };
    let now = Utc::now();
    let plan = decide::fire_timer(&process, &state, index, now);
    let mut applied = apply_plan(
        &tx,
        &process,
        &plan,
        now,
        Announce::ClosuresOnly,
        store.lease_to(owner),
    )
    .await?;
    preload_continuation(&tx, &process, &plan, Some(&state), &mut applied, now).await?;
    tx.commit().await?;
    Ok(applied)
}
