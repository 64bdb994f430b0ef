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
    Context, LoadedAttributes, LocalAttributeValue, LockType, ProcessExecutionRpcRequest,
    ProcessExecutionRpcResponse, ProcessRpcWorkerRequest,
};

use super::apply_plan::{apply_plan, Announce};
use super::global_attributes;
use super::locks::{
    insert_messages, lock_process, lock_waiting_states, queued_messages, resolve_execution,
    select_process,
};
use super::rows::from_json;
use super::PostgresStore;
use crate::{RpcWorker, StoreError};

pub(crate) async fn rpc(
    store: &PostgresStore,
    request: &ProcessExecutionRpcRequest,
    worker: &dyn RpcWorker,
    timeout: Duration,
) -> Result<ProcessExecutionRpcResponse, StoreError> {
    xdb_engine::validation::check_id("rpcName", &request.rpc_name)
        .map_err(|e| StoreError::Decide(e.into()))?;
    let mut client = store.pool().get().await?;
    let tx = client.transaction().await?;
    let id = resolve_execution(&tx, &request.process_id, None).await?;
    let process = select_process(&tx, id, false).await?;
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
            global_attributes::read(&tx, config, &loading.columns, loading.lock_type).await?;
    }
    if let Some(loading) = request
        .local_attribute_loading
        .as_ref()
        .filter(|l| !l.keys.is_empty())
    {
        let lock = match loading.lock_type {
            LockType::NoLock => "",
            LockType::SharedLock => " FOR SHARE",
            LockType::ExclusiveLock => " FOR UPDATE",
        };
        let statement = tx
            .prepare_cached(&format!(
                "SELECT key, value FROM xdb_sys_local_attributes \
                 WHERE process_execution_id = $1 AND key = ANY($2){lock}"
            ))
            .await?;
        for row in tx.query(&statement, &[&process.id, &loading.keys]).await? {
            if let Some(value) = from_json(row.get(1))? {
                attributes.local_attributes.push(LocalAttributeValue {
                    key: row.get(0),
                    value,
                });
            }
        }
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
        &tx,
        process.global_attribute_config.as_ref(),
        &response.writes.global_attributes,
    )
    .await?;
    let process = lock_process(&tx, id).await?;
    let now = Utc::now();
    let mut plan = decide::complete_rpc(&process, &request.rpc_name, &response, now)?;
    if !response.publish_to_local_queue.is_empty() {
        insert_messages(&tx, process.id, &response.publish_to_local_queue).await?;
        let waiting = lock_waiting_states(&tx, process.id).await?;
        let messages = queued_messages(&tx, process.id).await?;
        decide::deliver_messages(&waiting, &messages, &mut HashSet::new(), now, &mut plan);
    }
    apply_plan(&tx, &process, &plan, now, Announce::NewTasks, None).await?;
    tx.commit().await?;
    Ok(ProcessExecutionRpcResponse {
        output: response.output,
    })
}
