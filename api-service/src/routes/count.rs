use std::time::Duration;

use axum::extract::State;
use axum::Json;
use xdb_persistence::reads_business_row;
use xdb_protocol::{ProcessExecutionCountRequest, ProcessExecutionCountResponse};

use crate::json::ApiJson;
use crate::{ApiError, AppState};

/// Exact counts from one statement under `api.query_timeout_ms`.
pub(crate) async fn count(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<ProcessExecutionCountRequest>,
) -> Result<Json<ProcessExecutionCountResponse>, ApiError> {
    let needs_table = reads_business_row(request.where_.as_ref(), request.group_by.as_ref());
    let table = state
        .definitions
        .query_table(
            needs_table,
            "processType",
            request.process_type.as_deref(),
            request.business_table.as_ref(),
        )
        .await?;
    let limit = Duration::from_millis(state.config.api.query_timeout_ms);
    let counts = state
        .store
        .count_matching(&request, table.as_ref(), limit)
        .await?;
    Ok(Json(counts))
}
