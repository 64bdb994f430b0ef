//! Stop: terminate or fail the current execution, cancelling its states and timers.

use chrono::Utc;
use xdb_engine::decide;
use xdb_protocol::ProcessExecutionStopRequest;

use super::apply_plan::{apply_plan, Announce};
use super::locks::lock_execution_of;
use super::PostgresStore;
use crate::StoreError;

pub(crate) async fn stop_process(
    store: &PostgresStore,
    request: &ProcessExecutionStopRequest,
) -> Result<(), StoreError> {
    let mut client = store.pool().get().await?;
    let tx = client.transaction().await?;
    let process = lock_execution_of(&tx, &request.process_id, None).await?;
    let now = Utc::now();
    let plan = decide::stop_process(&process, request.stop_type, request.reason.as_deref(), now)?;
    apply_plan(&tx, &process, &plan, now, Announce::NewTasks, None).await?;
    tx.commit().await?;
    Ok(())
}
