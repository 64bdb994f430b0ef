//! A timer command fired.

use chrono::{DateTime, Utc};
use serde_json::json;

use super::deliver_messages::apply_progress;
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

#[cfg(test)]
mod tests {
    use xdb_protocol::{CommandRequest, CommandWaitingType, TimerCommand};

    use super::*;
    use crate::decide::fixtures::{process, state};

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
