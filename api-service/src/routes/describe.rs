use axum::extract::State;
use axum::Json;
use xdb_protocol::{ProcessExecutionDescribeRequest, ProcessExecutionDescribeResponse};

use crate::json::ApiJson;
use crate::{ApiError, AppState};

pub(crate) async fn describe(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<ProcessExecutionDescribeRequest>,
) -> Result<Json<ProcessExecutionDescribeResponse>, ApiError> {
    Ok(Json(state.store.describe_process(&request).await?))
}
