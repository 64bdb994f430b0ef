//! A JSON body extractor whose rejections use the XDB error format.

use axum::body::Bytes;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use xdb_protocol::ErrorSubType;

use crate::ApiError;

pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
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
        let body = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| {
                if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::new(
                        ErrorSubType::PayloadTooLarge,
                        "the request body is too large",
                    )
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
        match axum::Json::<T>::from_bytes(&body) {
            Ok(axum::Json(value)) => Ok(Self(value)),
            Err(rejection) => Err(rejection_to_error(rejection)),
        }
    }
}

fn rejection_to_error(rejection: JsonRejection) -> ApiError {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return ApiError::new(
            ErrorSubType::PayloadTooLarge,
            "the request body is too large",
        );
    }
    ApiError::invalid(format!("malformed request body: {}", rejection.body_text()))
}
