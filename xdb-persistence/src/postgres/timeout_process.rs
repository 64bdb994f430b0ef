//! The process deadline passed: close it as TIMEOUT.

use chrono::Utc;
use xdb_engine::decide;
use xdb_engine::Task;

use super::apply_plan::{apply_plan, Announce};
use super::locks::{lock_process, take_task};
use super::PostgresStore;
use crate::{Applied, StoreError};

pub(crate) async fn timeout_process(
    store: &PostgresStore,
    task: &Task,
    owner: &str,
) -> Result<Applied, StoreError> {
    let mut client = store.timekeeping_pool().get().await?;
    let tx = client.transaction().await?;
    // The process row first, like every transaction that touches an execution.
    let process = lock_process(&tx, task.process_execution_id).await?;
    take_task(&tx, task, owner).await?;
    let now = Utc::now();
    let plan = decide::timeout_process(&process, now);
    let applied = apply_plan(
        &tx,
        &process,
        &plan,
        now,
        Announce::ClosuresOnly,
        store.lease_to(owner),
    )
    .await?;
    tx.commit().await?;
    Ok(applied)
}
