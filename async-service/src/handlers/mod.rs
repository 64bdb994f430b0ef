//! What the async service does with each kind of task, whatever the task source.

mod process_timeout;
mod state_api;
mod timer;

use std::sync::Arc;

use xdb_engine::{Task, TaskType};
use xdb_persistence::{Applied, ProcessStore, StoreError};

use xdb_worker_client::WorkerClient;

/// Shared by every task handler.
pub struct HandlerContext {
    pub store: Arc<dyn ProcessStore>,
    pub workers: WorkerClient,
    pub owner: String,
    pub default_api_timeout_seconds: u32,
}

/// Handles one claimed task to the end: its outcome is committed (or the task is left
/// for its lease to expire, when the database failed).
pub async fn handle_task(context: &HandlerContext, task: &Task) -> Result<Applied, StoreError> {
    let result = match task.task_type {
        TaskType::WaitUntil | TaskType::Execute => state_api::handle(context, task).await,
        TaskType::Timer => timer::handle(context, task).await,
        TaskType::ProcessTimeout => process_timeout::handle(context, task).await,
    };
    match result {
        Err(StoreError::Stale(reason)) => {
            tracing::debug!(task = task.id, %reason, "task is stale; dropped");
            Ok(Applied::default())
        }
        other => other,
    }
}
