use axum::extract::State;
use axum::Json;
use xdb_protocol::{EmptyResponse, PublishToLocalQueueRequest};

use xdb_persistence::receipts::ClientRequest;

use super::receipted;
use crate::json::ApiJson;
use crate::{ApiError, AppState};

/// Most messages in one publish request.
pub const MAX_MESSAGES_PER_REQUEST: usize = 1000;

pub(crate) async fn publish_to_local_queue(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<PublishToLocalQueueRequest>,
) -> Result<Json<EmptyResponse>, ApiError> {
    let receipt = receipted::receipt_of(&state, ClientRequest::Publish(&request))?;
    if request.messages.is_empty() {
        return Err(ApiError::invalid("messages: must not be empty"));
    }
    if request.messages.len() > MAX_MESSAGES_PER_REQUEST {
        return Err(ApiError::invalid(format!(
            "messages: at most {MAX_MESSAGES_PER_REQUEST} per request"
        )));
    }
    xdb_engine::validation::check_queue_payloads(
        "messages",
        &request.messages,
        &state.config.limits,
    )
    .map_err(|e| ApiError::invalid(format!("invalid request: {e}")))?;
    if let Some(definition) =
        crate::definitions::definition_of_process(&state.definitions, &request.process_id).await?
    {
        crate::definitions::check_publish(definition.definition(), &request.messages)
            .map_err(ApiError::invalid)?;
    }
    let request = ClientRequest::Publish(&request);
    Ok(Json(receipted::apply(&state, request, receipt).await?))
}
