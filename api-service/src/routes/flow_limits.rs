//! Flow limits: operators' overrides set here, with what definitions declare beside them;
//! applied by the async service (`xdb_persistence::FlowLimitStore`).

use axum::extract::State;
use axum::Json;
use xdb_engine::validation::{check_flow_limits, check_id, check_state_flow_limits};
use xdb_protocol::{
    FlowLimitsEntry, FlowLimitsHistoryRequest, FlowLimitsHistoryResponse, FlowLimitsListRequest,
    FlowLimitsListResponse, FlowLimitsSetRequest, MAX_FLOW_LIMIT_REASON_CHARS,
};

use super::check_history_page;
use crate::auth::Caller;
use crate::json::ApiJson;
use crate::{ApiError, AppState};

pub(crate) async fn set(
    State(state): State<AppState>,
    Caller(caller): Caller,
    ApiJson(request): ApiJson<FlowLimitsSetRequest>,
) -> Result<Json<FlowLimitsEntry>, ApiError> {
    check_id("processType", &request.process_type).map_err(|e| ApiError::invalid(e.to_string()))?;
    if let Some(state_id) = &request.state_id {
        check_id("stateId", state_id).map_err(|e| ApiError::invalid(e.to_string()))?;
    }
    if let Some(limits) = &request.override_limits {
        let checked = match request.state_id {
            Some(_) => check_state_flow_limits("override", limits),
            None => check_flow_limits("override", limits),
        };
        checked.map_err(|e| ApiError::invalid(e.to_string()))?;
    }
    if let Some(reason) = &request.reason {
        if reason.chars().count() > MAX_FLOW_LIMIT_REASON_CHARS {
            return Err(ApiError::invalid(format!(
                "reason: at most {MAX_FLOW_LIMIT_REASON_CHARS} characters"
            )));
        }
    }
    // A limit on a state the registered type does not have would never apply: most
    // likely a typo. An unregistered type may be limited before it is registered.
    if let Some(state_id) = &request.state_id {
        let definitions = state.definitions.snapshot().await?;
        if let Some(compiled) = definitions.get(&request.process_type) {
            let states = &compiled.stored.definition.states;
            if !states.iter().any(|s| &s.id == state_id) {
                let known: Vec<&str> = states.iter().map(|s| s.id.as_str()).collect();
                return Err(ApiError::invalid(format!(
                    "stateId: {state_id:?} is not a state of the registered process type {} \
                     (its states: {})",
                    request.process_type,
                    known.join(", ")
                )));
            }
        }
    }
    let entry = state
        .flow_limits
        .set_flow_limit_override(&request, &caller)
        .await?;
    tracing::info!(
        process_type = %request.process_type,
        state_id = request.state_id.as_deref().unwrap_or(""),
        effective = ?entry.effective,
        by = %caller,
        "flow limit override changed"
    );
    Ok(Json(entry))
}

pub(crate) async fn list(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<FlowLimitsListRequest>,
) -> Result<Json<FlowLimitsListResponse>, ApiError> {
    let limits = state
        .flow_limits
        .list_flow_limits(request.process_type.as_deref())
        .await?;
    Ok(Json(FlowLimitsListResponse { limits }))
}

pub(crate) async fn history(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<FlowLimitsHistoryRequest>,
) -> Result<Json<FlowLimitsHistoryResponse>, ApiError> {
    check_history_page(request.page_size, request.next_page_token.as_deref())?;
    Ok(Json(state.flow_limits.flow_limit_history(&request).await?))
}
