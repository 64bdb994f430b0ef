//! RPC: a synchronous worker call inside one transaction.
//!
//! The transaction holds the requested row locks (global-attribute row, local
//! attributes) across the worker call, so an RPC with an exclusive lock is atomic with
//! respect to other RPCs and state decisions writing the same row. The process row is
//! locked only after the worker answered, to keep state transitions unblocked meanwhile.

use std::collections::HashSet;
use std::time::Duration;

use chrono::Utc;
use xdb_engine::decide;
use xdb_protocol::{
    Context, LoadedAttributes, LockType, ProcessExecutionRpcRequest, ProcessExecutionRpcResponse,
    ProcessRpcWorkerRequest,
};

use super::apply_plan::apply_plan;
use super::global_attributes;
use super::locks::{
    insert_messages, lock_process, lock_waiting_states, queued_messages, read_local_attributes,
    resolve_execution, select_process,
};
use super::MySqlStore;
use crate::{RpcWorker, StoreError};

pub(crate) async fn rpc(
    store: &MySqlStore,
    request: &ProcessExecutionRpcRequest,
    worker: &dyn RpcWorker,
    timeout: Duration,
) -> Result<ProcessExecutionRpcResponse, StoreError> {
    xdb_engine::validation::check_id("rpcName", &request.rpc_name)
        .map_err(|e| StoreError::Decide(e.into()))?;
    let mut tx = store.begin().await?;
    let id = resolve_execution(&mut tx, &request.process_id, None).await?;
    let process = select_process(&mut tx, id, false).await?;
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
        attributes.global_attributes =
            global_attributes::read(&mut tx, store, config, &loading.columns, loading.lock_type)
                .await?;
    }
    if let Some(loading) = request
        .local_attribute_loading
        .as_ref()
        .filter(|l| !l.keys.is_empty())
    {
        let lock = match loading.lock_type {
            LockType::NoLock => "",
            LockType::SharedLock => " LOCK IN SHARE MODE",
            LockType::ExclusiveLock => " FOR UPDATE",
        };
        attributes.local_attributes =
            read_local_attributes(&mut tx, process.id, &loading.keys, lock).await?;
    }

    let now = Utc::now();
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

    global_attributes::lock_row_first(
        &mut tx,
        store,
        process.global_attribute_config.as_ref(),
        &response.writes.global_attributes,
    )
    .await?;
    let process = lock_process(&mut tx, id).await?;
    let now = Utc::now();
    let mut plan = decide::complete_rpc(&process, &request.rpc_name, &response, now)?;
    if !response.publish_to_local_queue.is_empty() {
        insert_messages(&mut tx, process.id, &response.publish_to_local_queue).await?;
        let waiting = lock_waiting_states(&mut tx, process.id).await?;
        let messages = queued_messages(&mut tx, process.id).await?;
        decide::deliver_messages(&waiting, &messages, &mut HashSet::new(), now, &mut plan);
    }
    apply_plan(&mut tx, store, &process, &plan, now, None).await?;
    tx.commit().await?;
    Ok(ProcessExecutionRpcResponse {
        output: response.output,
    })
}
