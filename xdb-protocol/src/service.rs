//! The service API: what clients send to the API service.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::common::*;
use crate::history::HistoryEventType;

/// What a start does when the process id already has an execution (the latest one
/// decides); a process id seen for the first time always starts. Absent means
/// `ALLOW_IF_NO_RUNNING`.
/// - `ALLOW_IF_NO_RUNNING`: start unless the latest execution is still RUNNING.
/// - `ALLOW_IF_PREVIOUS_EXIT_ABNORMALLY`: start only if the latest execution FAILED,
///   TIMEOUT or TERMINATED (not after COMPLETED, not while RUNNING).
/// - `DISALLOW_REUSE`: never start a second execution for the process id.
/// - `TERMINATE_IF_RUNNING`: terminate the running execution, if any, in the start's
///   transaction, and start.
///
/// A refused start answers 409 `PROCESS_ALREADY_STARTED` and changes nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ProcessIdReusePolicy {
    /// Start unless the latest execution is still running.
    #[default]
    AllowIfNoRunning,
    /// Start only if the latest execution failed, timed out or was terminated.
    AllowIfPreviousExitAbnormally,
    /// Never start a second execution for the same process id.
    DisallowReuse,
    /// Terminate the running execution, if any, and start a new one.
    TerminateIfRunning,
}

/// The global-attribute row of a process: one row of a user table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GlobalAttributeConfig {
    /// The user table, optionally schema-qualified (`schema.table`).
    pub table_name: String,
    /// The primary-key column and the value that selects this process's row.
    pub primary_key: GlobalAttributeValue,
    /// Columns upserted into the row in the start transaction (the key is added).
    #[serde(default)]
    #[schema(default = json!([]))]
    pub initial_write: Vec<GlobalAttributeValue>,
}

/// Options of a process execution.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessStartConfig {
    /// The whole execution times out (status `TIMEOUT`) after this many seconds; 0 or
    /// absent means never.
    #[serde(default)]
    pub timeout_seconds: Option<u32>,
    /// Absent: `ALLOW_IF_NO_RUNNING`.
    #[serde(default)]
    pub id_reuse_policy: Option<ProcessIdReusePolicy>,
    /// The business row holding the global attributes; absent: the process has none.
    #[serde(default)]
    pub global_attribute_config: Option<GlobalAttributeConfig>,
    /// Local attributes written in the start transaction.
    #[serde(default)]
    #[schema(default = json!([]))]
    pub local_attribute_initial_write: Vec<LocalAttributeValue>,
    /// The key the type's `maxRunningExecutions` counts this execution under (a
    /// customer's id, say); at most 255 characters. Absent: the key every start
    /// without one shares. Ignored by a type without that limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency_key: Option<String>,
    /// How soon the execution's tasks are claimed when tasks wait: 1 (first) to 5
    /// (last); absent: 3. Inherited by every task of the execution, and by an
    /// execution a reset starts from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 5)]
    pub priority: Option<u8>,
    /// The key claims share the execution's priority by (a tenant, a customer's id; at
    /// most 255 characters): when tasks of several keys wait at one priority, each key
    /// is served in turn, so one key's backlog never starves another's next task.
    /// Absent: the key every start without one shares. Inherited like the priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fairness_key: Option<String>,
    /// How many tasks the fairness key takes in each turn, 1 to 1,000; absent: 1. Needs
    /// `fairnessKey`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 1000)]
    pub fairness_weight: Option<u32>,
}

/// Bounds and default of `processStartConfig.priority`: 1 is claimed first.
pub mod priority {
    /// The most urgent priority.
    pub const HIGHEST: u8 = 1;
    /// The least urgent priority.
    pub const LOWEST: u8 = 5;
    /// The priority of a start that names none.
    pub const DEFAULT: u8 = 3;
}

/// Bounds and default of `processStartConfig.fairnessWeight`.
pub mod fairness {
    /// The weight of a start that names none, and of the key starts without one share.
    pub const DEFAULT_WEIGHT: u32 = 1;
    /// The largest weight: tasks a key takes in one turn.
    pub const MAX_WEIGHT: u32 = 1000;
}

/// `POST .../start`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionStartRequest {
    /// Idempotency key: see *Idempotent requests* in the document's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    pub process_id: String,
    pub process_type: String,
    /// Base URL of the worker that hosts this process type. Absent or empty: the URL of
    /// the deployment that registered the process type (400 when none did).
    #[serde(default)]
    #[schema(default = "")]
    pub worker_url: String,
    /// The first state; absent means the process starts with no state running (RPCs
    /// may start threads later).
    #[serde(default)]
    pub start_state_id: Option<String>,
    /// The first state's input; absent means none (read as JSON `null`).
    #[serde(default)]
    pub start_state_input: Option<EncodedObject>,
    /// The first state's options; absent: the registered definition's options for the
    /// state (`skipWaitUntil` from whether it has a waitUntil), or every default of
    /// `AsyncStateConfig` when the process type is not registered.
    #[serde(default)]
    pub start_state_config: Option<AsyncStateConfig>,
    /// Absent: every default of `ProcessStartConfig`.
    #[serde(default)]
    pub process_start_config: Option<ProcessStartConfig>,
}

/// The new execution; follow it with the operations this response links to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionStartResponse {
    pub process_execution_id: String,
}

/// How `stop` ends an execution: `TERMINATE` (the default) closes it as TERMINATED,
/// `FAIL` as FAILED.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ProcessExecutionStopType {
    #[default]
    Terminate,
    Fail,
}

/// `POST .../stop`: ends the current execution of a process id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionStopRequest {
    /// Idempotency key: see *Idempotent requests* in the document's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    pub process_id: String,
    /// Only if this execution is the one to stop (the process id's current one); absent:
    /// whichever is current.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_execution_id: Option<String>,
    /// Default `TERMINATE`.
    #[serde(default)]
    #[schema(default = ProcessExecutionStopType::default)]
    pub stop_type: ProcessExecutionStopType,
    /// Kept as the failure's `details`.
    #[serde(default)]
    pub reason: Option<String>,
}

/// `POST .../describe`: the current execution of a process id, or a given execution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionDescribeRequest {
    pub process_id: String,
    /// An execution of the process id (as the start answered it); absent: the latest.
    #[serde(default)]
    pub process_execution_id: Option<String>,
}

/// Why an execution failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessFailure {
    pub reason: String,
    #[serde(default)]
    pub details: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionDescribeResponse {
    pub process_execution_id: String,
    pub process_id: String,
    pub process_type: String,
    pub worker_url: String,
    pub status: ProcessStatus,
    /// Milliseconds since the Unix epoch.
    pub start_timestamp_ms: i64,
    #[serde(default)]
    pub close_timestamp_ms: Option<i64>,
    /// State executions not finished yet (the running threads).
    pub running_state_executions: i32,
    /// The completed process's output, if it had one.
    #[serde(default)]
    pub result: Option<EncodedObject>,
    /// Why the execution failed, timed out or was terminated.
    #[serde(default)]
    pub failure: Option<ProcessFailure>,
    #[serde(default)]
    pub global_attribute_config: Option<GlobalAttributeConfig>,
    /// Set while an operator has paused the execution.
    #[serde(default)]
    pub paused: Option<crate::PauseInfo>,
    /// Tasks set aside after the database refused them too many times in a row; they
    /// wait for `retry-now` (see `states`).
    #[serde(default)]
    #[schema(default = 0)]
    pub parked_tasks: u32,
    /// The priority its tasks are claimed by (`processStartConfig.priority`).
    #[serde(default = "default_priority")]
    #[schema(default = 3, minimum = 1, maximum = 5)]
    pub priority: u8,
    /// The key claims share its priority by (`processStartConfig.fairnessKey`); absent
    /// when its start named none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fairness_key: Option<String>,
    /// Tasks its fairness key takes in each turn (`processStartConfig.fairnessWeight`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 1000)]
    pub fairness_weight: Option<u32>,
}

fn default_priority() -> u8 {
    priority::DEFAULT
}

/// `POST .../publish-to-local-queue`: queues messages for the current execution, in
/// order, in one transaction; a waiting state receives them at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublishToLocalQueueRequest {
    /// Idempotency key: see *Idempotent requests* in the document's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    pub process_id: String,
    /// Only if this execution is the process id's current one; absent: whichever is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_execution_id: Option<String>,
    /// 1 to 1000 messages.
    #[schema(min_items = 1, max_items = 1000)]
    pub messages: Vec<LocalQueueMessage>,
}

/// `POST .../wait-for-completion`: long poll until the current execution closes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionWaitForCompletionRequest {
    pub process_id: String,
    /// How long to wait, in seconds: at most the service's `api.max_wait_seconds` (300
    /// by default; the maximum below is this instance's), default 30 or that maximum if
    /// lower. 0 answers at once.
    #[serde(default)]
    pub timeout_seconds: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionWaitForCompletionResponse {
    pub process_execution_id: String,
    pub status: ProcessStatus,
    /// True when the wait ended before the execution closed (`status` is then RUNNING);
    /// ask again to keep waiting.
    pub timed_out: bool,
    #[serde(default)]
    pub result: Option<EncodedObject>,
    #[serde(default)]
    pub failure: Option<ProcessFailure>,
}

/// `POST .../rpc`: a synchronous call into the worker for the current execution, in one
/// transaction: the attributes are loaded (and locked), the worker is called once (never
/// retried), and its writes, messages and new threads commit with its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionRpcRequest {
    pub process_id: String,
    pub rpc_name: String,
    /// Absent: no input (read as JSON `null`).
    #[serde(default)]
    pub input: Option<EncodedObject>,
    /// Timeout of the worker call in seconds (default 10, at most 60).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 60)]
    pub timeout_seconds: Option<u32>,
    /// Columns read from the business row before the call; absent: none. Needs the
    /// process to have a `globalAttributeConfig` (400 otherwise).
    #[serde(default)]
    pub global_attribute_loading: Option<GlobalAttributeLoading>,
    /// Local attributes read before the call; absent: none.
    #[serde(default)]
    pub local_attribute_loading: Option<LocalAttributeLoading>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionRpcResponse {
    /// The worker's output; absent when it had none.
    #[serde(default)]
    pub output: Option<EncodedObject>,
}

/// Filters of `list`; all present filters must match.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionListFilter {
    #[serde(default)]
    pub status: Option<ProcessStatus>,
    #[serde(default)]
    pub process_type: Option<String>,
    #[serde(default)]
    pub process_id: Option<String>,
    /// Inclusive lower bound of the start time, ms since the epoch.
    #[serde(default)]
    pub start_time_min_ms: Option<i64>,
    /// Exclusive upper bound of the start time, ms since the epoch.
    #[serde(default)]
    pub start_time_max_ms: Option<i64>,
}

/// `POST .../list`: newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionListRequest {
    #[serde(default)]
    #[schema(default = json!({}))]
    pub filter: ProcessExecutionListFilter,
    /// Page size (default 100, at most 1000).
    #[serde(default)]
    pub page_size: Option<u32>,
    #[serde(default)]
    pub next_page_token: Option<String>,
    /// Only executions matching this filter tree too (over execution fields and, with
    /// `filter.processType`, the business row's columns); absent: `filter` alone. A
    /// page token is only valid with the same filters it was issued for.
    #[serde(default, rename = "where")]
    pub where_: Option<crate::FilterNode>,
    /// The business table of `filter.processType`, when no registered definition
    /// declares it (the definition's table is used when there is one).
    #[serde(default)]
    pub business_table: Option<crate::BusinessTableRef>,
    /// With `where`: answer the database's plan for the page's statement (`plan`)
    /// instead of running it, so no executions. Says whether an index serves the
    /// filter, and which to create when none does.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[schema(default = false)]
    pub explain: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionSummary {
    pub process_execution_id: String,
    pub process_id: String,
    pub process_type: String,
    pub status: ProcessStatus,
    pub start_timestamp_ms: i64,
    #[serde(default)]
    pub close_timestamp_ms: Option<i64>,
    /// Whether an operator has paused it (or its type's `maxRunningExecutions` holds it:
    /// see `pending`).
    #[serde(default)]
    #[schema(default = false)]
    pub paused: bool,
    /// Whether it is `PENDING`: held by its type's `maxRunningExecutions`, waiting for a
    /// running slot of its concurrency key (`paused` is true too).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[schema(default = false)]
    pub pending: bool,
    /// Set while a state call of it waits out a retry's backoff after failing.
    #[serde(default)]
    pub backing_off: Option<BackingOff>,
    /// Its start's priority, 1 (claimed first) to 5; 3 from servers before priorities.
    #[serde(default = "default_priority")]
    #[schema(default = 3, minimum = 1, maximum = 5)]
    pub priority: u8,
}

/// The database's plan for a filtered list's statement, and what it means for indexes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueryPlan {
    /// Tables the statement reads in full, no index serving it: the business table
    /// (by its name) or `xdb_sys_process_executions`.
    pub full_scans: Vec<String>,
    /// What would let an index serve the filter; empty when indexes serve it.
    pub advice: Vec<String>,
    /// The database's own plan, as `EXPLAIN` in JSON gives it.
    pub plan: serde_json::Value,
}

/// A state call waiting out its retry's backoff: which, its next attempt and when, and
/// why the last one failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackingOff {
    pub state_execution_id: String,
    /// The attempt it waits to make (2 or more).
    pub attempt: i32,
    /// When, in milliseconds since the Unix epoch.
    pub next_attempt_timestamp_ms: i64,
    /// The last failed attempt's error, as the history records it.
    #[serde(default)]
    pub last_error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionListResponse {
    pub executions: Vec<ProcessExecutionSummary>,
    /// The plan, when the request asked to `explain` it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<QueryPlan>,
    /// Absent on the last page.
    #[serde(default)]
    pub next_page_token: Option<String>,
}

/// `POST .../history`: the events of the current (or a given) execution, oldest first,
/// a page at a time.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionHistoryRequest {
    pub process_id: String,
    #[serde(default)]
    pub process_execution_id: Option<String>,
    /// Only events after this one: the previous page's `nextAfterEventId`.
    #[serde(default)]
    pub after_event_id: Option<i64>,
    /// Events per page, up to the service's page-size limit (1000 when absent).
    #[serde(default)]
    pub page_size: Option<u32>,
    /// Only events of these types (every type when absent or empty).
    #[serde(default)]
    #[schema(max_items = 10)]
    #[schema(default = json!([]))]
    pub event_types: Vec<HistoryEventType>,
}

/// One event of an execution's history. The document describes it as one schema per
/// event type (`HistoryEventType`), each with its own `details`; here both are kept as
/// read from the database (see `HistoryEventType::parse` and the details types).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEvent {
    pub event_id: i64,
    pub event_timestamp_ms: i64,
    #[schema(value_type = HistoryEventType)]
    pub event_type: String,
    #[schema(value_type = Object)]
    pub details: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionHistoryResponse {
    pub process_execution_id: String,
    pub events: Vec<HistoryEvent>,
    /// Set when more events follow: pass it as `afterEventId` for the next page.
    #[serde(default)]
    pub next_after_event_id: Option<i64>,
}

/// The answer of calls that return nothing (stop, publish, internal notify): an empty
/// JSON object, so that a client can always parse the body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({}))]
pub struct EmptyResponse {}
