use axum::extract::State;
use axum::Json;
use xdb_persistence::Notification;
use xdb_protocol::{EmptyResponse, ProcessExecutionStopRequest};

use crate::json::ApiJson;
use crate::{ApiError, AppState};

pub(crate) async fn stop(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<ProcessExecutionStopRequest>,
) -> Result<Json<EmptyResponse>, ApiError> {
    let outcome = state.store.stop_process(&request).await?;
    // Where the database cannot announce the close (MySQL), this instance's waiters
    // hear of it here, with their answer; other instances' waiters poll for it.
    if let Some(outcome) = outcome.filter(|_| state.async_peers.is_enabled()) {
        state.notifications.publish(Notification::ProcessClosed {
            id: outcome.process_execution_id.clone(),
            outcome: Some(std::sync::Arc::from(outcome)),
        });
    }
    Ok(Json(EmptyResponse {}))
}
