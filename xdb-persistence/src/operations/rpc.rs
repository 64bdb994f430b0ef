//! RPC: a synchronous worker call inside one transaction.
//!
//! The transaction holds the requested row locks (global-attribute row, local
//! attributes) across the worker call, so an RPC with an exclusive lock is atomic with
//! respect to other RPCs and state decisions writing the same row. The process row is
//! locked only after the worker answered, to keep state transitions unblocked meanwhile.

use std::time::Duration;

use xdb_engine::{decide, Publisher};
use xdb_protocol::{
    Context, LoadedAttributes, ProcessExecutionRpcRequest, ProcessExecutionRpcResponse,
    ProcessRpcWorkerRequest,
};

use super::attributes::lock_business_row_first;
use super::deliveries::publish_and_deliver;
use crate::tables::{
    Announce, AttributeRows, Dialect, Finish, Lane, PlanWriter, ProcessRows, Transaction,
};
use crate::{RpcWorker, StoreError};

/// How long the transaction may wait on the worker beyond the call's own timeout: its
/// statements after the answer, on a busy service.
const IDLE_MARGIN: Duration = Duration::from_secs(5);

pub(crate) async fn rpc<D: Dialect>(
    store: &D,
    request: &ProcessExecutionRpcRequest,
    worker: &dyn RpcWorker,
    timeout: Duration,
) -> Result<ProcessExecutionRpcResponse, StoreError> {
    xdb_engine::validation::check_id("rpcName", &request.rpc_name)
        .map_err(|e| StoreError::Decide(e.into()))?;
    let mut tx = store.begin(Lane::Main).await?;
    // The locks taken below are held across the worker call: if the network loses this
    // service meanwhile, the database gives them back soon after the call's timeout,
    // not after the connection's general limit.
    tx.limit_idle(Some(timeout + IDLE_MARGIN)).await?;
    match in_transaction(store, &mut tx, request, worker, timeout).await {
        Ok(answer) => {
            tx.limit_idle(None).await?;
            tx.commit().await?;
            Ok(answer)
        }
        Err(error) => {
            // Best effort: a connection that failed is not pooled again anyway.
            let _ = tx.limit_idle(None).await;
            Err(error)
        }
    }
}

async fn in_transaction<D: Dialect>(
    store: &D,
    tx: &mut D::Tx,
    request: &ProcessExecutionRpcRequest,
    worker: &dyn RpcWorker,
    timeout: Duration,
) -> Result<ProcessExecutionRpcResponse, StoreError> {
    let id = tx.resolve_execution(&request.process_id, None).await?;
    let process = tx.read_process(id).await?;
    if process.status.is_closed() {
        return Err(decide::DecideError::NotRunning.into());
    }

    let mut attributes = LoadedAttributes::default();
    if let Some(loading) = &request.global_attribute_loading {
        let config = process.global_attribute_config.as_ref().ok_or_else(|| {
            StoreError::Decide(decide::DecideError::Invalid(
                xdb_engine::validation::ValidationError::new(
                    "globalAttributeLoading",
                    "the process has no global attribute table",
                ),
            ))
        })?;
        if !loading.columns.is_empty() {
            attributes.global_attributes = tx
                .read_business_row(config, &loading.columns, loading.lock_type)
                .await?;
        }
    }
    if let Some(loading) = request
        .local_attribute_loading
        .as_ref()
        .filter(|l| !l.keys.is_empty())
    {
        attributes.local_attributes = tx
            .read_local_attributes(process.id, &loading.keys, loading.lock_type)
            .await?;
    }

    let now = store.database_clock().now();
    let worker_request = ProcessRpcWorkerRequest {
        context: Context {
            process_id: process.process_id.clone(),
            process_execution_id: process.id.to_string(),
            process_type: process.process_type.clone(),
            state_execution_id: None,
            attempt: 1,
            first_attempt_timestamp_ms: now.timestamp_millis(),
            process_started_timestamp_ms: process.start_time.timestamp_millis(),
            idempotency_key: format!(
                "{}/rpc/{}/{}",
                process.id,
                request.rpc_name,
                uuid::Uuid::now_v7()
            ),
        },
        process_type: process.process_type.clone(),
        rpc_name: request.rpc_name.clone(),
        input: request.input.clone(),
        attributes,
    };
    let response = worker
        .call_rpc(&process.worker_url, &worker_request, timeout)
        .await
        .map_err(StoreError::Worker)?;

    lock_business_row_first(
        tx,
        process.global_attribute_config.as_ref(),
        &response.writes.global_attributes,
    )
    .await?;
    let process = tx.lock_process(id).await?;
    if process.status.is_closed() {
        return Err(StoreError::ClosedDuringRpc(format!(
            "the process execution closed ({}) while its RPC '{}' ran; the RPC's writes, \
             messages and new states were discarded",
            process.status.as_str(),
            request.rpc_name
        )));
    }
    let now = store.database_clock().now();
    let mut plan = decide::complete_rpc(&process, &request.rpc_name, &response, now)?;
    if !response.publish_to_local_queue.is_empty() {
        let published = &response.publish_to_local_queue;
        let by = Publisher::Rpc(request.rpc_name.clone());
        publish_and_deliver(tx, process.id, published, &by, now, &mut plan).await?;
    }
    tx.apply_plan(
        &process,
        &plan,
        now,
        Announce::NewTasks,
        None,
        Finish::Later,
    )
    .await?;
    Ok(ProcessExecutionRpcResponse {
        output: response.output,
    })
}
