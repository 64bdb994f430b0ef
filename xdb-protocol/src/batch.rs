//! Batch operations: one operation applied to every execution a filter selects, as a
//! durable job the async service drives at a requested rate.
//!
//! A batch walks the executions its selection matches (the `where` tree of `list` and
//! `count`), newest first, and applies its operation to each at most once: what it did
//! to an execution is recorded in the same transaction as the operation itself, so a
//! batch resumed after a crash neither repeats nor loses one. Executions started after
//! the batch are not part of it.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{AsyncStateConfig, DeploymentRef, EncodedObject, LocalQueueMessage};

/// Fastest rate a batch may ask for, executions per second.
pub const MAX_BATCH_RATE: u32 = 10_000;
/// The rate of a batch that names none, executions per second.
pub const DEFAULT_BATCH_RATE: u32 = 100;
/// Most failures a batch's description lists (the counts count them all).
pub const MAX_BATCH_FAILURES_SHOWN: usize = 20;

/// What a batch does to each execution it selects:
/// - `TERMINATE`, `FAIL`: stop it (as `stop` with that `stopType`);
/// - `RETRY_NOW`, `GIVE_UP`, `PAUSE`, `RESUME`: the operator's control;
/// - `REPRIORITIZE`: change its priority or fairness key to `reprioritize`;
/// - `PUBLISH_TO_LOCAL_QUEUE`: publish `messages` to it;
/// - `RESET`: reset it to `reset.stateId`;
/// - `MOVE_TO_DEPLOYMENT`: move it to `moveTo` (the selection must name the process type).
///
/// An execution the operation does not apply to (closed, not paused, nothing to retry)
/// is skipped, with the reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BatchOperation {
    Terminate,
    Fail,
    RetryNow,
    GiveUp,
    Pause,
    Resume,
    PublishToLocalQueue,
    Reset,
    MoveToDeployment,
    Reprioritize,
}

impl BatchOperation {
    /// Every operation, in the order the document lists them.
    pub const ALL: [BatchOperation; 10] = [
        BatchOperation::Terminate,
        BatchOperation::Fail,
        BatchOperation::RetryNow,
        BatchOperation::GiveUp,
        BatchOperation::Pause,
        BatchOperation::Resume,
        BatchOperation::PublishToLocalQueue,
        BatchOperation::Reset,
        BatchOperation::MoveToDeployment,
        BatchOperation::Reprioritize,
    ];

    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            BatchOperation::Terminate => "TERMINATE",
            BatchOperation::Fail => "FAIL",
            BatchOperation::RetryNow => "RETRY_NOW",
            BatchOperation::GiveUp => "GIVE_UP",
            BatchOperation::Pause => "PAUSE",
            BatchOperation::Resume => "RESUME",
            BatchOperation::PublishToLocalQueue => "PUBLISH_TO_LOCAL_QUEUE",
            BatchOperation::Reset => "RESET",
            BatchOperation::MoveToDeployment => "MOVE_TO_DEPLOYMENT",
            BatchOperation::Reprioritize => "REPRIORITIZE",
        }
    }

    /// The operation of a wire name.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|op| op.as_str() == text)
    }
}

/// Where a `RESET` batch restarts each execution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BatchReset {
    pub state_id: String,
    #[serde(default)]
    pub state_input: Option<EncodedObject>,
    #[serde(default)]
    pub state_config: Option<AsyncStateConfig>,
}

/// `POST .../batch/start`: starts a batch. Preview what it selects with `count` and the
/// same selection first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BatchStartRequest {
    /// Idempotency key: see *Idempotent requests* in the document's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    pub operation: BatchOperation,
    /// Only executions of this type (needed for `column` conditions and for
    /// `MOVE_TO_DEPLOYMENT`).
    #[serde(default)]
    pub process_type: Option<String>,
    /// Only executions matching this filter tree (as `list` and `count` take it);
    /// absent: every execution (of `processType`).
    #[serde(default, rename = "where")]
    pub where_: Option<crate::FilterNode>,
    /// The type's business table, when no registered definition declares it.
    #[serde(default)]
    pub business_table: Option<crate::BusinessTableRef>,
    /// Executions handled per second, at most; default 100, at most 10000.
    #[serde(default)]
    pub rate_per_second: Option<u32>,
    /// Why; kept in the batch and in each execution's history where the operation
    /// records one.
    #[serde(default)]
    pub reason: Option<String>,
    /// Who asks (a person or a tool).
    #[serde(default)]
    pub identity: Option<String>,
    /// `PUBLISH_TO_LOCAL_QUEUE`: the messages each execution receives (1 to 1000).
    #[serde(default)]
    #[schema(default = json!([]))]
    pub messages: Vec<LocalQueueMessage>,
    /// `RESET`: the state to restart from.
    #[serde(default)]
    pub reset: Option<BatchReset>,
    /// `MOVE_TO_DEPLOYMENT`: the deployment to move to.
    #[serde(default)]
    pub move_to: Option<DeploymentRef>,
    /// `REPRIORITIZE`: the new priority, fairness key or weight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reprioritize: Option<crate::Reprioritization>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BatchStartResponse {
    pub batch_id: String,
    /// How many executions the selection matched when the batch started (the batch
    /// handles those still matching when it reaches them).
    pub expected: u64,
}

/// `RUNNING` until every selected execution is handled (`COMPLETED`), an operator
/// cancels it (`CANCELLED`), or its selection can no longer be run (`FAILED`, with
/// `error`: say, its business table was dropped).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BatchStatus {
    Running,
    Completed,
    Cancelled,
    Failed,
}

impl BatchStatus {
    pub const ALL: [BatchStatus; 4] = [
        BatchStatus::Running,
        BatchStatus::Completed,
        BatchStatus::Cancelled,
        BatchStatus::Failed,
    ];

    /// The name on the wire and in the batch row.
    pub fn as_str(self) -> &'static str {
        match self {
            BatchStatus::Running => "RUNNING",
            BatchStatus::Completed => "COMPLETED",
            BatchStatus::Cancelled => "CANCELLED",
            BatchStatus::Failed => "FAILED",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }

    pub fn is_closed(self) -> bool {
        self != BatchStatus::Running
    }
}

/// What a batch did to one execution: `DONE` (the operation applied), `SKIPPED` (it did
/// not apply: closed, not paused, nothing to retry…) or `FAILED` (an error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BatchItemOutcome {
    Done,
    Skipped,
    Failed,
}

impl BatchItemOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            BatchItemOutcome::Done => "DONE",
            BatchItemOutcome::Skipped => "SKIPPED",
            BatchItemOutcome::Failed => "FAILED",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [Self::Done, Self::Skipped, Self::Failed]
            .into_iter()
            .find(|o| o.as_str() == text)
    }
}

/// An execution the batch skipped or failed on, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BatchItem {
    pub process_execution_id: String,
    pub outcome: BatchItemOutcome,
    #[serde(default)]
    pub reason: Option<String>,
}

/// A batch and its progress. `matched` = `done` + `skipped` + `failed`: the executions
/// handled so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BatchInfo {
    pub batch_id: String,
    pub operation: BatchOperation,
    pub status: BatchStatus,
    /// The request that started it (its selection and the operation's arguments).
    pub request: BatchStartRequest,
    pub rate_per_second: u32,
    /// How many executions the selection matched when the batch started.
    pub expected: u64,
    pub matched: u64,
    pub done: u64,
    pub skipped: u64,
    pub failed: u64,
    /// Milliseconds since the Unix epoch.
    pub created_timestamp_ms: i64,
    #[serde(default)]
    pub closed_timestamp_ms: Option<i64>,
    /// Why a `FAILED` batch stopped, or who cancelled one and why.
    #[serde(default)]
    pub error: Option<String>,
}

/// `POST .../batch/describe`: a batch, its progress and the latest executions it skipped
/// or failed on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BatchDescribeRequest {
    pub batch_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BatchDescribeResponse {
    pub batch: BatchInfo,
    /// The latest executions skipped or failed on (at most 20), newest first.
    #[serde(default)]
    #[schema(default = json!([]))]
    pub not_done: Vec<BatchItem>,
}

/// `POST .../batch/list`: batches, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BatchListRequest {
    /// Only batches in this status.
    #[serde(default)]
    pub status: Option<BatchStatus>,
    /// Page size (default 50, at most 1000).
    #[serde(default)]
    pub page_size: Option<u32>,
    #[serde(default)]
    pub next_page_token: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BatchListResponse {
    pub batches: Vec<BatchInfo>,
    /// Absent on the last page.
    #[serde(default)]
    pub next_page_token: Option<String>,
}

/// `POST .../batch/cancel`: stops a running batch within the page of executions in hand
/// (about a second's worth at its rate); what it did stays done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BatchCancelRequest {
    pub batch_id: String,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub identity: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back() {
        for op in BatchOperation::ALL {
            let wire = serde_json::to_value(op).unwrap();
            assert_eq!(wire, op.as_str());
            assert_eq!(BatchOperation::parse(op.as_str()), Some(op));
        }
        for status in BatchStatus::ALL {
            assert_eq!(serde_json::to_value(status).unwrap(), status.as_str());
            assert_eq!(BatchStatus::parse(status.as_str()), Some(status));
        }
    }

    #[test]
    fn a_start_request_needs_only_an_operation() {
        let request: BatchStartRequest =
            serde_json::from_value(serde_json::json!({"operation": "PAUSE"})).unwrap();
        assert_eq!(request.operation, BatchOperation::Pause);
        assert!(request.where_.is_none() && request.messages.is_empty());
    }
}
