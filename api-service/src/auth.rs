//! Bearer-token protection of the service API (`security.api_tokens`).
//!
//! Only the client paths (service and console reads) are protected: health probes must answer the orchestrator,
//! the OpenAPI document is public, and the internal notify path only wakes an instance
//! up to re-read the database, which reveals and changes nothing.

use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;
use xdb_protocol::{paths, ErrorSubType};

use crate::{ApiError, AppState};

/// Lets a request through when the API is open, the path is not a service path, or it
/// carries one of the configured tokens; answers 401 otherwise.
pub(crate) async fn require_token(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let tokens = &state.config.security.api_tokens;
    if tokens.is_empty() || !paths::is_client_path(request.uri().path()) {
        return next.run(request).await;
    }
    let presented = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::trim);
    let accepted = presented.is_some_and(|presented| {
        // Every token is compared, in constant time, so timing tells nothing.
        tokens.iter().fold(false, |any, token| {
            any | bool::from(token.as_bytes().ct_eq(presented.as_bytes()))
        })
    });
    if accepted {
        return next.run(request).await;
    }
    let message = match presented {
        None => "this service requires `Authorization: Bearer <token>`",
        Some(_) => "the bearer token is not accepted",
    };
    let mut response = ApiError::new(ErrorSubType::Unauthorized, message).into_response();
    response
        .headers_mut()
        .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}
