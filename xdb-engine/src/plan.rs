//! What a decision changes: the output of every [`crate::decide`] operation.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
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
    /// Set with `close_execution` when nothing else can be open: the thread that closes
    /// it was the last running one and the execution has no timeout task, so no other
    /// state is active and no other task exists (the close writes neither).
    pub nothing_else_open: bool,
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

    /// The row of state execution `id` as this plan leaves it: a state the plan creates,
    /// or `before` (its row when the plan was decided) with the plan's update applied.
    /// `None` when the plan neither creates nor updates it.
    pub fn state_after(
        &self,
        process_execution_id: uuid::Uuid,
        id: &StateExecutionId,
        before: Option<&StateExecution>,
        now: DateTime<Utc>,
    ) -> Option<StateExecution> {
        if let Some(new) = self.new_states.iter().find(|s| &s.id == id) {
            return Some(StateExecution {
                process_execution_id,
                id: new.id.clone(),
                status: new.status,
                version: NEW_STATE_VERSION,
                input: new.input.clone(),
                config: new.config.clone(),
                command_request: None,
                command_progress: None,
                created_at: now,
            });
        }
        let before = before.filter(|s| &s.id == id)?;
        let update = self.state_updates.iter().find(|u| &u.id == id)?;
        Some(StateExecution {
            status: update.status,
            version: update.expected_version + 1,
            command_request: update.command_request.clone(),
            command_progress: update.command_progress.clone(),
            ..before.clone()
        })
    }
}

/// The version a state execution row starts at (the schema's default).
pub const NEW_STATE_VERSION: i32 = 1;

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

impl ProcessUpdate {
    /// Applies the update to `process` as the database applies it to the row.
    pub fn apply_to(&self, process: &mut ProcessExecution) {
        if let Some(status) = self.status {
            process.status = status;
        }
        if let Some(close_time) = self.close_time {
            process.close_time = Some(close_time);
        }
        if let Some(running) = self.running_state_executions {
            process.running_state_executions = running;
        }
        if let Some(graceful) = &self.graceful_completion {
            process.graceful_completion = Some(graceful.clone());
        }
        if let Some(sequences) = &self.state_execution_sequences {
            process.state_execution_sequences = sequences.clone();
        }
        if let Some(result) = &self.result {
            process.result = Some(result.clone());
        }
        if let Some(failure) = &self.failure {
            process.failure = Some(failure.clone());
        }
    }
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

/// Who published messages to an execution's local queues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Publisher {
    Client,
    Rpc(String),
    State(StateExecutionId),
}

impl HistoryEntry {
    /// `LOCAL_QUEUE_MESSAGES_PUBLISHED`: `messages` published by `by`, of which
    /// `inserted` were new (the others repeated an earlier `dedupId`).
    pub fn published(by: &Publisher, messages: usize, inserted: u64) -> Self {
        let mut details = json!({
            "messages": messages,
            "duplicates": (messages as u64).saturating_sub(inserted),
        });
        match by {
            Publisher::Client => {}
            Publisher::Rpc(name) => details["rpcName"] = json!(name),
            Publisher::State(id) => details["stateExecutionId"] = json!(id.to_string()),
        }
        Self::new(events::LOCAL_QUEUE_MESSAGES_PUBLISHED, details)
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

#[cfg(test)]
mod tests {
    use xdb_protocol::{
        AsyncStateExecuteResponse, AsyncStateWaitUntilResponse, StateDecision, StateMovement,
    };

    use uuid::Uuid;

    use super::*;
    use crate::decide::fixtures::{process, state};
    use crate::decide::{complete_execute, complete_wait_until};

    fn moving_to(next: &str) -> AsyncStateExecuteResponse {
        AsyncStateExecuteResponse {
            state_decision: StateDecision {
                next_states: vec![StateMovement {
                    state_id: next.into(),
                    state_input: None,
                    state_config: None,
                }],
                thread_close_decision: None,
            },
            ..Default::default()
        }
    }

    #[test]
    fn a_state_the_plan_creates_starts_at_version_one() {
        let now = Utc::now();
        let current = state("A", 1, StateExecutionStatus::ExecuteRunning);
        let plan = complete_execute(&process(1), &current, &moving_to("B"), now).unwrap();
        let created = &plan.new_states[0];
        let after = plan
            .state_after(Uuid::nil(), &created.id, Some(&current), now)
            .unwrap();
        assert_eq!(after.version, NEW_STATE_VERSION);
        assert_eq!(after.status, created.status);
        assert_eq!(after.created_at, now);
        assert_eq!(after.command_request, None);
    }

    #[test]
    fn an_updated_state_moves_one_version_on() {
        let now = Utc::now();
        let mut current = state("A", 1, StateExecutionStatus::WaitUntilRunning);
        current.version = 4;
        let plan = complete_wait_until(
            &process(1),
            &current,
            &AsyncStateWaitUntilResponse::default(),
            &[],
            &[],
            now,
        )
        .unwrap();
        let after = plan
            .state_after(Uuid::nil(), &current.id, Some(&current), now)
            .unwrap();
        assert_eq!(after.version, 5);
        assert_eq!(after.status, StateExecutionStatus::ExecuteRunning);
        assert_eq!(after.created_at, current.created_at);
        // Neither created nor updated: unknown.
        let other = state("Z", 1, StateExecutionStatus::ExecuteRunning);
        assert_eq!(
            plan.state_after(Uuid::nil(), &other.id, Some(&other), now),
            None
        );
    }

    #[test]
    fn the_process_update_applies_like_the_sql_update() {
        let mut before = process(1);
        let update = ProcessUpdate {
            running_state_executions: Some(2),
            state_execution_sequences: Some(BTreeMap::from([("B".to_string(), 1)])),
            ..Default::default()
        };
        update.apply_to(&mut before);
        assert_eq!(before.running_state_executions, 2);
        assert_eq!(before.state_execution_sequences["B"], 1);
        // Fields the update leaves out keep their value (COALESCE in the SQL).
        assert_eq!(before.status, ProcessStatus::Running);
        assert_eq!(before.close_time, None);
    }
}
