//! One operation per file: each turns loaded rows plus an event into a [`TransitionPlan`].

mod close_process;
mod complete_execute;
mod complete_rpc;
mod complete_wait_until;
mod deliver_messages;
mod fire_timer;
mod reset;
mod start_process;
mod state_api_failed;

pub use close_process::{stop_process, timeout_process};
pub use complete_execute::complete_execute;
pub use complete_rpc::complete_rpc;
pub use complete_wait_until::complete_wait_until;
pub use deliver_messages::deliver_messages;
pub use fire_timer::{fire_last_timer, fire_timer, fire_timer_then_execute, only_this_timer_left};
pub use reset::{reset, ResetPlan, ResetRequest};
pub use start_process::{start_process, validate_start_request, PreviousExecution, StartPlan};
pub use state_api_failed::{
    state_api_failed, state_api_given_up, AttemptFailure, FailureOutcome, NonRetryable, StateApi,
};

use chrono::{DateTime, Utc};
use serde_json::json;
use thiserror::Error;
use xdb_protocol::{EncodedObject, ProcessFailure, ProcessStatus, StateMovement};

use crate::model::*;
use crate::plan::*;
use crate::validation::{check_id, ValidationError};

/// Why a decision could not be made; nothing is written.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DecideError {
    #[error("invalid request: {0}")]
    Invalid(#[from] ValidationError),
    #[error("the worker's response is invalid: {0}")]
    InvalidWorkerResponse(String),
    #[error("process id '{0}' already has an execution that the id-reuse policy does not allow replacing")]
    AlreadyStarted(String),
    #[error("the process execution is not running")]
    NotRunning,
}

/// Allocates execution numbers for `movements` and creates their rows and first tasks.
pub(crate) fn start_states(
    sequences: &mut std::collections::BTreeMap<String, i32>,
    movements: &[StateMovement],
    now: DateTime<Utc>,
    plan: &mut TransitionPlan,
) -> Result<(), ValidationError> {
    for movement in movements {
        check_id("stateId", &movement.state_id)?;
        let number = sequences.entry(movement.state_id.clone()).or_insert(0);
        *number += 1;
        let id = StateExecutionId {
            state_id: movement.state_id.clone(),
            number: *number,
        };
        let config = movement.state_config.clone().unwrap_or_default();
        let (status, task_type) = if config.skip_wait_until {
            (StateExecutionStatus::ExecuteRunning, TaskType::Execute)
        } else {
            (StateExecutionStatus::WaitUntilRunning, TaskType::WaitUntil)
        };
        plan.new_tasks
            .push(NewTask::immediate(task_type, id.clone(), now));
        plan.new_states.push(NewStateExecution {
            id,
            status,
            input: movement.state_input.clone(),
            config,
        });
    }
    Ok(())
}

/// Closes the execution: every active state is aborted and every task deleted.
pub(crate) fn close(
    plan: &mut TransitionPlan,
    status: ProcessStatus,
    result: Option<EncodedObject>,
    failure: Option<ProcessFailure>,
    now: DateTime<Utc>,
) {
    let update = plan.process.get_or_insert_with(ProcessUpdate::default);
    update.status = Some(status);
    update.close_time = Some(now);
    update.running_state_executions = Some(0);
    update.result = result;
    update.failure = failure.clone();
    plan.close_execution = true;
    plan.history.push(HistoryEntry::new(
        events::PROCESS_CLOSED,
        json!({ "status": status.as_str(), "failure": failure.map(|f| f.reason) }),
    ));
}

/// Ends one thread; completes the process if it was the last one and graceful completion
/// was asked for.
pub(crate) fn end_thread(
    process: &ProcessExecution,
    plan: &mut TransitionPlan,
    running_after: i32,
    now: DateTime<Utc>,
) {
    let update = plan.process.get_or_insert_with(ProcessUpdate::default);
    update.running_state_executions = Some(running_after);
    let graceful = update
        .graceful_completion
        .clone()
        .or_else(|| process.graceful_completion.clone());
    if running_after == 0 {
        if let Some(graceful) = graceful {
            close(plan, ProcessStatus::Completed, graceful.output, None, now);
            // A timeout task is the one task a process has without a running state.
            plan.nothing_else_open = process.timeout_seconds <= 0;
        }
    }
}

pub(crate) fn check_running(process: &ProcessExecution) -> Result<(), DecideError> {
    if process.status == ProcessStatus::Running {
        Ok(())
    } else {
        Err(DecideError::NotRunning)
    }
}

#[cfg(test)]
pub(crate) mod fixtures {
    use std::collections::BTreeMap;

    use chrono::{DateTime, Utc};
    use uuid::Uuid;
    use xdb_protocol::{AsyncStateConfig, ProcessStatus};

    use crate::model::*;

    pub fn process(running: i32) -> ProcessExecution {
        ProcessExecution {
            id: Uuid::nil(),
            process_id: "p1".into(),
            process_type: "T".into(),
            worker_url: "http://w".into(),
            status: ProcessStatus::Running,
            start_time: DateTime::<Utc>::UNIX_EPOCH,
            close_time: None,
            timeout_seconds: 0,
            running_state_executions: running,
            graceful_completion: None,
            state_execution_sequences: BTreeMap::from([("A".to_string(), 1)]),
            global_attribute_config: None,
            result: None,
            failure: None,
            paused: None,
            priority: xdb_protocol::priority::DEFAULT,
            fairness: None,
        }
    }

    pub fn state(id: &str, number: i32, status: StateExecutionStatus) -> StateExecution {
        StateExecution {
            process_execution_id: Uuid::nil(),
            id: StateExecutionId {
                state_id: id.into(),
                number,
            },
            status,
            version: 1,
            input: None,
            config: AsyncStateConfig::default(),
            command_request: None,
            command_progress: None,
            created_at: DateTime::<Utc>::UNIX_EPOCH,
        }
    }
}
