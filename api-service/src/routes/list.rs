use axum::extract::State;
use axum::Json;
use xdb_protocol::{ProcessExecutionListRequest, ProcessExecutionListResponse};

use crate::json::ApiJson;
use crate::{ApiError, AppState};

pub(crate) async fn list(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<ProcessExecutionListRequest>,
) -> Result<Json<ProcessExecutionListResponse>, ApiError> {
    Ok(Json(state.store.list_processes(&request).await?))
}
