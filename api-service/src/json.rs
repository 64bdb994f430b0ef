//! A JSON body extractor whose rejections use the XDB error format. The body is checked
//! against the request's schema in the served OpenAPI document before it is read into
//! the request type, so unknown fields, wrong types and over-limit ids are refused.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use xdb_protocol::ErrorSubType;

use crate::{ApiError, AppState};

pub struct ApiJson<T>(pub T);

impl<T> FromRequest<AppState> for ApiJson<T>
where
    T: DeserializeOwned + utoipa::ToSchema,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let is_json = request
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.parse::<mime::Mime>().ok())
            .is_some_and(|mime| {
                mime.type_() == "application"
                    && (mime.subtype() == "json" || mime.suffix().is_some_and(|s| s == "json"))
            });
        if !is_json {
            return Err(ApiError::invalid(
                "malformed request body: expected `Content-Type: application/json`",
            ));
        }
        let internal = request.uri().path() == xdb_protocol::paths::INTERNAL_NOTIFY;
        let body = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| {
                if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::new(ErrorSubType::PayloadTooLarge, too_large(state, internal))
                } else {
                    ApiError::invalid(format!(
                        "unreadable request body: {}",
                        rejection.body_text()
                    ))
                }
            })?;
        // serde accepts a JSON array for a struct (field by field, in order); every
        // request of this API is an object, so anything else is refused up front.
        if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Err(ApiError::invalid(
                "malformed request body: expected a JSON object",
            ));
        }
        if xdb_engine::validation::json_has_nul_escape(&body) {
            return Err(ApiError::invalid(
                "malformed request body: strings must not contain U+0000 (NUL), which the \
                 database cannot store",
            ));
        }
        let value: serde_json::Value = serde_json::from_slice(&body)
            .map_err(|e| ApiError::invalid(format!("malformed request body: {e}")))?;
        state.contract.validate(&T::name(), &value)?;
        // Read from the parsed value rather than parsing the bytes again.
        T::deserialize(&value)
            .map(Self)
            .map_err(|e| ApiError::invalid(format!("invalid request body: {e}")))
    }
}

/// What a 413 says: the limit in force and, on the service's listener, the setting that
/// raises it.
fn too_large(state: &AppState, internal: bool) -> String {
    if internal {
        format!(
            "the request body is over the internal listener's limit of {} bytes",
            crate::INTERNAL_MAX_REQUEST_BYTES
        )
    } else {
        format!(
            "the request body is over this service's limit of {} bytes; the operator can \
             raise it with api.max_request_bytes (XDB_API_MAX_REQUEST_BYTES)",
            state.config.api.max_request_bytes
        )
    }
}
