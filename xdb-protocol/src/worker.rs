//! The worker API: what XDB sends to the user's service, and what it answers.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::common::*;

/// Identifies the call a worker is serving. Worker calls are at-least-once: a worker
/// makes its own side effects safe with `idempotencyKey`, which is the same for every
/// attempt of one state API call and differs between calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Context {
    pub process_id: String,
    pub process_execution_id: String,
    pub process_type: String,
    /// `stateId-executionNumber`; absent for RPCs.
    #[serde(default)]
    pub state_execution_id: Option<String>,
    /// The 1-based attempt of this call.
    pub attempt: u32,
    /// When the first attempt started, ms since the epoch.
    pub first_attempt_timestamp_ms: i64,
    pub process_started_timestamp_ms: i64,
    /// `executionId/stateId-number/api`: stable across the attempts of one call.
    pub idempotency_key: String,
}

/// How the commands of a waitUntil are combined.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CommandWaitingType {
    /// Go on when any one command completes.
    #[default]
    AnyOfCompletion,
    /// Go on when every command completed.
    AllOfCompletion,
}

/// A durable timer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimerCommand {
    pub delay_in_seconds: u32,
}

/// Wait for `count` messages (default 1) on a local queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueCommand {
    pub queue_name: String,
    #[serde(default)]
    pub count: Option<u32>,
}

/// What a state waits for before its execute is called.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandRequest {
    #[serde(default)]
    pub waiting_type: CommandWaitingType,
    #[serde(default)]
    pub timer_commands: Vec<TimerCommand>,
    #[serde(default)]
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
    pub messages: Vec<LocalQueueMessage>,
}

/// Results of the commands, in the order of the command request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandResults {
    #[serde(default)]
    pub timer_results: Vec<TimerResult>,
    #[serde(default)]
    pub local_queue_results: Vec<LocalQueueResult>,
}

/// Attributes loaded for a call, per the loading policy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadedAttributes {
    #[serde(default)]
    pub global_attributes: Vec<GlobalAttributeValue>,
    #[serde(default)]
    pub local_attributes: Vec<LocalAttributeValue>,
}

/// Writes a worker asks for, applied in the transaction that records its answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttributeWrites {
    /// Columns of the process's global-attribute row.
    #[serde(default)]
    pub global_attributes: Vec<GlobalAttributeValue>,
    #[serde(default)]
    pub local_attributes: Vec<LocalAttributeValue>,
}

/// `POST {workerUrl}/api/v1/xdb/worker/async-state/wait-until`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AsyncStateWaitUntilRequest {
    pub context: Context,
    pub process_type: String,
    pub state_id: String,
    #[serde(default)]
    pub state_input: Option<EncodedObject>,
    #[serde(default)]
    pub attributes: LoadedAttributes,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AsyncStateWaitUntilResponse {
    #[serde(default)]
    pub command_request: CommandRequest,
    #[serde(default)]
    pub writes: AttributeWrites,
    #[serde(default)]
    pub publish_to_local_queue: Vec<LocalQueueMessage>,
}

/// `POST {workerUrl}/api/v1/xdb/worker/async-state/execute`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AsyncStateExecuteRequest {
    pub context: Context,
    pub process_type: String,
    pub state_id: String,
    #[serde(default)]
    pub state_input: Option<EncodedObject>,
    #[serde(default)]
    pub command_results: CommandResults,
    #[serde(default)]
    pub attributes: LoadedAttributes,
}

/// How a thread ends.
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
    /// The process result (complete) or failure details (fail).
    #[serde(default)]
    pub output: Option<EncodedObject>,
}

/// What follows an execute: next states (several run as parallel threads) or a close.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StateDecision {
    #[serde(default)]
    pub next_states: Vec<StateMovement>,
    #[serde(default)]
    pub thread_close_decision: Option<ThreadCloseDecision>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AsyncStateExecuteResponse {
    pub state_decision: StateDecision,
    #[serde(default)]
    pub writes: AttributeWrites,
    #[serde(default)]
    pub publish_to_local_queue: Vec<LocalQueueMessage>,
}

/// `POST {workerUrl}/api/v1/xdb/worker/process/rpc`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessRpcWorkerRequest {
    pub context: Context,
    pub process_type: String,
    pub rpc_name: String,
    #[serde(default)]
    pub input: Option<EncodedObject>,
    #[serde(default)]
    pub attributes: LoadedAttributes,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessRpcWorkerResponse {
    #[serde(default)]
    pub output: Option<EncodedObject>,
    #[serde(default)]
    pub writes: AttributeWrites,
    #[serde(default)]
    pub publish_to_local_queue: Vec<LocalQueueMessage>,
    /// New threads the RPC starts.
    #[serde(default)]
    pub append_next_states: Vec<StateMovement>,
}

/// The body a worker returns with a non-2xx status when user code failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkerErrorResponse {
    pub detail: String,
    #[serde(default)]
    pub error_type: Option<String>,
}
