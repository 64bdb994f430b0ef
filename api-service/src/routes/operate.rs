//! The operator's calls: the states view and the controls.

use axum::extract::State;
use axum::Json;
use xdb_protocol::{
    ProcessExecutionControlRequest, ProcessExecutionControlResponse, ProcessExecutionResetRequest,
    ProcessExecutionResetResponse, ProcessExecutionStatesRequest, ProcessExecutionStatesResponse,
};

use crate::json::ApiJson;
use crate::{ApiError, AppState};

pub(crate) async fn states(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<ProcessExecutionStatesRequest>,
) -> Result<Json<ProcessExecutionStatesResponse>, ApiError> {
    Ok(Json(state.store.process_states(&request).await?))
}

pub(crate) async fn retry_now(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<ProcessExecutionControlRequest>,
) -> Result<Json<ProcessExecutionControlResponse>, ApiError> {
    let response = state.store.retry_now(&request).await?;
    // Tasks became due: wake the async services (where the database cannot).
    state.async_peers.new_tasks();
    Ok(Json(response))
}

pub(crate) async fn give_up(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<ProcessExecutionControlRequest>,
) -> Result<Json<ProcessExecutionControlResponse>, ApiError> {
    let response = state.store.give_up(&request).await?;
    state.async_peers.new_tasks();
    Ok(Json(response))
}

pub(crate) async fn pause(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<ProcessExecutionControlRequest>,
) -> Result<Json<ProcessExecutionControlResponse>, ApiError> {
    Ok(Json(state.store.pause(&request).await?))
}

pub(crate) async fn resume(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<ProcessExecutionControlRequest>,
) -> Result<Json<ProcessExecutionControlResponse>, ApiError> {
    let response = state.store.resume(&request).await?;
    state.async_peers.new_tasks();
    Ok(Json(response))
}

/// Restarts an execution from a named state; a registered definition checks the state
/// and supplies its options when the request leaves them out.
pub(crate) async fn reset(
    State(state): State<AppState>,
    ApiJson(mut request): ApiJson<ProcessExecutionResetRequest>,
) -> Result<Json<ProcessExecutionResetResponse>, ApiError> {
    if let Some(compiled) =
        crate::definitions::definition_of_process(&state.definitions, &request.process_id).await?
    {
        crate::definitions::resolve_reset(&compiled, &mut request).map_err(ApiError::invalid)?;
    }
    let response = state.store.reset(&request).await?;
    state.async_peers.new_tasks();
    Ok(Json(response))
}
