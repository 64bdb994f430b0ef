use axum::extract::State;
use axum::Json;
use xdb_protocol::{ProcessExecutionStartRequest, ProcessExecutionStartResponse};

use crate::json::ApiJson;
use crate::{ApiError, AppState};

pub(crate) async fn start(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<ProcessExecutionStartRequest>,
) -> Result<Json<ProcessExecutionStartResponse>, ApiError> {
    let id = state.store.start_process(&request).await?;
    state.async_peers.new_tasks();
    tracing::debug!(process_id = %request.process_id, execution = %id, "process started");
    Ok(Json(ProcessExecutionStartResponse {
        process_execution_id: id.to_string(),
    }))
}
