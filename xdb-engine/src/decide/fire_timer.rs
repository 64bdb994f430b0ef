//! A timer command fired.

use chrono::{DateTime, Utc};
use serde_json::json;
use xdb_protocol::AsyncStateExecuteResponse;

use super::complete_execute::complete_execute;
use super::deliver_messages::apply_progress;
use super::DecideError;
use crate::model::*;
use crate::plan::*;

/// Marks timer `timer_index` of `state` fired. A stale timer (the state moved on, or the
/// timer already fired) yields an empty plan: the task is simply deleted.
pub fn fire_timer(
    process: &ProcessExecution,
    state: &StateExecution,
    timer_index: i32,
    now: DateTime<Utc>,
) -> TransitionPlan {
    let mut plan = TransitionPlan::default();
    if process.status.is_closed() || state.status != StateExecutionStatus::WaitingCommands {
        return plan;
    }
    let Some(request) = &state.command_request else {
        return plan;
    };
    let mut progress = state
        .command_progress
        .clone()
        .unwrap_or_else(|| CommandProgress::new(request));
    let index = timer_index as usize;
    match progress.timers_fired.get(index) {
        Some(false) => progress.timers_fired[index] = true,
        _ => return plan,
    }
    plan.history.push(HistoryEntry::new(
        events::TIMER_FIRED,
        json!({ "stateExecutionId": state.id.to_string(), "timerIndex": timer_index }),
    ));
    apply_progress(state, progress, now, &mut plan);
    plan
}

/// Whether timer `timer_index` is the last command `state` waits for: every other one
/// is done, so firing it settles the state, and nothing else can settle the state first
/// (no message, no other timer). Only then may its execute be called before the firing
/// is written: the execute's command results cannot turn out to be another command's.
pub fn only_this_timer_left(state: &StateExecution, timer_index: i32) -> bool {
    let Some(request) = &state.command_request else {
        return false;
    };
    if state.status != StateExecutionStatus::WaitingCommands {
        return false;
    }
    let fresh;
    let progress = match &state.command_progress {
        Some(progress) => progress,
        None => {
            fresh = CommandProgress::new(request);
            &fresh
        }
    };
    let index = timer_index as usize;
    progress.timers_fired.get(index) == Some(&false)
        && progress
            .timers_fired
            .iter()
            .enumerate()
            .all(|(i, fired)| i == index || *fired)
        && progress.queues_received.iter().all(Option::is_some)
}

/// The firing of timer `timer_index` when it is the last command `state` waits for
/// ([`only_this_timer_left`]), with the state as that firing leaves it: running its
/// execute, the firing's results in its progress. `None` otherwise (or when the process
/// is closed).
pub fn fire_last_timer(
    process: &ProcessExecution,
    state: &StateExecution,
    timer_index: i32,
    now: DateTime<Utc>,
) -> Option<(TransitionPlan, StateExecution)> {
    if !only_this_timer_left(state, timer_index) {
        return None;
    }
    let fired = fire_timer(process, state, timer_index, now);
    let executing = fired
        .state_after(process.id, &state.id, Some(state), now)
        .filter(|after| after.status == StateExecutionStatus::ExecuteRunning)?;
    Some((fired, executing))
}

/// Timer `timer_index` fires, settling `state`'s commands, and the worker's execute,
/// called with the results this firing gives, answered `response`: both decisions as one
/// plan, which takes the state from waiting for commands to its end in one transition
/// (the firing's own execute task would be this very call). `None` unless the timer is
/// the last command the state waits for ([`fire_last_timer`]).
pub fn fire_timer_then_execute(
    process: &ProcessExecution,
    state: &StateExecution,
    timer_index: i32,
    response: &AsyncStateExecuteResponse,
    now: DateTime<Utc>,
) -> Result<Option<TransitionPlan>, DecideError> {
    let Some((fired, executing)) = fire_last_timer(process, state, timer_index, now) else {
        return Ok(None);
    };
    let mut plan = complete_execute(process, &executing, response, now)?;
    // One update of the row, checked against the version the firing was decided from.
    for update in plan.state_updates.iter_mut().filter(|u| u.id == state.id) {
        update.expected_version = state.version;
    }
    let mut history = fired.history;
    history.append(&mut plan.history);
    plan.history = history;
    plan.delete_timers_of.extend(fired.delete_timers_of);
    plan.new_tasks
        .extend(fired.new_tasks.into_iter().filter(|task| {
            !(task.task_type == TaskType::Execute && task.state.as_ref() == Some(&state.id))
        }));
    Ok(Some(plan))
}

#[cfg(test)]
mod tests {
    use xdb_protocol::{CommandRequest, CommandWaitingType, TimerCommand};

    use super::*;
    use crate::decide::fixtures::{process, state};

    fn waiting_on_one_timer() -> StateExecution {
        let mut s = waiting(CommandWaitingType::AnyOfCompletion);
        let request = s.command_request.as_mut().unwrap();
        request.timer_commands.truncate(1);
        s.command_progress = Some(CommandProgress::new(request));
        s
    }

    fn waiting(waiting_type: CommandWaitingType) -> StateExecution {
        let mut s = state("Verify", 1, StateExecutionStatus::WaitingCommands);
        let request = CommandRequest {
            waiting_type,
            timer_commands: vec![
                TimerCommand {
                    delay_in_seconds: 1,
                },
                TimerCommand {
                    delay_in_seconds: 2,
                },
            ],
            local_queue_commands: vec![],
        };
        s.command_progress = Some(CommandProgress::new(&request));
        s.command_request = Some(request);
        s
    }

    #[test]
    fn any_of_fires_execute_and_drops_the_other_timers() {
        let plan = fire_timer(
            &process(1),
            &waiting(CommandWaitingType::AnyOfCompletion),
            0,
            Utc::now(),
        );
        assert_eq!(
            plan.state_updates[0].status,
            StateExecutionStatus::ExecuteRunning
        );
        assert_eq!(plan.new_tasks[0].task_type, TaskType::Execute);
        assert_eq!(plan.delete_timers_of.len(), 1);
    }

    #[test]
    fn all_of_waits_for_the_second_timer() {
        let plan = fire_timer(
            &process(1),
            &waiting(CommandWaitingType::AllOfCompletion),
            0,
            Utc::now(),
        );
        assert_eq!(
            plan.state_updates[0].status,
            StateExecutionStatus::WaitingCommands
        );
        assert_eq!(
            plan.state_updates[0]
                .command_progress
                .as_ref()
                .unwrap()
                .timers_fired,
            vec![true, false]
        );
    }

    fn complete_gracefully() -> AsyncStateExecuteResponse {
        use xdb_protocol::{StateDecision, ThreadCloseDecision, ThreadCloseType};
        AsyncStateExecuteResponse {
            state_decision: StateDecision {
                next_states: vec![],
                thread_close_decision: Some(ThreadCloseDecision {
                    close_type: ThreadCloseType::GracefulCompleteProcess,
                    output: None,
                }),
            },
            ..Default::default()
        }
    }

    #[test]
    fn firing_then_executing_is_one_update_from_the_version_read() {
        let state = waiting_on_one_timer();
        let plan =
            fire_timer_then_execute(&process(1), &state, 0, &complete_gracefully(), Utc::now())
                .unwrap()
                .expect("the firing moves the state to execute");
        assert_eq!(plan.state_updates.len(), 1);
        let update = &plan.state_updates[0];
        assert_eq!(update.expected_version, state.version);
        assert_eq!(update.status, StateExecutionStatus::Completed);
        assert_eq!(
            update.command_progress.as_ref().unwrap().timers_fired,
            vec![true],
            "the execute saw the firing's results"
        );
        let events: Vec<_> = plan.history.iter().map(|h| h.event_type).collect();
        assert_eq!(
            events[..2],
            [events::TIMER_FIRED, events::EXECUTE_COMPLETED]
        );
        assert!(
            plan.new_tasks
                .iter()
                .all(|t| t.task_type != TaskType::Execute),
            "no execute task: the execute was this call"
        );
        assert_eq!(plan.delete_timers_of, vec![state.id.clone()]);
        assert!(plan.closes_process());
    }

    #[test]
    fn only_the_last_pending_command_is_executed_before_its_firing_is_written() {
        let answer = complete_gracefully();
        // ALL_OF with the other timer pending: the firing leaves the state waiting.
        let all_of = waiting(CommandWaitingType::AllOfCompletion);
        assert!(!only_this_timer_left(&all_of, 0));
        let plan = fire_timer_then_execute(&process(1), &all_of, 0, &answer, Utc::now());
        assert_eq!(plan.unwrap(), None);
        // ANY_OF with another timer pending: that one could settle the state first.
        let any_of = waiting(CommandWaitingType::AnyOfCompletion);
        assert!(!only_this_timer_left(&any_of, 0));
        // ALL_OF whose other timer fired: this one is the last.
        let mut last = waiting(CommandWaitingType::AllOfCompletion);
        last.command_progress.as_mut().unwrap().timers_fired[1] = true;
        assert!(only_this_timer_left(&last, 0));
        assert!(!only_this_timer_left(&last, 1), "fired already");
        assert!(only_this_timer_left(&waiting_on_one_timer(), 0));
    }

    #[test]
    fn a_stale_or_repeated_timer_changes_nothing() {
        let mut fired = waiting(CommandWaitingType::AllOfCompletion);
        fired.command_progress.as_mut().unwrap().timers_fired[0] = true;
        assert_eq!(
            fire_timer(&process(1), &fired, 0, Utc::now()),
            TransitionPlan::default()
        );
        let moved_on = state("Verify", 1, StateExecutionStatus::ExecuteRunning);
        assert_eq!(
            fire_timer(&process(1), &moved_on, 0, Utc::now()),
            TransitionPlan::default()
        );
    }
}
