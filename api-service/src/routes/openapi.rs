use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;

use crate::AppState;

/// Serves the contract, stating the limits this instance is configured with.
pub(crate) async fn openapi(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        state.contract.document.clone(),
    )
}
