use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};
use xdb_protocol::ProcessExecutionStopRequest;

use crate::json::ApiJson;
use crate::{ApiError, AppState};

pub(crate) async fn stop(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<ProcessExecutionStopRequest>,
) -> Result<Json<Value>, ApiError> {
    state.store.stop_process(&request).await?;
    Ok(Json(json!({})))
}
