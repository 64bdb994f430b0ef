use axum::extract::State;
use axum::http::StatusCode;
use xdb_protocol::ProcessExecutionListRequest;

use crate::AppState;

pub(crate) async fn live() -> StatusCode {
    StatusCode::OK
}

/// Ready when the database answers.
pub(crate) async fn ready(State(state): State<AppState>) -> StatusCode {
    let probe = ProcessExecutionListRequest {
        page_size: Some(1),
        ..Default::default()
    };
    match state.store.list_processes(&probe).await {
        Ok(_) => StatusCode::OK,
        Err(_) => StatusCode::SERVICE_UNAVAILABLE,
    }
}
