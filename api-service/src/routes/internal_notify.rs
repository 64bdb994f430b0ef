//! Wake-ups from async-service instances: executions that closed, for waiting clients.

use axum::extract::State;
use axum::Json;
use xdb_persistence::Notification;
use xdb_protocol::{EmptyResponse, InternalNotifyRequest};

use crate::json::ApiJson;
use crate::{ApiError, AppState};

/// Most ids one notification may carry; the sender batches, so this is generous.
const MAX_IDS: usize = xdb_protocol::limits::MAX_NOTIFY_IDS;

pub(crate) async fn internal_notify(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<InternalNotifyRequest>,
) -> Result<Json<EmptyResponse>, ApiError> {
    if request.closed_process_execution_ids.len() > MAX_IDS {
        return Err(ApiError::invalid(format!(
            "closedProcessExecutionIds: at most {MAX_IDS}"
        )));
    }
    for id in request.closed_process_execution_ids {
        state
            .notifications
            .publish(Notification::ProcessClosed { id, outcome: None });
    }
    Ok(Json(EmptyResponse {}))
}
