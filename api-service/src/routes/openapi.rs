use axum::http::header;
use axum::response::IntoResponse;

/// Serves the committed contract.
pub(crate) async fn openapi() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        xdb_protocol::openapi::openapi_json(),
    )
}
