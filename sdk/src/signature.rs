//! Verifies that a worker call comes from XDB (see [`WorkerService::with_signing_secret`]
//! and the `xdb-worker-auth` crate).
//!
//! [`WorkerService::with_signing_secret`]: crate::WorkerService::with_signing_secret

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use xdb_protocol::WorkerErrorResponse;
use xdb_worker_auth::{verify, DEFAULT_MAX_SKEW_SECONDS, SIGNATURE_HEADER};

/// `errorType` of a refused call: its signature is missing or wrong.
pub const ERROR_UNAUTHORIZED: &str = "UNAUTHORIZED";

/// Largest body read to verify a signature; XDB's calls are far smaller.
const MAX_SIGNED_BODY_BYTES: usize = 64 * 1024 * 1024;

pub(crate) async fn require_signature(
    State(secret): State<Arc<[u8]>>,
    request: Request,
    next: Next,
) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(body) = to_bytes(body, MAX_SIGNED_BODY_BYTES).await else {
        return refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            "the request body is too large",
        );
    };
    let header = parts
        .headers
        .get(SIGNATURE_HEADER)
        .and_then(|value| value.to_str().ok());
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    if let Err(error) = verify(&secret, header, &body, now, DEFAULT_MAX_SKEW_SECONDS) {
        tracing::warn!(%error, path = %parts.uri.path(), "refused an unsigned worker call");
        return refuse(StatusCode::UNAUTHORIZED, &error.to_string());
    }
    next.run(Request::from_parts(parts, Body::from(body))).await
}

fn refuse(status: StatusCode, detail: &str) -> Response {
    (
        status,
        Json(WorkerErrorResponse {
            detail: detail.to_string(),
            error_type: Some(ERROR_UNAUTHORIZED.to_string()),
        }),
    )
        .into_response()
}
