//! The JSON error body of every non-2xx service response.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Machine-readable error kinds; each maps to one HTTP status ([`ErrorSubType::http_status`]).
/// Several kinds share a status (409, 424, 503), so clients branch on the kind, not the status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorSubType {
    /// 400: the request is malformed or breaks a rule.
    InvalidRequest,
    /// 401: the service requires a bearer token and the request had none or a wrong one.
    Unauthorized,
    /// 403: the bearer token is accepted but its roles do not cover this path.
    Forbidden,
    /// 404: no such process or execution.
    ProcessNotFound,
    /// 404: no process type of this name is registered, or it has no such revision.
    DefinitionNotFound,
    /// 409: the id-reuse policy refused a new execution.
    ProcessAlreadyStarted,
    /// 409: the execution is closed and accepts no more work.
    ProcessNotRunning,
    /// 409: an RPC's worker answered, but the execution closed while it ran.
    ProcessClosedDuringRpc,
    /// 409: an operator's control does not apply to the execution as it is now.
    ControlNotApplicable,
    /// 409: a definition would remove states that running executions wait in.
    DefinitionIncompatible,
    /// 409: the request's `requestId` was used before for a different request.
    RequestIdConflict,
    /// 404: no batch has this id.
    BatchNotFound,
    /// 404: no schedule has this id.
    ScheduleNotFound,
    /// 409: a schedule with this id exists.
    ScheduleAlreadyExists,
    /// 413: the request body is over the service's size limit.
    PayloadTooLarge,
    /// 424: the worker failed, timed out or answered garbage.
    WorkerApiError,
    /// 424: the user's database refused an attribute read or write.
    AppDatabaseError,
    /// 500: anything else; details are in the service log.
    InternalError,
    /// 503: the service is at its limit of requests in flight or its database answers too
    /// slowly; `Retry-After` says when to try again.
    Overloaded,
    /// 503: the service lost its database connection, or could not open one; a write may
    /// have taken effect.
    DatabaseUnavailable,
}

impl ErrorSubType {
    /// Every kind, in the order the document lists them.
    pub const ALL: [ErrorSubType; 20] = [
        ErrorSubType::InvalidRequest,
        ErrorSubType::Unauthorized,
        ErrorSubType::Forbidden,
        ErrorSubType::ProcessNotFound,
        ErrorSubType::DefinitionNotFound,
        ErrorSubType::ProcessAlreadyStarted,
        ErrorSubType::ProcessNotRunning,
        ErrorSubType::ProcessClosedDuringRpc,
        ErrorSubType::ControlNotApplicable,
        ErrorSubType::DefinitionIncompatible,
        ErrorSubType::RequestIdConflict,
        ErrorSubType::BatchNotFound,
        ErrorSubType::ScheduleNotFound,
        ErrorSubType::ScheduleAlreadyExists,
        ErrorSubType::PayloadTooLarge,
        ErrorSubType::WorkerApiError,
        ErrorSubType::AppDatabaseError,
        ErrorSubType::InternalError,
        ErrorSubType::Overloaded,
        ErrorSubType::DatabaseUnavailable,
    ];

    pub fn http_status(self) -> u16 {
        match self {
            ErrorSubType::InvalidRequest => 400,
            ErrorSubType::Unauthorized => 401,
            ErrorSubType::Forbidden => 403,
            ErrorSubType::ProcessNotFound
            | ErrorSubType::DefinitionNotFound
            | ErrorSubType::BatchNotFound
            | ErrorSubType::ScheduleNotFound => 404,
            ErrorSubType::ProcessAlreadyStarted
            | ErrorSubType::ProcessNotRunning
            | ErrorSubType::ProcessClosedDuringRpc
            | ErrorSubType::ControlNotApplicable
            | ErrorSubType::DefinitionIncompatible
            | ErrorSubType::RequestIdConflict
            | ErrorSubType::ScheduleAlreadyExists => 409,
            ErrorSubType::PayloadTooLarge => 413,
            ErrorSubType::WorkerApiError | ErrorSubType::AppDatabaseError => 424,
            ErrorSubType::InternalError => 500,
            ErrorSubType::Overloaded | ErrorSubType::DatabaseUnavailable => 503,
        }
    }

    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorSubType::InvalidRequest => "INVALID_REQUEST",
            ErrorSubType::Unauthorized => "UNAUTHORIZED",
            ErrorSubType::Forbidden => "FORBIDDEN",
            ErrorSubType::ProcessNotFound => "PROCESS_NOT_FOUND",
            ErrorSubType::DefinitionNotFound => "DEFINITION_NOT_FOUND",
            ErrorSubType::ProcessAlreadyStarted => "PROCESS_ALREADY_STARTED",
            ErrorSubType::ProcessNotRunning => "PROCESS_NOT_RUNNING",
            ErrorSubType::ProcessClosedDuringRpc => "PROCESS_CLOSED_DURING_RPC",
            ErrorSubType::ControlNotApplicable => "CONTROL_NOT_APPLICABLE",
            ErrorSubType::DefinitionIncompatible => "DEFINITION_INCOMPATIBLE",
            ErrorSubType::RequestIdConflict => "REQUEST_ID_CONFLICT",
            ErrorSubType::BatchNotFound => "BATCH_NOT_FOUND",
            ErrorSubType::ScheduleNotFound => "SCHEDULE_NOT_FOUND",
            ErrorSubType::ScheduleAlreadyExists => "SCHEDULE_ALREADY_EXISTS",
            ErrorSubType::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            ErrorSubType::WorkerApiError => "WORKER_API_ERROR",
            ErrorSubType::AppDatabaseError => "APP_DATABASE_ERROR",
            ErrorSubType::InternalError => "INTERNAL_ERROR",
            ErrorSubType::Overloaded => "OVERLOADED",
            ErrorSubType::DatabaseUnavailable => "DATABASE_UNAVAILABLE",
        }
    }

    /// What the kind means to a client, as the OpenAPI document states it.
    pub fn meaning(self) -> &'static str {
        match self {
            ErrorSubType::InvalidRequest => {
                "The request is malformed or breaks a rule: not a JSON object, a field of the \
                 wrong type, unknown or over its limit, a plain value where a payload \
                 (`{\"encoding\": \"json\", \"data\": \"<JSON text>\"}`) belongs. `message` \
                 names the field. Nothing was changed."
            }
            ErrorSubType::Unauthorized => {
                "The service requires `Authorization: Bearer <token>` (`security.api_tokens`) \
                 and the request had none or a token it does not accept."
            }
            ErrorSubType::Forbidden => {
                "The bearer token is accepted, but none of its roles (`security.tokens`: \
                 read, operate, client, deploy) allows this path. `message` names the role the path \
                 needs. Nothing was changed."
            }
            ErrorSubType::ProcessNotFound => {
                "No process has this process id, or it has no execution with this \
                 processExecutionId."
            }
            ErrorSubType::DefinitionNotFound => {
                "No process type of this name is registered (`definitions/register`), or it \
                 has no revision of this number."
            }
            ErrorSubType::ProcessAlreadyStarted => {
                "The process id has an execution that the start's `idReusePolicy` does not \
                 allow replacing. Nothing was started."
            }
            ErrorSubType::ProcessNotRunning => {
                "The process's current execution is closed (completed, failed, timed out or \
                 terminated) and accepts no more work. Nothing was changed; for an RPC, the \
                 worker was not called."
            }
            ErrorSubType::ProcessClosedDuringRpc => {
                "The RPC's worker was called and answered, but the execution closed while \
                 it ran (stopped, timed out, or completed by a state). The RPC's writes, \
                 messages and new states were discarded and its output is not returned. \
                 What the worker did outside XDB did happen: guard it with \
                 `context.idempotencyKey`."
            }
            ErrorSubType::ControlNotApplicable => {
                "An operator's control (retry-now, give-up, pause, resume) does not apply to \
                 the execution as it is now: it is closed, no state waits for a retry or is \
                 parked, no state is failing, an attempt is being called right now, it is \
                 already paused, or it is not paused. `message` says which. Nothing was \
                 changed."
            }
            ErrorSubType::DefinitionIncompatible => {
                "A registration would remove states that running executions of the process \
                 type wait in; `message` names the states and how many executions. Nothing \
                 was registered: drain them first, or register with `force: true`."
            }
            ErrorSubType::RequestIdConflict => {
                "The request's `requestId` was used, within the retention window, for a \
                 request with a different body (or another operation); `message` names the \
                 first. Nothing was changed: use a new id for a new request."
            }
            ErrorSubType::BatchNotFound => "No batch has this `batchId`.",
            ErrorSubType::ScheduleNotFound => "No schedule has this `scheduleId`.",
            ErrorSubType::ScheduleAlreadyExists => {
                "A schedule with this `scheduleId` exists. Nothing was created: update it, \
                 or delete it first."
            }
            ErrorSubType::PayloadTooLarge => {
                "The request body is over the service's `api.max_request_bytes` (1 MiB by \
                 default). Nothing was changed."
            }
            ErrorSubType::WorkerApiError => {
                "Your worker failed the RPC: it answered a non-2xx status, timed out, could \
                 not be reached, or answered a body XDB cannot use (not the response schema, \
                 a state the process cannot start, writes over the limits). `workerError` \
                 holds the worker's own detail when there is one. Nothing was written. \
                 (Workers are called synchronously only for RPCs; a failing state API is \
                 retried in the background and never answers a client request.)"
            }
            ErrorSubType::AppDatabaseError => {
                "Your database refused a read or write of the process's business table \
                 (`globalAttributeConfig`): the table or a column does not exist, a value \
                 does not fit its column's type, a constraint failed. `message` carries the \
                 database's error. Nothing was written."
            }
            ErrorSubType::InternalError => {
                "Anything else: XDB's own tables, a conflict that persisted. Details are in \
                 the service log; the request may be tried again."
            }
            ErrorSubType::Overloaded => {
                "The service is at its limit of requests in flight, its database did not \
                 take the request in time, or kept refusing it for now (a deadlock, a lock \
                 wait that timed out). Nothing was changed: try again after the \
                 `Retry-After` header's seconds."
            }
            ErrorSubType::DatabaseUnavailable => {
                "The service lost its connection to its database, or could not open one \
                 (the database is down, restarting, or cut off). A read can be sent again \
                 after the `Retry-After` header's seconds. A write may or may not have \
                 taken effect, as the connection can drop while the database commits: \
                 read what it changes (describe the process) before sending it again."
            }
        }
    }
}

/// The body of every non-2xx answer of the service and internal paths.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiErrorResponse {
    pub sub_type: ErrorSubType,
    /// What went wrong, for people: names the field or the object involved.
    pub message: String,
    /// With `WORKER_API_ERROR`: how the worker call failed (the worker's own `detail`,
    /// its HTTP status, a timeout); null or absent otherwise.
    #[serde(default)]
    pub worker_error: Option<String>,
}
