use axum::extract::State;
use axum::Json;
use xdb_protocol::{ProcessExecutionAttributesRequest, ProcessExecutionAttributesResponse};

use crate::json::ApiJson;
use crate::{ApiError, AppState};

/// The console's read of an execution's local attributes and business row.
pub(crate) async fn attributes(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<ProcessExecutionAttributesRequest>,
) -> Result<Json<ProcessExecutionAttributesResponse>, ApiError> {
    Ok(Json(state.store.process_attributes(&request).await?))
}
