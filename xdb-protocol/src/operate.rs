//! The operator's calls: why an execution is not progressing (`states`), and the
//! controls that unstick it (retry now, give up, pause, resume) or reorder it
//! (reprioritize).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{
    AsyncStateConfig, CommandResults, CommandWaitingType, EncodedObject, LocalQueueCommandStatus,
    ProcessStatus, StateApiName, TimerStatus,
};

/// `POST .../states`: the state executions of the current (or a given) execution.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionStatesRequest {
    pub process_id: String,
    /// An execution of the process id (as the start answered it); absent: the latest.
    #[serde(default)]
    pub process_execution_id: Option<String>,
}

/// Why an execution is paused, and since when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PauseInfo {
    /// Milliseconds since the Unix epoch.
    pub since_timestamp_ms: i64,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub identity: Option<String>,
    /// Set when the pause is the type's `maxRunningExecutions` holding a new execution
    /// (`PENDING`): the concurrency key it waits on (`""` for starts without one). It
    /// starts by itself when a slot frees; an operator cannot resume it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_on_key: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionStatesResponse {
    pub process_execution_id: String,
    pub status: ProcessStatus,
    /// Set while the execution is paused: nothing of it is called until it resumes.
    #[serde(default)]
    pub paused: Option<PauseInfo>,
    /// Every state execution, in the order they started.
    pub states: Vec<StateExecutionInfo>,
}

/// Where a state execution is in its life:
/// - `WAIT_UNTIL_RUNNING`: its waitUntil is due, waiting for a retry, or being called;
/// - `WAITING_COMMANDS`: its waitUntil answered; it waits for its commands (`waitingFor`);
/// - `EXECUTE_RUNNING`: its execute is due, waiting for a retry, or being called;
/// - `COMPLETED`;
/// - `FAILED`: its waitUntil or execute failed for good;
/// - `ABORTED`: ended by the process closing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StateExecutionStatus {
    WaitUntilRunning,
    WaitingCommands,
    ExecuteRunning,
    Completed,
    Failed,
    Aborted,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StateExecutionInfo {
    /// `stateId-number`, as history events name it.
    pub state_execution_id: String,
    pub state_id: String,
    pub status: StateExecutionStatus,
    /// Milliseconds since the Unix epoch.
    pub started_timestamp_ms: i64,
    /// The waitUntil or execute call the state is waiting on, if any.
    #[serde(default)]
    pub pending_call: Option<PendingCall>,
    /// Its latest failed attempt, if any attempt failed.
    #[serde(default)]
    pub last_failure: Option<StateFailure>,
    /// What a `WAITING_COMMANDS` state waits for.
    #[serde(default)]
    pub waiting_for: Option<WaitingFor>,
    /// The results of its commands so far.
    #[serde(default)]
    pub command_results: Option<CommandResults>,
}

/// Where a state's pending waitUntil or execute call is:
/// - `SCHEDULED`: due at `dueTimestampMs` (in the past: waiting for an async-service
///   instance);
/// - `RUNNING`: an async-service instance holds it: the worker is being called;
/// - `PARKED`: set aside until someone acts: see `parkedReason`, and `retry-now`;
/// - `PAUSED`: held while the execution is paused; due again when it resumes;
/// - `FLOW_LIMITED`: held back by a flow limit (`flow-limits`) until `dueTimestampMs`;
///   it costs no attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CallPhase {
    Scheduled,
    Running,
    Parked,
    Paused,
    FlowLimited,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingCall {
    pub api: StateApiName,
    /// The attempt that is running or comes next (1-based).
    pub attempt: u32,
    pub phase: CallPhase,
    /// When the attempt is (or was) due, ms since the Unix epoch: after a failed attempt,
    /// the end of its backoff.
    pub due_timestamp_ms: i64,
    /// Why it was parked (`PARKED` only): the database's last refusal, or for
    /// `NON_RETRYABLE_WORKER_ERROR` the worker's `errorType: detail`.
    #[serde(default)]
    pub parked_reason: Option<String>,
    /// What parked it (`PARKED` only).
    #[serde(default)]
    pub parked_kind: Option<TaskParkedReason>,
}

/// A failed attempt of a state's waitUntil or execute.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StateFailure {
    pub api: StateApiName,
    pub attempt: u32,
    /// How it failed: the worker's status and detail, a timeout, an unusable answer.
    pub error: String,
    /// Milliseconds since the Unix epoch.
    pub timestamp_ms: i64,
}

/// What a waiting state's commands wait for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaitingFor {
    pub waiting_type: CommandWaitingType,
    /// In the order of the state's timer commands.
    pub timers: Vec<TimerWait>,
    /// In the order of the state's local-queue commands.
    pub local_queues: Vec<LocalQueueWait>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimerWait {
    pub delay_in_seconds: u32,
    /// When it fires, ms since the Unix epoch; absent once it fired or was skipped.
    #[serde(default)]
    pub due_timestamp_ms: Option<i64>,
    /// Set once it fired or was skipped.
    #[serde(default)]
    pub status: Option<TimerStatus>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueWait {
    pub queue_name: String,
    /// Messages the command waits for.
    pub count: u32,
    /// Messages queued now and not yet consumed (by any state).
    pub queued: u64,
    /// Set once the command was received or skipped.
    #[serde(default)]
    pub status: Option<LocalQueueCommandStatus>,
}

/// `POST .../retry-now`, `.../give-up`, `.../pause`, `.../resume`, `.../reprioritize`: an
/// operator's control of the current (or a given) execution, recorded in its history
/// with `reason` and `identity`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionControlRequest {
    /// Idempotency key: see *Idempotent requests* in the document's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    pub process_id: String,
    /// An execution of the process id; absent: the latest.
    #[serde(default)]
    pub process_execution_id: Option<String>,
    /// retry-now and give-up: only this state execution (`stateId-number`); absent:
    /// every state the control applies to. Refused by pause and resume.
    #[serde(default)]
    pub state_execution_id: Option<String>,
    /// Why; kept in the history event.
    #[serde(default)]
    pub reason: Option<String>,
    /// Who asks (a person or a tool); kept in the history event.
    #[serde(default)]
    pub identity: Option<String>,
    /// reprioritize (required there): the new priority, fairness key or weight. Refused
    /// by the other controls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reprioritize: Option<Reprioritization>,
}

/// What `reprioritize` changes of an execution: how its waiting tasks, and those it
/// writes later, are ordered among others. A field left out stays as it is; at least
/// one must be given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Reprioritization {
    /// 1 (claimed first) to 5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 5)]
    pub priority: Option<u8>,
    /// The new fairness key (1 to 255 characters); `""` removes the execution's key,
    /// and its weight with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fairness_key: Option<String>,
    /// The weight of the execution's key (the new one, or the one it has): 1 to 1,000.
    /// A new key without one keeps the execution's weight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 1000)]
    pub fairness_weight: Option<u32>,
}

/// How an execution's tasks are ordered among waiting ones: its priority, and its
/// fairness key with its weight (absent: none).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClaimOrder {
    pub priority: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fairness_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fairness_weight: Option<u32>,
}

/// `REPRIORITIZED`: an operator changed the execution's priority or fairness key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReprioritizedDetails {
    pub before: ClaimOrder,
    pub after: ClaimOrder,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub identity: Option<String>,
    /// The state executions whose waiting calls were reordered.
    pub state_execution_ids: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionControlResponse {
    /// The state executions the control acted on (`stateId-number`); for pause and
    /// resume, those whose calls were held or released; for reprioritize, those whose
    /// waiting calls were reordered.
    pub state_execution_ids: Vec<String>,
}

/// `RETRY_REQUESTED`, `GIVE_UP_REQUESTED`, `PAUSED`, `RESUMED`: an operator's control.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ControlDetails {
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub identity: Option<String>,
    /// The state executions it acted on.
    pub state_execution_ids: Vec<String>,
}

/// Why a task was parked:
/// - `REFUSED`: the database refused its transition, too many times in a row for a
///   transient failure (a deadlock, a lost connection) or once for one that would come
///   back the same (`error` says which);
/// - `NON_RETRYABLE_WORKER_ERROR`: the worker answered a waitUntil or execute with an
///   `errorType` that can never succeed (see `WorkerErrorType`), after one attempt.
///
/// Either waits for `retry-now` (runs it again) or `give-up` (the state's failure
/// recovery).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TaskParkedReason {
    #[default]
    Refused,
    NonRetryableWorkerError,
}

/// `TASK_PARKED`: a task was set aside until an operator acts (`retry-now`, `give-up`):
/// the database refused its transition too many times in a row, or the worker answered
/// that the call can never succeed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskParkedDetails {
    /// Absent for a process-timeout task.
    #[serde(default)]
    pub state_execution_id: Option<String>,
    /// `WAIT_UNTIL`, `EXECUTE`, `TIMER` or `PROCESS_TIMEOUT`.
    pub task_type: String,
    /// Absent in events of older releases: `REFUSED`.
    #[serde(default)]
    #[schema(default = TaskParkedReason::default)]
    pub reason: TaskParkedReason,
    /// How many times in a row the database refused it (0 for
    /// `NON_RETRYABLE_WORKER_ERROR`).
    pub refusals: u32,
    /// The last refusal, or the worker's `detail`.
    pub error: String,
    /// `NON_RETRYABLE_WORKER_ERROR`: the worker's `errorType`.
    #[serde(default)]
    pub worker_error_type: Option<String>,
}

/// The identity and reason a control may carry are kept short.
pub const MAX_CONTROL_TEXT: usize = 1000;

/// `POST .../reset`: restarts an execution from a named state. A running execution's
/// open state executions are aborted (their calls, timers and waits cancelled; queued
/// local-queue messages stay) and the state starts with `stateInput`; a closed one is
/// continued by a new execution of the same process id, linked to it (`resetFrom`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionResetRequest {
    /// Idempotency key: see *Idempotent requests* in the document's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    pub process_id: String,
    /// An execution of the process id; absent: the latest.
    #[serde(default)]
    pub process_execution_id: Option<String>,
    /// The state to continue from.
    pub state_id: String,
    #[serde(default)]
    pub state_input: Option<EncodedObject>,
    /// The state's options; absent: those its registered definition declares, else
    /// the defaults.
    #[serde(default)]
    pub state_config: Option<AsyncStateConfig>,
    /// Why; kept in the history event.
    #[serde(default)]
    pub reason: Option<String>,
    /// Who asks (a person or a tool); kept in the history event.
    #[serde(default)]
    pub identity: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionResetResponse {
    /// The execution that continues: the same one when it was running, else the new one.
    pub process_execution_id: String,
    /// Whether a new execution was started (the reset one was closed).
    pub new_execution: bool,
    /// The state execution the reset started (`stateId-number`).
    pub state_execution_id: String,
}
