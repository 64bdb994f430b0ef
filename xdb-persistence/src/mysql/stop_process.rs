//! Stop: terminate or fail the current execution, cancelling its states and timers.

use chrono::Utc;
use xdb_engine::decide;
use xdb_protocol::ProcessExecutionStopRequest;

use super::apply_plan::apply_plan;
use super::locks::lock_execution_of;
use super::MySqlStore;
use crate::StoreError;

pub(crate) async fn stop_process(
    store: &MySqlStore,
    request: &ProcessExecutionStopRequest,
) -> Result<(), StoreError> {
    let mut tx = store.begin().await?;
    let process = lock_execution_of(&mut tx, &request.process_id, None).await?;
    let now = Utc::now();
    let plan = decide::stop_process(&process, request.stop_type, request.reason.as_deref(), now)?;
    apply_plan(&mut tx, store, &process, &plan, now, None).await?;
    tx.commit().await?;
    Ok(())
}
