use axum::extract::State;
use axum::Json;
use xdb_persistence::receipts::ClientRequest;
use xdb_protocol::{EmptyResponse, ProcessExecutionStopRequest};

use super::receipted;
use crate::json::ApiJson;
use crate::{ApiError, AppState};

pub(crate) async fn stop(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<ProcessExecutionStopRequest>,
) -> Result<Json<EmptyResponse>, ApiError> {
    let request = ClientRequest::Stop(&request);
    let receipt = receipted::receipt_of(&state, request)?;
    Ok(Json(receipted::apply(&state, request, receipt).await?))
}
