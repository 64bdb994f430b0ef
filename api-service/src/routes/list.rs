use std::time::Duration;

use axum::extract::State;
use axum::Json;
use xdb_persistence::reads_business_row;
use xdb_protocol::{ProcessExecutionListRequest, ProcessExecutionListResponse};

use crate::json::ApiJson;
use crate::{ApiError, AppState};

/// A page of executions: the plain list's statement without `where`, else one filtered
/// statement under `api.query_timeout_ms`; with `explain`, that statement's plan.
pub(crate) async fn list(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<ProcessExecutionListRequest>,
) -> Result<Json<ProcessExecutionListResponse>, ApiError> {
    let Some(tree) = &request.where_ else {
        if request.explain {
            return Err(ApiError::invalid(
                "explain: needs a `where` filter (without one, the list reads XDB's own \
                 indexes only)",
            ));
        }
        return Ok(Json(state.store.list_processes(&request).await?));
    };
    let table = state
        .definitions
        .query_table(
            reads_business_row(Some(tree), None),
            "filter.processType",
            request.filter.process_type.as_deref(),
            request.business_table.as_ref(),
        )
        .await?;
    let limit = Duration::from_millis(state.config.api.query_timeout_ms);
    let page = state
        .store
        .list_matching(&request, table.as_ref(), limit)
        .await?;
    Ok(Json(page))
}
