use axum::extract::State;
use axum::Json;
use xdb_protocol::{ProcessExecutionHistoryRequest, ProcessExecutionHistoryResponse};

use crate::json::ApiJson;
use crate::{ApiError, AppState};

pub(crate) async fn history(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<ProcessExecutionHistoryRequest>,
) -> Result<Json<ProcessExecutionHistoryResponse>, ApiError> {
    Ok(Json(state.store.process_history(&request).await?))
}
