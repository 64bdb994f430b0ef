//! The operator's calls: the states view and the controls.

use axum::extract::State;
use axum::Json;
use xdb_protocol::{
    ProcessExecutionControlRequest, ProcessExecutionControlResponse, ProcessExecutionResetRequest,
    ProcessExecutionResetResponse, ProcessExecutionStatesRequest, ProcessExecutionStatesResponse,
};

use xdb_persistence::receipts::{ClientRequest, Control};

use super::receipted;
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
    control(&state, Control::RetryNow, &request).await
}

pub(crate) async fn give_up(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<ProcessExecutionControlRequest>,
) -> Result<Json<ProcessExecutionControlResponse>, ApiError> {
    control(&state, Control::GiveUp, &request).await
}

pub(crate) async fn pause(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<ProcessExecutionControlRequest>,
) -> Result<Json<ProcessExecutionControlResponse>, ApiError> {
    control(&state, Control::Pause, &request).await
}

pub(crate) async fn resume(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<ProcessExecutionControlRequest>,
) -> Result<Json<ProcessExecutionControlResponse>, ApiError> {
    control(&state, Control::Resume, &request).await
}

pub(crate) async fn reprioritize(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<ProcessExecutionControlRequest>,
) -> Result<Json<ProcessExecutionControlResponse>, ApiError> {
    control(&state, Control::Reprioritize, &request).await
}

async fn control(
    state: &AppState,
    control: Control,
    request: &ProcessExecutionControlRequest,
) -> Result<Json<ProcessExecutionControlResponse>, ApiError> {
    let request = ClientRequest::Control(control, request);
    let receipt = receipted::receipt_of(state, request)?;
    Ok(Json(receipted::apply(state, request, receipt).await?))
}

/// Restarts an execution from a named state; a registered definition checks the state
/// and supplies its options when the request leaves them out.
pub(crate) async fn reset(
    State(state): State<AppState>,
    ApiJson(mut request): ApiJson<ProcessExecutionResetRequest>,
) -> Result<Json<ProcessExecutionResetResponse>, ApiError> {
    let receipt = receipted::receipt_of(&state, ClientRequest::Reset(&request))?;
    if let Some(compiled) =
        crate::definitions::definition_of_process(&state.definitions, &request.process_id).await?
    {
        crate::definitions::resolve_reset(&compiled, &mut request).map_err(ApiError::invalid)?;
    }
    let request = ClientRequest::Reset(&request);
    Ok(Json(receipted::apply(&state, request, receipt).await?))
}
