//! A due timer whose firing starts its state's execute: the execute is called before
//! anything is written, and the firing and the worker's answer commit as one transition.
//!
//! Firing a timer on its own is a transition whose only effect, when it settles the
//! state's commands, is an execute task that the same instance runs straight away. Timers
//! started together come due together, and that extra transition per timer (a statement
//! and a commit) is what made them late. Deciding the firing from the rows as read, and
//! committing it with the execute's answer, leaves one transition per timer.
//!
//! Only for the last command a state waits for (`decide::only_this_timer_left`): then no
//! message or other timer can settle the state while its execute runs, and the command
//! results the worker saw are the ones committed. What can still happen meanwhile is the
//! process closing (stopped, timed out): the transition is then stale, nothing is
//! written, and the timer is fired as usual, which finds it stale too; the worker's
//! answer is dropped, as when a process is stopped during any execute.

use chrono::{DateTime, Utc};
use xdb_engine::{decide, ProcessExecution, StateExecution, Task, TransitionPlan};
use xdb_protocol::AsyncStateExecuteResponse;

use crate::{FiredTimer, StateCall, StoreError};

/// The firing of `task` (a state's timer) on `state` as read, when it is the last
/// command the state waits for (`decide::fire_last_timer`); the call's attributes are
/// for the caller to load ([`crate::continuation::loads_attributes`]).
pub(crate) fn fired_timer(
    task: &Task,
    process: ProcessExecution,
    state: StateExecution,
    now: DateTime<Utc>,
) -> Option<FiredTimer> {
    let timer_index = task.timer_index?;
    let (_, executing) = decide::fire_last_timer(&process, &state, timer_index, now)?;
    Some(FiredTimer {
        timer_index,
        call: StateCall {
            process: process.clone(),
            state: executing,
            attributes: Default::default(),
        },
        before: StateCall {
            process,
            state,
            attributes: Default::default(),
        },
    })
}

/// The plan of `fired`'s firing and the execute's `response`, decided on `process` and
/// `state` (as read, or locked): stale when the timer no longer settles the state.
pub(crate) fn fired_plan(
    process: &ProcessExecution,
    state: &StateExecution,
    fired: &FiredTimer,
    response: &AsyncStateExecuteResponse,
    now: DateTime<Utc>,
) -> Result<TransitionPlan, StoreError> {
    decide::fire_timer_then_execute(process, state, fired.timer_index, response, now)?
        .ok_or_else(|| StoreError::Stale("the timer no longer settles its state".into()))
}

#[cfg(test)]
mod tests {
    use xdb_engine::{CommandProgress, StateExecutionId, StateExecutionStatus, TaskType};
    use xdb_protocol::{
        AsyncStateConfig, CommandRequest, CommandWaitingType, ProcessStatus, TimerCommand,
    };

    use super::*;

    fn rows(
        waiting_type: CommandWaitingType,
        timers: u32,
    ) -> (Task, ProcessExecution, StateExecution) {
        let id = StateExecutionId {
            state_id: "Wait".into(),
            number: 1,
        };
        let request = CommandRequest {
            waiting_type,
            timer_commands: (1..=timers)
                .map(|delay_in_seconds| TimerCommand { delay_in_seconds })
                .collect(),
            local_queue_commands: vec![],
        };
        let process = ProcessExecution {
            id: uuid::Uuid::nil(),
            process_id: "p".into(),
            process_type: "T".into(),
            worker_url: "http://w".into(),
            status: ProcessStatus::Running,
            start_time: Utc::now(),
            close_time: None,
            timeout_seconds: 0,
            running_state_executions: 1,
            graceful_completion: None,
            state_execution_sequences: Default::default(),
            global_attribute_config: None,
            result: None,
            failure: None,
            paused: None,
            priority: xdb_protocol::priority::DEFAULT,
            fairness: None,
        };
        let state = StateExecution {
            process_execution_id: process.id,
            id: id.clone(),
            status: StateExecutionStatus::WaitingCommands,
            version: 3,
            input: None,
            config: AsyncStateConfig::default(),
            command_progress: Some(CommandProgress::new(&request)),
            command_request: Some(request),
            created_at: Utc::now(),
        };
        let task = Task {
            id: 7,
            task_type: TaskType::Timer,
            fire_at: Utc::now(),
            process_execution_id: process.id,
            state: Some(id),
            timer_index: Some(0),
            attempt: 1,
            first_attempt_at: None,
            traceparent: None,
        };
        (task, process, state)
    }

    #[test]
    fn a_settling_firing_gives_the_execute_call_with_its_results() {
        let (task, process, state) = rows(CommandWaitingType::AnyOfCompletion, 1);
        let fired = fired_timer(&task, process, state.clone(), Utc::now()).unwrap();
        assert_eq!(fired.before.state, state);
        assert_eq!(
            fired.call.state.status,
            StateExecutionStatus::ExecuteRunning
        );
        assert_eq!(
            fired.call.state.command_progress.unwrap().timers_fired,
            vec![true]
        );
    }

    #[test]
    fn a_timer_with_other_commands_pending_or_a_closed_process_is_fired_as_usual() {
        let (task, process, state) = rows(CommandWaitingType::AllOfCompletion, 2);
        assert_eq!(fired_timer(&task, process, state, Utc::now()), None);
        let (task, process, state) = rows(CommandWaitingType::AnyOfCompletion, 2);
        assert_eq!(fired_timer(&task, process, state, Utc::now()), None);
        let (task, mut process, state) = rows(CommandWaitingType::AnyOfCompletion, 1);
        process.status = ProcessStatus::Completed;
        assert_eq!(fired_timer(&task, process, state, Utc::now()), None);
    }
}
