//! Every failure of a request becomes one JSON [`ApiErrorResponse`] here.

use axum::http::header::RETRY_AFTER;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use xdb_engine::decide::DecideError;
use xdb_persistence::StoreError;
use xdb_protocol::{ApiErrorResponse, ErrorSubType};

#[derive(Debug)]
pub struct ApiError {
    pub sub_type: ErrorSubType,
    pub message: String,
    pub worker_error: Option<String>,
}

impl ApiError {
    pub fn new(sub_type: ErrorSubType, message: impl Into<String>) -> Self {
        Self {
            sub_type,
            message: message.into(),
            worker_error: None,
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorSubType::InvalidRequest, message)
    }

    /// 503 `OVERLOADED`: refused before anything changed; the answer carries
    /// `Retry-After`.
    pub fn overloaded(message: impl Into<String>) -> Self {
        Self::new(ErrorSubType::Overloaded, message)
    }
}

/// Marks an `OVERLOADED` response, so admission counts refusals made further in.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Overloaded;

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        let sub_type = match &error {
            StoreError::NotFound(_) => ErrorSubType::ProcessNotFound,
            StoreError::Decide(DecideError::Invalid(_)) => ErrorSubType::InvalidRequest,
            StoreError::Decide(DecideError::InvalidWorkerResponse(_)) => {
                ErrorSubType::WorkerApiError
            }
            StoreError::Decide(DecideError::AlreadyStarted(_)) => {
                ErrorSubType::ProcessAlreadyStarted
            }
            StoreError::Decide(DecideError::NotRunning) => ErrorSubType::ProcessNotRunning,
            StoreError::AppDatabase(_) => ErrorSubType::AppDatabaseError,
            StoreError::Worker(_) => ErrorSubType::WorkerApiError,
            StoreError::ClosedDuringRpc(_) => ErrorSubType::ProcessClosedDuringRpc,
            StoreError::NotApplicable(_) => ErrorSubType::ControlNotApplicable,
            StoreError::RequestIdConflict(_) => ErrorSubType::RequestIdConflict,
            // Only filtered lists and counts set a time limit: the filter is the problem.
            StoreError::TimedOut(_) => {
                return Self::invalid(
                    "the query ran longer than the service's api.query_timeout_ms and was \
                     cancelled: narrow it (processType, status, startTime) or index the \
                     business columns it compares",
                )
            }
            StoreError::Overloaded(_) => {
                return Self::overloaded(format!(
                    "the database did not take the request in time; try again after {} s",
                    crate::admission::RETRY_AFTER_SECONDS
                ))
            }
            // Tried again already (`retrying_conflicts`); the client may try later.
            StoreError::Conflict(why) => {
                let retry_after = crate::admission::RETRY_AFTER_SECONDS;
                return Self::overloaded(format!(
                    "the database kept refusing the transaction for now ({why}); \
                     try again after {retry_after} s"
                ));
            }
            // Whether a write committed is unknown (the connection may have dropped in its
            // COMMIT), so the client is told to read before sending it again; the cause
            // stays in the log, as for an internal error.
            StoreError::ConnectionLost(_) => {
                tracing::warn!(error = %error, "request failed: the database connection was lost");
                return Self::new(
                    ErrorSubType::DatabaseUnavailable,
                    format!(
                        "the service lost its database connection; a write may have taken \
                         effect: send it again with the same requestId (or read before \
                         sending it again), after {} s",
                        crate::admission::RETRY_AFTER_SECONDS
                    ),
                );
            }
            StoreError::Stale(_) | StoreError::Database(_) => ErrorSubType::InternalError,
        };
        if sub_type == ErrorSubType::InternalError {
            tracing::error!(error = %error, "request failed");
            return Self::new(sub_type, "internal error; see the service log");
        }
        Self::new(sub_type, error.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.sub_type.http_status())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = ApiErrorResponse {
            sub_type: self.sub_type,
            message: self.message,
            worker_error: self.worker_error,
        };
        let sub_type = self.sub_type;
        let mut response = (status, Json(body)).into_response();
        if status == StatusCode::SERVICE_UNAVAILABLE {
            response.headers_mut().insert(
                RETRY_AFTER,
                HeaderValue::from(crate::admission::RETRY_AFTER_SECONDS),
            );
        }
        if sub_type == ErrorSubType::Overloaded {
            response.extensions_mut().insert(Overloaded);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lost connection is the database's absence, not the service's failure: 503 with
    /// `Retry-After`, and not counted as a refusal (it may have written).
    #[test]
    fn a_lost_database_connection_answers_database_unavailable() {
        let error = ApiError::from(StoreError::ConnectionLost("connection reset".into()));
        assert_eq!(error.sub_type, ErrorSubType::DatabaseUnavailable);
        assert!(
            error.message.contains("may have taken effect"),
            "{}",
            error.message
        );
        assert!(
            !error.message.contains("reset"),
            "the cause stays in the log"
        );
        let response = error.into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[RETRY_AFTER], "1");
        assert!(response.extensions().get::<Overloaded>().is_none());
    }

    #[test]
    fn overloaded_answers_carry_retry_after_and_count_as_refusals() {
        let response = ApiError::from(StoreError::Overloaded("pool".into())).into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[RETRY_AFTER], "1");
        assert!(response.extensions().get::<Overloaded>().is_some());
        let internal = ApiError::from(StoreError::Database("oops".into())).into_response();
        assert_eq!(internal.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(internal.headers().get(RETRY_AFTER).is_none());
    }
}
