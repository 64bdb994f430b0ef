//! Types shared by the service API and the worker API.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// An opaque user payload: `encoding` says how `data` is encoded (the SDKs use `"json"`).
///
/// Payloads stay opaque to XDB so that a worker in any language can choose its own format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EncodedObject {
    pub encoding: String,
    /// Bounded by the request body limit; as a local attribute value by
    /// `limits.max_attribute_value_bytes` (64 KiB by default), as a local-queue message
    /// payload by `limits.max_queue_message_bytes` (256 KiB by default).
    pub data: String,
}

impl EncodedObject {
    /// Encodes `value` as JSON text.
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

/// How a row is locked while attributes are loaded for a state API or an RPC.
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
    pub columns: Vec<String>,
    #[serde(default)]
    pub lock_type: LockType,
}

/// Which local attributes are read before a state API or RPC is called.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalAttributeLoading {
    #[serde(default)]
    pub keys: Vec<String>,
    #[serde(default)]
    pub lock_type: LockType,
}

/// Backoff retry for worker API calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetryPolicy {
    /// Delay before the first retry, in seconds (default 1).
    #[serde(default)]
    pub initial_interval_seconds: Option<f64>,
    /// Multiplier of the delay after each failed attempt (default 2).
    #[serde(default)]
    pub backoff_coefficient: Option<f64>,
    /// Upper bound of the delay, in seconds (default 100).
    #[serde(default)]
    pub maximum_interval_seconds: Option<f64>,
    /// Attempts in all, the first included; 0 or absent means unlimited.
    #[serde(default)]
    pub maximum_attempts: Option<u32>,
    /// Give up once this many seconds passed since the first attempt; 0 or absent means unlimited.
    #[serde(default)]
    pub maximum_attempts_duration_seconds: Option<u32>,
}

/// What happens when a state API exhausts its retry policy.
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
    #[serde(default)]
    pub policy: FailureRecoveryPolicy,
    /// The state to proceed to, with `PROCEED_TO_CONFIGURED_STATE`.
    #[serde(default)]
    pub state_failure_proceed_state_id: Option<String>,
    #[serde(default)]
    #[schema(no_recursion)]
    pub state_failure_proceed_state_config: Option<Box<AsyncStateConfig>>,
}

/// Per-state options, chosen by the worker's process definition.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AsyncStateConfig {
    /// The state has no waitUntil: XDB goes straight to execute.
    #[serde(default)]
    pub skip_wait_until: bool,
    /// Timeout of one waitUntil call in seconds (default 10).
    #[serde(default)]
    pub wait_until_api_timeout_seconds: Option<u32>,
    /// Timeout of one execute call in seconds (default 10).
    #[serde(default)]
    pub execute_api_timeout_seconds: Option<u32>,
    #[serde(default)]
    pub wait_until_api_retry_policy: Option<RetryPolicy>,
    #[serde(default)]
    pub execute_api_retry_policy: Option<RetryPolicy>,
    #[serde(default)]
    pub state_failure_recovery_options: Option<StateFailureRecoveryOptions>,
    #[serde(default)]
    pub global_attribute_loading: Option<GlobalAttributeLoading>,
    #[serde(default)]
    pub local_attribute_loading: Option<LocalAttributeLoading>,
}

/// A message for one process execution's local queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueMessage {
    pub queue_name: String,
    /// De-duplication id: a second message with the same id for the same execution and
    /// queue is dropped. Generated when absent.
    #[serde(default)]
    pub dedup_id: Option<String>,
    #[serde(default)]
    pub payload: Option<EncodedObject>,
}

/// A state to move to, as decided by execute (or started by an RPC).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StateMovement {
    pub state_id: String,
    #[serde(default)]
    pub state_input: Option<EncodedObject>,
    #[serde(default)]
    pub state_config: Option<AsyncStateConfig>,
}

/// Status of a process execution.
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
