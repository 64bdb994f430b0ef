//! Types shared by the service API and the worker API.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A user payload: a value of any type, carried as text that XDB never interprets.
///
/// The `json` encoding, written and read alike by every XDB SDK, so a client in one
/// language and a worker in another interoperate:
/// - `encoding` is exactly `"json"` (readers compare it ASCII case-insensitively);
/// - `data` is the value serialized as JSON text (RFC 8259, UTF-8) — a *string holding
///   JSON*, not a nested JSON value: the value `{"email": "a@b.c"}` is sent as
///   `{"encoding": "json", "data": "{\"email\":\"a@b.c\"}"}`, the string `"hi"` as
///   `{"encoding": "json", "data": "\"hi\""}`;
/// - "no value" (null, None, unit, undefined) is sent by leaving the payload field out,
///   never as `data: "null"`; a reader treats an absent payload as JSON `null`;
/// - writers should not pretty-print; readers accept any valid JSON text.
///
/// A plain value where a payload belongs (`"startStateInput": {"email": "a@b.c"}`) is
/// refused with 400 `INVALID_REQUEST` naming the field. Another `encoding` is passed
/// through untouched; SDKs refuse to decode encodings they do not know. Global attributes
/// are *not* payloads: they are plain JSON values (see `GlobalAttributeValue`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(example = json!({"encoding": "json", "data": "{\"email\":\"a@b.c\"}"}))]
pub struct EncodedObject {
    /// `"json"` for every SDK (see the rule above).
    pub encoding: String,
    /// The value as JSON text. Bounded by the request body limit; as a local attribute
    /// value by `limits.max_attribute_value_bytes` (64 KiB by default), as a local-queue
    /// message payload by `limits.max_queue_message_bytes` (256 KiB by default).
    pub data: String,
}

impl EncodedObject {
    /// Encodes `value` by the `json` rule (see the type's documentation).
    pub fn json<T: Serialize>(value: &T) -> Result<Self, serde_json::Error> {
        Ok(Self {
            encoding: "json".to_string(),
            data: serde_json::to_string(value)?,
        })
    }
}

/// One column of the global-attribute row and its value.
///
/// Values are plain JSON; the database converts them to the column's type (a JSON string
/// into a text or timestamp column, an object into a json column, and so on).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GlobalAttributeValue {
    pub column: String,
    /// Any JSON value; at most `limits.max_attribute_value_bytes` (64 KiB by default)
    /// as serialized.
    pub value: serde_json::Value,
}

/// One local attribute: a key/value kept by XDB per process execution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalAttributeValue {
    pub key: String,
    pub value: EncodedObject,
}

/// How a row is locked while attributes are loaded for a state API or an RPC:
/// `NO_LOCK` (the default) reads without a lock; `SHARED_LOCK` (`FOR SHARE`) lets other
/// readers in and makes writers wait; `EXCLUSIVE_LOCK` (`FOR UPDATE`) admits one holder at
/// a time. An RPC holds its locks until its answer commits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum LockType {
    /// Read without a lock.
    #[default]
    NoLock,
    /// `FOR SHARE`: concurrent readers allowed, writers wait.
    SharedLock,
    /// `FOR UPDATE`: one holder at a time.
    ExclusiveLock,
}

/// Which global-attribute columns are read before a state API or RPC is called.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GlobalAttributeLoading {
    /// Columns to read from the process's row; empty means none.
    #[serde(default)]
    #[schema(default = json!([]))]
    pub columns: Vec<String>,
    /// Default `NO_LOCK`.
    #[serde(default)]
    #[schema(default = LockType::default)]
    pub lock_type: LockType,
}

/// Which local attributes are read before a state API or RPC is called.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalAttributeLoading {
    /// Keys to read; a key never written is left out of the loaded attributes.
    #[serde(default)]
    #[schema(default = json!([]))]
    pub keys: Vec<String>,
    /// Default `NO_LOCK`.
    #[serde(default)]
    #[schema(default = LockType::default)]
    pub lock_type: LockType,
}

/// Backoff retry for a state's waitUntil or execute calls. An attempt fails when the
/// worker answers a non-2xx status (4xx and 5xx alike), times out, cannot be reached, or
/// answers a body XDB cannot use (not the response schema, an invalid decision, writes
/// over the limits or refused by the business table); nothing of a failed attempt is
/// written. One answer is not retried, whatever the policy: a `WorkerErrorResponse`
/// whose `errorType` says the call can never succeed (`UNKNOWN_PROCESS_TYPE`,
/// `UNKNOWN_STATE`, `UNKNOWN_RPC`, `UNDECODABLE_INPUT`, `NOT_IMPLEMENTED`; see
/// `WorkerErrorType`) parks the call after one attempt (`TASK_PARKED`), until an
/// operator's `retry-now` (after a deploy fixed the worker) or `give-up` (the failure
/// recovery below). Absent, or every field absent: retry forever, 1 s after the first failure,
/// doubling up to 100 s between attempts. With unlimited attempts a state whose worker
/// keeps failing keeps its process RUNNING (and retrying) until the worker recovers, the
/// process is stopped, or the process's own `timeoutSeconds` passes. When the policy
/// gives up, the state's failure recovery applies. RPCs are never retried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetryPolicy {
    /// Delay before the first retry, in seconds (default 1; 0 or absent means 1).
    #[serde(default)]
    pub initial_interval_seconds: Option<f64>,
    /// Multiplier of the delay after each failed attempt (default 2; below 1 counts as 1).
    #[serde(default)]
    pub backoff_coefficient: Option<f64>,
    /// Upper bound of the delay, in seconds (default 100).
    #[serde(default)]
    pub maximum_interval_seconds: Option<f64>,
    /// Attempts in all, the first included; 0 or absent means unlimited.
    #[serde(default)]
    pub maximum_attempts: Option<u32>,
    /// Give up once the next attempt would start more than this many seconds after the
    /// first one; 0 or absent means unlimited.
    #[serde(default)]
    pub maximum_attempts_duration_seconds: Option<u32>,
}

/// What happens when a state API exhausts its retry policy: `FAIL_PROCESS_ON_STATE_FAILURE`
/// (the default) fails the whole execution; `PROCEED_TO_CONFIGURED_STATE` ends the
/// failing thread and starts `stateFailureProceedStateId` in its place, with the failure
/// (`StateApiFailureDetails`) as its JSON input.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FailureRecoveryPolicy {
    /// The process execution fails.
    #[default]
    FailProcessOnStateFailure,
    /// The thread goes on with `stateRecoveryStateId`, which receives the failure as input.
    ProceedToConfiguredState,
}

/// Failure recovery for one state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StateFailureRecoveryOptions {
    /// Default `FAIL_PROCESS_ON_STATE_FAILURE`.
    #[serde(default)]
    #[schema(default = FailureRecoveryPolicy::default)]
    pub policy: FailureRecoveryPolicy,
    /// The state to proceed to, with `PROCEED_TO_CONFIGURED_STATE`; without one (or one
    /// that is not a valid id) the process fails.
    #[serde(default)]
    pub state_failure_proceed_state_id: Option<String>,
    /// Options of that state; absent: every default.
    #[serde(default)]
    #[schema(no_recursion)]
    pub state_failure_proceed_state_config: Option<Box<AsyncStateConfig>>,
}

/// Per-state options, chosen by the worker's process definition. Every field is
/// optional; absent means the default stated on it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AsyncStateConfig {
    /// The state has no waitUntil: XDB goes straight to execute (default false).
    #[serde(default)]
    #[schema(default = false)]
    pub skip_wait_until: bool,
    /// Timeout of one waitUntil call in seconds; 0 or absent means the async service's
    /// `async.default_api_timeout_seconds` (10 by default).
    #[serde(default)]
    pub wait_until_api_timeout_seconds: Option<u32>,
    /// Timeout of one execute call in seconds; 0 or absent as for waitUntil.
    #[serde(default)]
    pub execute_api_timeout_seconds: Option<u32>,
    /// Absent: the default retry policy (retry forever, see `RetryPolicy`).
    #[serde(default)]
    pub wait_until_api_retry_policy: Option<RetryPolicy>,
    /// Absent: the default retry policy (retry forever, see `RetryPolicy`).
    #[serde(default)]
    pub execute_api_retry_policy: Option<RetryPolicy>,
    /// Absent: `FAIL_PROCESS_ON_STATE_FAILURE`.
    #[serde(default)]
    pub state_failure_recovery_options: Option<StateFailureRecoveryOptions>,
    /// Global-attribute columns read (and locked) before each call; absent: none.
    #[serde(default)]
    pub global_attribute_loading: Option<GlobalAttributeLoading>,
    /// Local attributes read (and locked) before each call; absent: none.
    #[serde(default)]
    pub local_attribute_loading: Option<LocalAttributeLoading>,
}

/// A message for one process execution's local queue. Queues are FIFO per queue name
/// and exist implicitly: publishing to a queue no state waits for keeps the message until
/// one does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueMessage {
    pub queue_name: String,
    /// De-duplication id: a second message with the same id for the same execution and
    /// queue is dropped. Generated when absent.
    #[serde(default)]
    pub dedup_id: Option<String>,
    /// Absent: a message without a value (read as JSON `null`).
    #[serde(default)]
    pub payload: Option<EncodedObject>,
}

/// A state to move to, as decided by execute (or started by an RPC).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StateMovement {
    pub state_id: String,
    /// Absent: no input (read as JSON `null`).
    #[serde(default)]
    pub state_input: Option<EncodedObject>,
    /// Absent: every default of `AsyncStateConfig`.
    #[serde(default)]
    pub state_config: Option<AsyncStateConfig>,
}

/// Status of a process execution: `RUNNING`, or closed as `COMPLETED`, `FAILED`,
/// `TIMEOUT` (its `timeoutSeconds` passed) or `TERMINATED` (stopped, or replaced by
/// `TERMINATE_IF_RUNNING`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ProcessStatus {
    Running,
    Completed,
    Failed,
    Timeout,
    Terminated,
}

impl ProcessStatus {
    pub const ALL: [ProcessStatus; 5] = [
        ProcessStatus::Running,
        ProcessStatus::Completed,
        ProcessStatus::Failed,
        ProcessStatus::Timeout,
        ProcessStatus::Terminated,
    ];

    /// The name stored in the database and used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ProcessStatus::Running => "RUNNING",
            ProcessStatus::Completed => "COMPLETED",
            ProcessStatus::Failed => "FAILED",
            ProcessStatus::Timeout => "TIMEOUT",
            ProcessStatus::Terminated => "TERMINATED",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }

    pub fn is_closed(self) -> bool {
        self != ProcessStatus::Running
    }
}
