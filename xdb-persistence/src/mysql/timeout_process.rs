//! The process deadline passed: close it as TIMEOUT.

use chrono::Utc;
use xdb_engine::decide;
use xdb_engine::Task;

use super::apply_plan::apply_plan;
use super::locks::{lock_process, take_task};
use super::MySqlStore;
use crate::{Applied, StoreError};

pub(crate) async fn timeout_process(
    store: &MySqlStore,
    task: &Task,
    owner: &str,
) -> Result<Applied, StoreError> {
    let mut tx = store.begin_timekeeping().await?;
    // The process row first, like every transaction that touches an execution.
    let process = lock_process(&mut tx, task.process_execution_id).await?;
    take_task(&mut tx, task, owner).await?;
    let now = Utc::now();
    let plan = decide::timeout_process(&process, now);
    let applied = apply_plan(&mut tx, store, &process, &plan, now, store.lease_to(owner)).await?;
    tx.commit().await?;
    Ok(applied)
}
