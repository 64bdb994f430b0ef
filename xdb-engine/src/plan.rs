//! What a decision changes: the output of every [`crate::decide`] operation.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::Value;
use xdb_protocol::{
    AsyncStateConfig, AttributeWrites, CommandRequest, EncodedObject, ProcessFailure, ProcessStatus,
};

use crate::model::*;

/// Rows to write and tasks to create, applied by the persistence layer in one transaction.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TransitionPlan {
    pub process: Option<ProcessUpdate>,
    pub state_updates: Vec<StateUpdate>,
    pub new_states: Vec<NewStateExecution>,
    pub new_tasks: Vec<NewTask>,
    /// Delete the timer tasks of these state executions (their commands are settled).
    pub delete_timers_of: Vec<StateExecutionId>,
    /// The execution closed: abort every active state and delete every task.
    pub close_execution: bool,
    /// Mark these queued messages as consumed by a state execution.
    pub consume_messages: Vec<MessageConsumption>,
    pub attribute_writes: AttributeWrites,
    pub history: Vec<HistoryEntry>,
}

impl TransitionPlan {
    /// Whether the plan creates any task at all (due now or later).
    pub fn has_tasks(&self) -> bool {
        !self.new_tasks.is_empty()
    }

    pub fn closes_process(&self) -> bool {
        self.process
            .as_ref()
            .and_then(|p| p.status)
            .is_some_and(|s| s.is_closed())
    }
}

/// Changes to the process execution row; `None` fields stay as they are.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcessUpdate {
    pub status: Option<ProcessStatus>,
    pub close_time: Option<DateTime<Utc>>,
    pub running_state_executions: Option<i32>,
    pub graceful_completion: Option<GracefulCompletion>,
    pub state_execution_sequences: Option<BTreeMap<String, i32>>,
    pub result: Option<EncodedObject>,
    pub failure: Option<ProcessFailure>,
}

/// Changes to one state execution, applied only if its version is still `expected_version`.
#[derive(Debug, Clone, PartialEq)]
pub struct StateUpdate {
    pub id: StateExecutionId,
    pub expected_version: i32,
    pub status: StateExecutionStatus,
    pub command_request: Option<CommandRequest>,
    pub command_progress: Option<CommandProgress>,
    pub last_failure: Option<Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NewStateExecution {
    pub id: StateExecutionId,
    pub status: StateExecutionStatus,
    pub input: Option<EncodedObject>,
    pub config: AsyncStateConfig,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NewTask {
    pub task_type: TaskType,
    pub fire_at: DateTime<Utc>,
    pub state: Option<StateExecutionId>,
    pub timer_index: Option<i32>,
}

impl NewTask {
    pub fn immediate(task_type: TaskType, state: StateExecutionId, now: DateTime<Utc>) -> Self {
        Self {
            task_type,
            fire_at: now,
            state: Some(state),
            timer_index: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageConsumption {
    pub queue_name: String,
    pub sequence_ids: Vec<i64>,
    pub consumed_by: StateExecutionId,
}

/// One event of the execution's history.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryEntry {
    pub event_type: &'static str,
    pub details: Value,
}

impl HistoryEntry {
    pub fn new(event_type: &'static str, details: Value) -> Self {
        Self {
            event_type,
            details,
        }
    }
}

/// History event types.
pub mod events {
    pub const PROCESS_STARTED: &str = "PROCESS_STARTED";
    pub const PROCESS_CLOSED: &str = "PROCESS_CLOSED";
    pub const WAIT_UNTIL_COMPLETED: &str = "WAIT_UNTIL_COMPLETED";
    pub const EXECUTE_COMPLETED: &str = "EXECUTE_COMPLETED";
    pub const STATE_API_FAILED: &str = "STATE_API_FAILED";
    pub const STATE_FAILED: &str = "STATE_FAILED";
    pub const TIMER_FIRED: &str = "TIMER_FIRED";
    pub const LOCAL_QUEUE_MESSAGES_PUBLISHED: &str = "LOCAL_QUEUE_MESSAGES_PUBLISHED";
    pub const LOCAL_QUEUE_MESSAGES_CONSUMED: &str = "LOCAL_QUEUE_MESSAGES_CONSUMED";
    pub const RPC_COMPLETED: &str = "RPC_COMPLETED";
}
