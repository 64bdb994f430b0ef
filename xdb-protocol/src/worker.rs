//! The worker API: what XDB sends to the user's service, and what it answers.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::common::*;

/// Identifies the call a worker is serving. Worker calls are at-least-once: a worker
/// makes its own side effects safe with `idempotencyKey`, which is the same for every
/// attempt of one state API call and differs between calls (it is also sent as the
/// `Idempotency-Key` header).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Context {
    pub process_id: String,
    pub process_execution_id: String,
    pub process_type: String,
    /// `stateId-executionNumber` (`VerifyState-2`: the state's second execution in this
    /// process execution); absent for RPCs.
    #[serde(default)]
    pub state_execution_id: Option<String>,
    /// The 1-based attempt of this call: 1, then one more per retry. Always 1 for RPCs,
    /// which XDB never retries.
    #[schema(minimum = 1, maximum = 2147483647)]
    pub attempt: u32,
    /// When the first attempt started, ms since the epoch.
    pub first_attempt_timestamp_ms: i64,
    /// When the process execution started, ms since the epoch.
    pub process_started_timestamp_ms: i64,
    /// Stable across the attempts of one call, unique between calls: for a state API
    /// `<processExecutionId>/<stateExecutionId>/<waitUntil|execute>`, for an RPC
    /// `<processExecutionId>/rpc/<rpcName>/<unique id>`. Treat it as opaque.
    pub idempotency_key: String,
}

/// How the commands of a waitUntil are combined: `ANY_OF_COMPLETION` (the default) goes
/// on to execute when any one command completed, `ALL_OF_COMPLETION` when every one did.
/// With no commands at all, execute is called at once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CommandWaitingType {
    /// Go on when any one command completes.
    #[default]
    AnyOfCompletion,
    /// Go on when every command completed.
    AllOfCompletion,
}

/// A durable timer, kept in the database: it fires after `delayInSeconds` (whole seconds,
/// 0 fires at once), never early, and survives restarts of every service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimerCommand {
    pub delay_in_seconds: u32,
}

/// Wait for `count` messages on a local queue. The command completes only when all
/// `count` are there, and takes them together (FIFO).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueCommand {
    pub queue_name: String,
    /// Messages to wait for: absent or 0 means 1.
    #[serde(default)]
    pub count: Option<u32>,
}

/// What a state waits for before its execute is called; empty (or absent) means nothing:
/// execute is called at once.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandRequest {
    /// Default `ANY_OF_COMPLETION`.
    #[serde(default)]
    #[schema(default = CommandWaitingType::default)]
    pub waiting_type: CommandWaitingType,
    #[serde(default)]
    #[schema(default = json!([]))]
    pub timer_commands: Vec<TimerCommand>,
    #[serde(default)]
    #[schema(default = json!([]))]
    pub local_queue_commands: Vec<LocalQueueCommand>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TimerStatus {
    Fired,
    /// Not fired: another command completed the request first.
    Skipped,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimerResult {
    pub status: TimerStatus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum LocalQueueCommandStatus {
    Received,
    /// Not (fully) received: another command completed the request first.
    Skipped,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueResult {
    pub queue_name: String,
    pub status: LocalQueueCommandStatus,
    /// The messages consumed for this command, in FIFO order.
    #[serde(default)]
    #[schema(default = json!([]))]
    pub messages: Vec<LocalQueueMessage>,
}

/// Results of the commands, in the order of the command request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandResults {
    #[serde(default)]
    #[schema(default = json!([]))]
    pub timer_results: Vec<TimerResult>,
    #[serde(default)]
    #[schema(default = json!([]))]
    pub local_queue_results: Vec<LocalQueueResult>,
}

/// Attributes loaded for a call, per the state's (or RPC's) loading policy. Global
/// attributes are plain JSON values of the row's columns (a SQL NULL is JSON `null`);
/// local attributes are payloads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadedAttributes {
    #[serde(default)]
    #[schema(default = json!([]))]
    pub global_attributes: Vec<GlobalAttributeValue>,
    #[serde(default)]
    #[schema(default = json!([]))]
    pub local_attributes: Vec<LocalAttributeValue>,
}

/// Writes a worker asks for, applied in the transaction that records its answer: all of
/// them or, if the business table refuses one, none (the attempt fails).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttributeWrites {
    /// Columns of the process's global-attribute row (plain JSON values).
    #[serde(default)]
    #[schema(default = json!([]))]
    pub global_attributes: Vec<GlobalAttributeValue>,
    /// Local attributes to upsert (payloads).
    #[serde(default)]
    #[schema(default = json!([]))]
    pub local_attributes: Vec<LocalAttributeValue>,
}

/// `POST {workerUrl}/api/v1/xdb/worker/async-state/wait-until`: what a state waits for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AsyncStateWaitUntilRequest {
    pub context: Context,
    pub process_type: String,
    pub state_id: String,
    #[serde(default)]
    pub state_input: Option<EncodedObject>,
    #[serde(default)]
    #[schema(default = LoadedAttributes::default)]
    pub attributes: LoadedAttributes,
}

/// A waitUntil's answer. Every field is optional: `{}` waits for nothing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AsyncStateWaitUntilResponse {
    /// Absent: wait for nothing, execute at once.
    #[serde(default)]
    #[schema(default = CommandRequest::default)]
    pub command_request: CommandRequest,
    #[serde(default)]
    #[schema(default = AttributeWrites::default)]
    pub writes: AttributeWrites,
    #[serde(default)]
    #[schema(default = json!([]))]
    pub publish_to_local_queue: Vec<LocalQueueMessage>,
}

/// `POST {workerUrl}/api/v1/xdb/worker/async-state/execute`: the state's decision, once
/// its commands completed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AsyncStateExecuteRequest {
    pub context: Context,
    pub process_type: String,
    pub state_id: String,
    #[serde(default)]
    pub state_input: Option<EncodedObject>,
    /// What the waitUntil's commands came to; empty for a state without waitUntil.
    #[serde(default)]
    #[schema(default = CommandResults::default)]
    pub command_results: CommandResults,
    #[serde(default)]
    #[schema(default = LoadedAttributes::default)]
    pub attributes: LoadedAttributes,
}

/// How a thread ends: `GRACEFUL_COMPLETE_PROCESS` completes the process once no other
/// thread runs (the last graceful output is the result); `FORCE_COMPLETE_PROCESS`
/// completes it now and `FORCE_FAIL_PROCESS` fails it now, ending every other thread;
/// `DEAD_END` ends this thread only. When the last thread ends, the process completes if
/// any thread asked for graceful completion; otherwise it stays RUNNING with nothing to
/// do (RPCs may still start threads) until stopped or timed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ThreadCloseType {
    /// Complete the process once no other thread is running.
    GracefulCompleteProcess,
    /// Complete the process now, ending every other thread.
    ForceCompleteProcess,
    /// Fail the process now, ending every other thread.
    ForceFailProcess,
    /// End this thread only.
    DeadEnd,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadCloseDecision {
    pub close_type: ThreadCloseType,
    /// The process result (complete), or the failure's `details` (`FORCE_FAIL_PROCESS`:
    /// its `data`); ignored for `DEAD_END`.
    #[serde(default)]
    pub output: Option<EncodedObject>,
}

/// What follows an execute: exactly one of next states (several run as parallel threads)
/// or a thread close decision. A decision with neither, or with both, is an unusable
/// answer: the attempt fails and is retried by the state's retry policy, as a worker
/// error would be.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StateDecision {
    /// The states to run next, each a thread (at most 100).
    #[serde(default)]
    #[schema(default = json!([]))]
    pub next_states: Vec<StateMovement>,
    #[serde(default)]
    pub thread_close_decision: Option<ThreadCloseDecision>,
}

/// An execute's answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AsyncStateExecuteResponse {
    pub state_decision: StateDecision,
    #[serde(default)]
    #[schema(default = AttributeWrites::default)]
    pub writes: AttributeWrites,
    #[serde(default)]
    #[schema(default = json!([]))]
    pub publish_to_local_queue: Vec<LocalQueueMessage>,
}

/// `POST {workerUrl}/api/v1/xdb/worker/process/rpc`: a client's RPC, called while the
/// API service holds the loaded attributes' locks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessRpcWorkerRequest {
    pub context: Context,
    pub process_type: String,
    pub rpc_name: String,
    #[serde(default)]
    pub input: Option<EncodedObject>,
    #[serde(default)]
    #[schema(default = LoadedAttributes::default)]
    pub attributes: LoadedAttributes,
}

/// An RPC's answer; its writes, messages and new threads commit together, and the
/// output goes back to the client.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessRpcWorkerResponse {
    /// Absent: no output (read as JSON `null`).
    #[serde(default)]
    pub output: Option<EncodedObject>,
    #[serde(default)]
    #[schema(default = AttributeWrites::default)]
    pub writes: AttributeWrites,
    #[serde(default)]
    #[schema(default = json!([]))]
    pub publish_to_local_queue: Vec<LocalQueueMessage>,
    /// New threads the RPC starts (at most 100).
    #[serde(default)]
    #[schema(default = json!([]))]
    pub append_next_states: Vec<StateMovement>,
}

/// The body a worker answers with a non-2xx status. Any body is accepted (it is shown as
/// text when it is not this one), but only this one can say that a call can never
/// succeed: see `WorkerErrorType`. For a waitUntil or execute, a non-retryable
/// `errorType` parks the state's call after one attempt (`TASK_PARKED`, reason
/// `NON_RETRYABLE_WORKER_ERROR`); every other non-2xx answer is a failed attempt under
/// the state's retry policy. For an RPC, any non-2xx answer is 424 `WORKER_API_ERROR`
/// with `detail` as `workerError`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkerErrorResponse {
    /// What failed, shown in the history (`STATE_API_FAILED`) and to RPC callers.
    pub detail: String,
    /// A machine-readable kind, one of `WorkerErrorType`'s names (any other text is
    /// accepted, and treated as `USER_CODE_ERROR`): `UNKNOWN_PROCESS_TYPE`,
    /// `UNKNOWN_STATE`, `UNKNOWN_RPC`, `UNDECODABLE_INPUT`, `NOT_IMPLEMENTED` (400, never
    /// retried), `INVALID_REQUEST` (400), `UNAUTHORIZED` (401), `USER_CODE_ERROR` (500).
    #[serde(default)]
    pub error_type: Option<String>,
}

impl WorkerErrorResponse {
    /// The kind the worker named, when it named a non-retryable one: the call can never
    /// succeed as the worker stands.
    pub fn non_retryable(&self) -> Option<WorkerErrorType> {
        self.error_type
            .as_deref()
            .and_then(WorkerErrorType::parse)
            .filter(|kind| !kind.retryable())
    }
}

/// The `errorType`s a worker answers with (in [`WorkerErrorResponse`]; a string on the
/// wire, so kinds a later SDK adds still parse). Whether XDB retries a waitUntil or
/// execute that failed so is this table (`retryable()` in Rust):
///
/// | errorType | status | retried |
/// |---|---|---|
/// | `UNKNOWN_PROCESS_TYPE` | 400 | no: the worker hosts no such process type |
/// | `UNKNOWN_STATE` | 400 | no: the process type has no such state |
/// | `UNKNOWN_RPC` | 400 | no: the process type has no such RPC |
/// | `UNDECODABLE_INPUT` | 400 | no: the state's (or RPC's) input cannot be decoded into its type |
/// | `NOT_IMPLEMENTED` | 400 | no: waitUntil called for a state that has none |
/// | `INVALID_REQUEST` | 400 | yes: the request body itself is malformed (a proxy, or an XDB and SDK version mismatch) |
/// | `UNAUTHORIZED` | 401 | yes: the signature is missing, wrong or too old (clock skew, a secret being rotated) |
/// | `USER_CODE_ERROR` | 500 | yes: the user's code failed |
///
/// Not retried means: the call is parked at once, after one attempt, until an operator's
/// `retry-now` (once a deploy fixed the worker) or `give-up` (the state's failure
/// recovery). A status or a timeout alone never makes a call non-retryable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum WorkerErrorType {
    UnknownProcessType,
    UnknownState,
    UnknownRpc,
    UndecodableInput,
    NotImplemented,
    InvalidRequest,
    Unauthorized,
    UserCodeError,
}

impl WorkerErrorType {
    pub const ALL: [WorkerErrorType; 8] = [
        WorkerErrorType::UnknownProcessType,
        WorkerErrorType::UnknownState,
        WorkerErrorType::UnknownRpc,
        WorkerErrorType::UndecodableInput,
        WorkerErrorType::NotImplemented,
        WorkerErrorType::InvalidRequest,
        WorkerErrorType::Unauthorized,
        WorkerErrorType::UserCodeError,
    ];

    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkerErrorType::UnknownProcessType => "UNKNOWN_PROCESS_TYPE",
            WorkerErrorType::UnknownState => "UNKNOWN_STATE",
            WorkerErrorType::UnknownRpc => "UNKNOWN_RPC",
            WorkerErrorType::UndecodableInput => "UNDECODABLE_INPUT",
            WorkerErrorType::NotImplemented => "NOT_IMPLEMENTED",
            WorkerErrorType::InvalidRequest => "INVALID_REQUEST",
            WorkerErrorType::Unauthorized => "UNAUTHORIZED",
            WorkerErrorType::UserCodeError => "USER_CODE_ERROR",
        }
    }

    /// The kind named `text` exactly; `None` for any other text.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == text)
    }

    /// Whether another attempt of the same call may succeed: `false` for the kinds that
    /// say the worker cannot serve the call at all as it stands (see the table above).
    pub fn retryable(self) -> bool {
        !matches!(
            self,
            WorkerErrorType::UnknownProcessType
                | WorkerErrorType::UnknownState
                | WorkerErrorType::UnknownRpc
                | WorkerErrorType::UndecodableInput
                | WorkerErrorType::NotImplemented
        )
    }

    /// The status an SDK answers with.
    pub fn status(self) -> u16 {
        match self {
            WorkerErrorType::Unauthorized => 401,
            WorkerErrorType::UserCodeError => 500,
            _ => 400,
        }
    }
}

impl std::fmt::Display for WorkerErrorType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(error_type: Option<&str>) -> WorkerErrorResponse {
        WorkerErrorResponse {
            detail: "d".into(),
            error_type: error_type.map(str::to_owned),
        }
    }

    #[test]
    fn only_the_kinds_that_can_never_succeed_are_non_retryable() {
        let never: Vec<&str> = WorkerErrorType::ALL
            .into_iter()
            .filter(|k| !k.retryable())
            .map(WorkerErrorType::as_str)
            .collect();
        assert_eq!(
            never,
            [
                "UNKNOWN_PROCESS_TYPE",
                "UNKNOWN_STATE",
                "UNKNOWN_RPC",
                "UNDECODABLE_INPUT",
                "NOT_IMPLEMENTED"
            ]
        );
        for kind in never {
            assert!(answer(Some(kind)).non_retryable().is_some(), "{kind}");
        }
        for retried in [
            None,
            Some("INVALID_REQUEST"),
            Some("UNAUTHORIZED"),
            Some("USER_CODE_ERROR"),
            Some("unknown_state"),
            Some("SOMETHING_NEW"),
            Some(""),
        ] {
            assert_eq!(answer(retried).non_retryable(), None, "{retried:?}");
        }
    }

    #[test]
    fn names_round_trip_and_match_serde() {
        for kind in WorkerErrorType::ALL {
            assert_eq!(WorkerErrorType::parse(kind.as_str()), Some(kind));
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::json!(kind.as_str())
            );
        }
    }

    #[test]
    fn an_unknown_error_type_still_parses() {
        let body: WorkerErrorResponse =
            serde_json::from_str(r#"{"detail": "x", "errorType": "FROM_THE_FUTURE"}"#).unwrap();
        assert_eq!(body.error_type.as_deref(), Some("FROM_THE_FUTURE"));
        let body: WorkerErrorResponse = serde_json::from_str(r#"{"detail": "x"}"#).unwrap();
        assert_eq!(body.error_type, None);
    }
}
