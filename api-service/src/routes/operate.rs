//! The operator's calls: the states view and the controls.

use axum::extract::State;
use axum::Json;
use xdb_protocol::{
    ProcessExecutionControlRequest, ProcessExecutionControlResponse, ProcessExecutionStatesRequest,
    ProcessExecutionStatesResponse,
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
