//! The JSON error body of every non-2xx service response.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Machine-readable error kinds; each maps to one HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorSubType {
    /// 400: the request is malformed or breaks a rule.
    InvalidRequest,
    /// 401: the service requires a bearer token and the request had none or a wrong one.
    Unauthorized,
    /// 404: no such process or execution.
    ProcessNotFound,
    /// 409: the id-reuse policy refused a new execution.
    ProcessAlreadyStarted,
    /// 409: the execution is closed and accepts no more work.
    ProcessNotRunning,
    /// 413: a payload or field is over its size limit.
    PayloadTooLarge,
    /// 424: the worker failed, timed out or answered garbage.
    WorkerApiError,
    /// 424: the user's database refused an attribute read or write.
    AppDatabaseError,
    /// 500: anything else; details are in the service log.
    InternalError,
}

impl ErrorSubType {
    pub fn http_status(self) -> u16 {
        match self {
            ErrorSubType::InvalidRequest => 400,
            ErrorSubType::Unauthorized => 401,
            ErrorSubType::ProcessNotFound => 404,
            ErrorSubType::ProcessAlreadyStarted | ErrorSubType::ProcessNotRunning => 409,
            ErrorSubType::PayloadTooLarge => 413,
            ErrorSubType::WorkerApiError | ErrorSubType::AppDatabaseError => 424,
            ErrorSubType::InternalError => 500,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiErrorResponse {
    pub sub_type: ErrorSubType,
    pub message: String,
    /// The worker's own error detail, with `WORKER_API_ERROR`.
    #[serde(default)]
    pub worker_error: Option<String>,
}
