use axum::extract::State;
use axum::Json;
use xdb_protocol::{EmptyResponse, ProcessExecutionStopRequest};

use crate::json::ApiJson;
use crate::{ApiError, AppState};

pub(crate) async fn stop(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<ProcessExecutionStopRequest>,
) -> Result<Json<EmptyResponse>, ApiError> {
    state.store.stop_process(&request).await?;
    Ok(Json(EmptyResponse {}))
}
