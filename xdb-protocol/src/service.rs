//! The service API: what clients send to the API service.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::common::*;

/// What to do when a process id already has an execution.
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
    pub initial_write: Vec<GlobalAttributeValue>,
}

/// Options of a process execution.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessStartConfig {
    /// The whole execution times out after this many seconds; 0 or absent means never.
    #[serde(default)]
    pub timeout_seconds: Option<u32>,
    #[serde(default)]
    pub id_reuse_policy: Option<ProcessIdReusePolicy>,
    #[serde(default)]
    pub global_attribute_config: Option<GlobalAttributeConfig>,
    /// Local attributes written in the start transaction.
    #[serde(default)]
    pub local_attribute_initial_write: Vec<LocalAttributeValue>,
}

/// `POST .../start`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionStartRequest {
    pub process_id: String,
    pub process_type: String,
    /// Base URL of the worker that hosts this process type.
    pub worker_url: String,
    /// The first state; absent means the process starts with no state running.
    #[serde(default)]
    pub start_state_id: Option<String>,
    #[serde(default)]
    pub start_state_input: Option<EncodedObject>,
    #[serde(default)]
    pub start_state_config: Option<AsyncStateConfig>,
    #[serde(default)]
    pub process_start_config: Option<ProcessStartConfig>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionStartResponse {
    pub process_execution_id: String,
}

/// How `stop` ends an execution.
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
    pub process_id: String,
    #[serde(default)]
    pub stop_type: ProcessExecutionStopType,
    #[serde(default)]
    pub reason: Option<String>,
}

/// `POST .../describe`: the current execution of a process id, or a given execution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionDescribeRequest {
    pub process_id: String,
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
    #[serde(default)]
    pub result: Option<EncodedObject>,
    #[serde(default)]
    pub failure: Option<ProcessFailure>,
    #[serde(default)]
    pub global_attribute_config: Option<GlobalAttributeConfig>,
}

/// `POST .../publish-to-local-queue`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublishToLocalQueueRequest {
    pub process_id: String,
    /// 1 to 1000 messages.
    #[schema(min_items = 1, max_items = 1000)]
    pub messages: Vec<LocalQueueMessage>,
}

/// `POST .../wait-for-completion`: long poll until the current execution closes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionWaitForCompletionRequest {
    pub process_id: String,
    /// How long to wait, in seconds (default 30, at most 300).
    #[serde(default)]
    pub timeout_seconds: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionWaitForCompletionResponse {
    pub process_execution_id: String,
    pub status: ProcessStatus,
    /// True when the wait ended before the execution closed.
    pub timed_out: bool,
    #[serde(default)]
    pub result: Option<EncodedObject>,
    #[serde(default)]
    pub failure: Option<ProcessFailure>,
}

/// `POST .../rpc`: a synchronous call into the worker for the current execution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionRpcRequest {
    pub process_id: String,
    pub rpc_name: String,
    #[serde(default)]
    pub input: Option<EncodedObject>,
    /// Timeout of the worker call in seconds (default 10, at most 60).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 60)]
    pub timeout_seconds: Option<u32>,
    #[serde(default)]
    pub global_attribute_loading: Option<GlobalAttributeLoading>,
    #[serde(default)]
    pub local_attribute_loading: Option<LocalAttributeLoading>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionRpcResponse {
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
    pub filter: ProcessExecutionListFilter,
    /// Page size (default 100, at most 1000).
    #[serde(default)]
    pub page_size: Option<u32>,
    #[serde(default)]
    pub next_page_token: Option<String>,
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
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionListResponse {
    pub executions: Vec<ProcessExecutionSummary>,
    /// Absent on the last page.
    #[serde(default)]
    pub next_page_token: Option<String>,
}

/// `POST .../history`: the events of the current (or a given) execution, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionHistoryRequest {
    pub process_id: String,
    #[serde(default)]
    pub process_execution_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEvent {
    pub event_id: i64,
    pub event_timestamp_ms: i64,
    /// `PROCESS_STARTED`, `WAIT_UNTIL_COMPLETED`, `EXECUTE_COMPLETED`, `TIMER_FIRED`, …
    pub event_type: String,
    #[schema(value_type = Object)]
    pub details: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionHistoryResponse {
    pub process_execution_id: String,
    pub events: Vec<HistoryEvent>,
}
