//! Hands queued local-queue messages to the states waiting for them, FIFO.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use serde_json::json;
use xdb_protocol::{CommandWaitingType, ConsumedMessage};

use crate::model::*;
use crate::plan::*;

/// Offers `messages` (unconsumed, in sequence order) to `waiting` states (oldest first).
///
/// A queue command completes only when its whole count is available, so a message is
/// never split between two states. States whose command request becomes satisfied move to
/// execute; the others keep their progress. Every state in `waiting` must be
/// `WAITING_COMMANDS` (others are passed over). `consumed` collects the sequence ids
/// taken, so the caller can chain calls.
pub fn deliver_messages(
    waiting: &[StateExecution],
    messages: &[QueuedMessage],
    consumed: &mut HashSet<i64>,
    now: DateTime<Utc>,
    plan: &mut TransitionPlan,
) {
    for state in waiting {
        if state.status != StateExecutionStatus::WaitingCommands {
            continue;
        }
        let Some(request) = &state.command_request else {
            continue;
        };
        let mut progress = state
            .command_progress
            .clone()
            .unwrap_or_else(|| CommandProgress::new(request));
        if progress.is_satisfied(request) {
            continue;
        }
        if !take_messages(state, request, &mut progress, messages, consumed, plan) {
            continue;
        }
        apply_progress(state, progress, now, plan);
    }
}

/// Takes messages for the state's open queue commands; true if any command completed.
///
/// Every path that hands messages to a state comes here (a wait that finds them queued,
/// a publish that finds the state waiting), so the consumption and its
/// `LOCAL_QUEUE_MESSAGES_CONSUMED` event are written together, once per command.
pub(crate) fn take_messages(
    state: &StateExecution,
    request: &xdb_protocol::CommandRequest,
    progress: &mut CommandProgress,
    messages: &[QueuedMessage],
    consumed: &mut HashSet<i64>,
    plan: &mut TransitionPlan,
) -> bool {
    let mut completed_any = false;
    for (index, command) in request.local_queue_commands.iter().enumerate() {
        if progress.queues_received[index].is_some() {
            continue;
        }
        let wanted = command.count.unwrap_or(1).max(1) as usize;
        let available: Vec<&QueuedMessage> = messages
            .iter()
            .filter(|m| m.queue_name == command.queue_name && !consumed.contains(&m.sequence_id))
            .take(wanted)
            .collect();
        if available.len() < wanted {
            continue;
        }
        consumed.extend(available.iter().map(|m| m.sequence_id));
        plan.history
            .push(consumed_entry(state, &command.queue_name, &available));
        plan.consume_messages.push(MessageConsumption {
            queue_name: command.queue_name.clone(),
            sequence_ids: available.iter().map(|m| m.sequence_id).collect(),
            consumed_by: state.id.clone(),
        });
        progress.queues_received[index] =
            Some(available.iter().map(|m| m.message.clone()).collect());
        completed_any = true;
        if request.waiting_type == CommandWaitingType::AnyOfCompletion {
            break;
        }
    }
    completed_any
}

fn consumed_entry(
    state: &StateExecution,
    queue_name: &str,
    taken: &[&QueuedMessage],
) -> HistoryEntry {
    let messages: Vec<ConsumedMessage> = taken
        .iter()
        .map(|m| ConsumedMessage {
            sequence_id: m.sequence_id,
            dedup_id: m.message.dedup_id.clone(),
        })
        .collect();
    HistoryEntry::new(
        events::LOCAL_QUEUE_MESSAGES_CONSUMED,
        json!({
            "stateExecutionId": state.id.to_string(),
            "queueName": queue_name,
            "messages": messages,
        }),
    )
}

/// Records new progress: moves the state to execute once its request is satisfied.
pub(crate) fn apply_progress(
    state: &StateExecution,
    progress: CommandProgress,
    now: DateTime<Utc>,
    plan: &mut TransitionPlan,
) {
    let request = state.command_request.clone().unwrap_or_default();
    let satisfied = progress.is_satisfied(&request);
    let status = if satisfied {
        plan.new_tasks
            .push(NewTask::immediate(TaskType::Execute, state.id.clone(), now));
        plan.delete_timers_of.push(state.id.clone());
        StateExecutionStatus::ExecuteRunning
    } else {
        StateExecutionStatus::WaitingCommands
    };
    plan.state_updates.push(StateUpdate {
        id: state.id.clone(),
        expected_version: state.version,
        status,
        command_request: Some(request),
        command_progress: Some(progress),
        last_failure: None,
    });
}

#[cfg(test)]
mod tests {
    use xdb_protocol::{CommandRequest, LocalQueueCommand, LocalQueueMessage, TimerCommand};

    use super::*;
    use crate::decide::fixtures::state;

    fn waiting(id: &str, waiting_type: CommandWaitingType, count: u32) -> StateExecution {
        let mut s = state(id, 1, StateExecutionStatus::WaitingCommands);
        let request = CommandRequest {
            waiting_type,
            timer_commands: vec![TimerCommand {
                delay_in_seconds: 60,
            }],
            local_queue_commands: vec![LocalQueueCommand {
                queue_name: "q".into(),
                count: Some(count),
            }],
        };
        s.command_progress = Some(CommandProgress::new(&request));
        s.command_request = Some(request);
        s
    }

    fn message(seq: i64) -> QueuedMessage {
        QueuedMessage {
            queue_name: "q".into(),
            sequence_id: seq,
            message: LocalQueueMessage {
                queue_name: "q".into(),
                dedup_id: Some(format!("m{seq}")),
                payload: None,
            },
        }
    }

    #[test]
    fn any_of_moves_to_execute_and_cancels_the_timer() {
        let mut plan = TransitionPlan::default();
        let state = waiting("A", CommandWaitingType::AnyOfCompletion, 1);
        deliver_messages(
            &[state],
            &[message(1)],
            &mut HashSet::new(),
            Utc::now(),
            &mut plan,
        );
        assert_eq!(
            plan.state_updates[0].status,
            StateExecutionStatus::ExecuteRunning
        );
        assert_eq!(plan.new_tasks[0].task_type, TaskType::Execute);
        assert_eq!(plan.delete_timers_of.len(), 1);
        assert_eq!(plan.consume_messages[0].sequence_ids, vec![1]);
        // The message arrived after the wait began: recorded as complete_wait_until
        // records one queued before it.
        assert_eq!(plan.history.len(), 1);
        assert_eq!(
            plan.history[0].event_type,
            events::LOCAL_QUEUE_MESSAGES_CONSUMED
        );
        assert_eq!(
            plan.history[0].details,
            json!({
                "stateExecutionId": "A-1",
                "queueName": "q",
                "messages": [{ "sequenceId": 1, "dedupId": "m1" }],
            })
        );
    }

    #[test]
    fn all_of_two_queues_records_one_consumption_per_queue() {
        let mut state = waiting("A", CommandWaitingType::AllOfCompletion, 1);
        let mut request = state.command_request.take().unwrap();
        request.timer_commands.clear();
        request.local_queue_commands.push(LocalQueueCommand {
            queue_name: "r".into(),
            count: None,
        });
        state.command_progress = Some(CommandProgress::new(&request));
        state.command_request = Some(request);
        let mut on_r = message(2);
        on_r.queue_name = "r".into();
        on_r.message.queue_name = "r".into();
        let mut plan = TransitionPlan::default();
        deliver_messages(
            &[state],
            &[message(1), on_r],
            &mut HashSet::new(),
            Utc::now(),
            &mut plan,
        );
        let queues: Vec<&serde_json::Value> = plan
            .history
            .iter()
            .map(|h| &h.details["queueName"])
            .collect();
        assert_eq!(queues, [&json!("q"), &json!("r")]);
        assert_eq!(
            plan.state_updates[0].status,
            StateExecutionStatus::ExecuteRunning
        );
    }

    #[test]
    fn all_of_keeps_waiting_for_the_timer() {
        let mut plan = TransitionPlan::default();
        let state = waiting("A", CommandWaitingType::AllOfCompletion, 1);
        deliver_messages(
            &[state],
            &[message(1)],
            &mut HashSet::new(),
            Utc::now(),
            &mut plan,
        );
        assert_eq!(
            plan.state_updates[0].status,
            StateExecutionStatus::WaitingCommands
        );
        assert!(plan.new_tasks.is_empty());
    }

    #[test]
    fn a_count_is_taken_whole_or_not_at_all_and_fifo_across_states() {
        let mut plan = TransitionPlan::default();
        let first = waiting("A", CommandWaitingType::AnyOfCompletion, 2);
        let second = waiting("B", CommandWaitingType::AnyOfCompletion, 1);
        let mut consumed = HashSet::new();
        deliver_messages(
            &[first, second],
            &[message(1)],
            &mut consumed,
            Utc::now(),
            &mut plan,
        );
        // A needs two and there is one: B gets it.
        assert_eq!(plan.consume_messages.len(), 1);
        assert_eq!(plan.consume_messages[0].consumed_by.state_id, "B");
        assert!(consumed.contains(&1));
    }
}
