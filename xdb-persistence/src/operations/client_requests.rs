//! Client requests that change a running execution: stop, and publishing to its queues.

use xdb_engine::decide::{self, DecideError};
use xdb_engine::{Publisher, TransitionPlan};
use xdb_protocol::{
    ProcessExecutionStopRequest, ProcessExecutionWaitForCompletionResponse,
    PublishToLocalQueueRequest,
};

use super::deliveries::publish_and_deliver;
use crate::receipts::Receipt;
use crate::tables::{Announce, Dialect, Finish, Lane, PlanWriter, ProcessRows, Transaction};
use crate::StoreError;

/// Stop: terminate or fail the current execution, cancelling its states and timers.
pub(crate) async fn stop_process<D: Dialect>(
    store: &D,
    request: &ProcessExecutionStopRequest,
    receipt: Option<&Receipt>,
) -> Result<Option<Box<ProcessExecutionWaitForCompletionResponse>>, StoreError> {
    let execution = request.process_execution_id.as_deref();
    let mut tx = store.begin(Lane::Main).await?;
    let process = tx.lock_execution_of(&request.process_id, execution).await?;
    let now = store.database_clock().now();
    let plan = decide::stop_process(&process, request.stop_type, request.reason.as_deref(), now)?;
    let (applied, _) = tx
        .apply_plan(
            &process,
            &plan,
            now,
            Announce::NewTasks,
            None,
            Finish::Later,
        )
        .await?;
    super::record_receipt(&mut tx, receipt, &xdb_protocol::EmptyResponse {}, now).await?;
    tx.commit().await?;
    Ok(applied.closed_outcome)
}

/// Publish: queue messages for the current execution and hand them to waiting states.
pub(crate) async fn publish_to_local_queue<D: Dialect>(
    store: &D,
    request: &PublishToLocalQueueRequest,
    receipt: Option<&Receipt>,
) -> Result<(), StoreError> {
    let execution = request.process_execution_id.as_deref();
    let mut tx = store.begin(Lane::Main).await?;
    let process = tx.lock_execution_of(&request.process_id, execution).await?;
    if process.status.is_closed() {
        return Err(DecideError::NotRunning.into());
    }
    let now = store.database_clock().now();
    let mut plan = TransitionPlan::default();
    let published = &request.messages;
    publish_and_deliver(
        &mut tx,
        process.id,
        published,
        &Publisher::Client,
        now,
        &mut plan,
    )
    .await?;
    tx.apply_plan(
        &process,
        &plan,
        now,
        Announce::NewTasks,
        None,
        Finish::Later,
    )
    .await?;
    super::record_receipt(&mut tx, receipt, &xdb_protocol::EmptyResponse {}, now).await?;
    tx.commit().await
}
