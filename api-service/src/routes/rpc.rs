//! RPC: the worker is called synchronously, inside the storage transaction.

use std::time::Duration;

use async_trait::async_trait;
use axum::extract::State;
use axum::Json;
use xdb_persistence::{RpcWorker, StoreError};
use xdb_protocol::{
    paths, ErrorSubType, Limits, ProcessExecutionRpcRequest, ProcessExecutionRpcResponse,
    ProcessRpcWorkerRequest, ProcessRpcWorkerResponse,
};
use xdb_worker_client::WorkerClient;

use crate::json::ApiJson;
use crate::{ApiError, AppState};

const DEFAULT_RPC_TIMEOUT_SECONDS: u32 = 10;
const MAX_RPC_TIMEOUT_SECONDS: u32 = 60;

/// Calls the worker and holds its answer to the value limits, as the async service does
/// with state answers.
struct HttpRpcWorker<'a>(&'a WorkerClient, &'a Limits);

#[async_trait]
impl RpcWorker for HttpRpcWorker<'_> {
    async fn call_rpc(
        &self,
        worker_url: &str,
        request: &ProcessRpcWorkerRequest,
        timeout: Duration,
    ) -> Result<ProcessRpcWorkerResponse, String> {
        let response: ProcessRpcWorkerResponse = self
            .0
            .call(
                worker_url,
                paths::WORKER_RPC,
                request,
                timeout,
                &request.context.idempotency_key,
            )
            .await
            .map_err(|e| e.to_string())?;
        xdb_engine::validation::check_worker_writes(
            &response.writes,
            &response.publish_to_local_queue,
            self.1,
        )
        .map_err(|e| format!("worker answered an invalid body: {e}"))?;
        Ok(response)
    }
}

pub(crate) async fn rpc(
    State(state): State<AppState>,
    ApiJson(mut request): ApiJson<ProcessExecutionRpcRequest>,
) -> Result<Json<ProcessExecutionRpcResponse>, ApiError> {
    let seconds = request
        .timeout_seconds
        .unwrap_or(DEFAULT_RPC_TIMEOUT_SECONDS);
    if seconds == 0 || seconds > MAX_RPC_TIMEOUT_SECONDS {
        return Err(ApiError::invalid(format!(
            "timeoutSeconds: must be between 1 and {MAX_RPC_TIMEOUT_SECONDS}"
        )));
    }
    if let Some(definition) =
        crate::definitions::definition_of_process(&state.definitions, &request.process_id).await?
    {
        crate::definitions::resolve_rpc(&definition, &mut request).map_err(ApiError::invalid)?;
    }
    let worker = HttpRpcWorker(&state.workers, &state.config.limits);
    match state
        .store
        .rpc(&request, &worker, Duration::from_secs(u64::from(seconds)))
        .await
    {
        Ok(response) => {
            state.async_peers.new_tasks();
            Ok(Json(response))
        }
        Err(StoreError::Worker(detail)) => Err(ApiError {
            sub_type: ErrorSubType::WorkerApiError,
            message: format!("the worker's RPC '{}' failed", request.rpc_name),
            worker_error: Some(detail),
        }),
        Err(other) => Err(other.into()),
    }
}
