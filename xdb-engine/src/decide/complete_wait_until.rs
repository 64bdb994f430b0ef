//! waitUntil answered: record its commands, take queued messages, start timers.

use std::collections::HashSet;

use chrono::{DateTime, Duration, Utc};
use serde_json::json;
use xdb_protocol::AsyncStateWaitUntilResponse;

use super::deliver_messages::{apply_progress, take_messages};
use super::{check_running, DecideError};
use crate::model::*;
use crate::plan::*;
use crate::validation::{check_id, ValidationError};

/// Longest timer: 10 years, so a typo does not overflow a timestamp.
pub const MAX_TIMER_SECONDS: u32 = 10 * 365 * 24 * 3600;
/// Most messages one local-queue command may wait for.
pub const MAX_QUEUE_COMMAND_COUNT: u32 = 1000;

/// `messages`: the execution's queued messages in sequence order, including those this
/// response publishes. `other_waiting`: the execution's other waiting states, which may
/// receive what this response publishes.
pub fn complete_wait_until(
    process: &ProcessExecution,
    state: &StateExecution,
    response: &AsyncStateWaitUntilResponse,
    messages: &[QueuedMessage],
    other_waiting: &[StateExecution],
    now: DateTime<Utc>,
) -> Result<TransitionPlan, DecideError> {
    check_running(process)?;
    let request = &response.command_request;
    for timer in &request.timer_commands {
        if timer.delay_in_seconds > MAX_TIMER_SECONDS {
            return Err(invalid(format!(
                "timer delay {} s is over the maximum of {MAX_TIMER_SECONDS} s",
                timer.delay_in_seconds
            )));
        }
    }
    for command in &request.local_queue_commands {
        check_id("localQueueCommands.queueName", &command.queue_name)
            .map_err(|e| invalid(e.to_string()))?;
        if command.count.unwrap_or(1) > MAX_QUEUE_COMMAND_COUNT {
            return Err(invalid(format!(
                "local queue command count is over the maximum of {MAX_QUEUE_COMMAND_COUNT}"
            )));
        }
    }

    let mut plan = TransitionPlan {
        attribute_writes: response.writes.clone(),
        ..Default::default()
    };
    plan.history.push(HistoryEntry::new(
        events::WAIT_UNTIL_COMPLETED,
        json!({ "stateExecutionId": state.id.to_string(), "commandRequest": request }),
    ));

    let mut waiting = state.clone();
    waiting.status = StateExecutionStatus::WaitingCommands;
    waiting.command_request = Some(request.clone());
    let mut progress = CommandProgress::new(request);
    let mut consumed = HashSet::new();
    take_messages(
        &waiting,
        request,
        &mut progress,
        messages,
        &mut consumed,
        &mut plan,
    );
    let satisfied = progress.is_satisfied(request);
    if !satisfied {
        for (index, timer) in request.timer_commands.iter().enumerate() {
            plan.new_tasks.push(NewTask {
                task_type: TaskType::Timer,
                fire_at: now + Duration::seconds(i64::from(timer.delay_in_seconds)),
                state: Some(state.id.clone()),
                timer_index: Some(index as i32),
            });
        }
    }
    apply_progress(&waiting, progress, now, &mut plan);
    if satisfied {
        // No timers were created, so there are none to delete.
        plan.delete_timers_of.retain(|id| id != &state.id);
    }
    super::deliver_messages(other_waiting, messages, &mut consumed, now, &mut plan);
    Ok(plan)
}

fn invalid(message: String) -> DecideError {
    DecideError::Invalid(ValidationError::new("commandRequest", message))
}

#[cfg(test)]
mod tests {
    use xdb_protocol::{CommandRequest, CommandWaitingType, LocalQueueCommand, TimerCommand};

    use super::*;
    use crate::decide::fixtures::{process, state};

    fn response(waiting_type: CommandWaitingType) -> AsyncStateWaitUntilResponse {
        AsyncStateWaitUntilResponse {
            command_request: CommandRequest {
                waiting_type,
                timer_commands: vec![TimerCommand {
                    delay_in_seconds: 5,
                }],
                local_queue_commands: vec![LocalQueueCommand {
                    queue_name: "verify".into(),
                    count: None,
                }],
            },
            ..Default::default()
        }
    }

    #[test]
    fn with_nothing_queued_the_state_waits_and_a_timer_is_set() {
        let now = Utc::now();
        let plan = complete_wait_until(
            &process(1),
            &state("Verify", 1, StateExecutionStatus::WaitUntilRunning),
            &response(CommandWaitingType::AnyOfCompletion),
            &[],
            &[],
            now,
        )
        .unwrap();
        assert_eq!(
            plan.state_updates[0].status,
            StateExecutionStatus::WaitingCommands
        );
        assert_eq!(plan.new_tasks.len(), 1);
        assert_eq!(plan.new_tasks[0].task_type, TaskType::Timer);
        assert_eq!(plan.new_tasks[0].fire_at, now + Duration::seconds(5));
    }

    #[test]
    fn a_queued_message_satisfies_any_of_at_once() {
        let queued = QueuedMessage {
            queue_name: "verify".into(),
            sequence_id: 3,
            message: xdb_protocol::LocalQueueMessage {
                queue_name: "verify".into(),
                dedup_id: Some("d".into()),
                payload: None,
            },
        };
        let plan = complete_wait_until(
            &process(1),
            &state("Verify", 1, StateExecutionStatus::WaitUntilRunning),
            &response(CommandWaitingType::AnyOfCompletion),
            &[queued],
            &[],
            Utc::now(),
        )
        .unwrap();
        assert_eq!(
            plan.state_updates[0].status,
            StateExecutionStatus::ExecuteRunning
        );
        let types: Vec<TaskType> = plan.new_tasks.iter().map(|t| t.task_type).collect();
        assert_eq!(types, vec![TaskType::Execute]);
        assert!(plan.delete_timers_of.is_empty());
        // The message was queued before the wait began: its consumption is recorded as
        // it is when the message arrives during the wait (deliver_messages' tests).
        let events: Vec<&str> = plan.history.iter().map(|h| h.event_type).collect();
        assert_eq!(
            events,
            [
                events::WAIT_UNTIL_COMPLETED,
                events::LOCAL_QUEUE_MESSAGES_CONSUMED
            ]
        );
        assert_eq!(
            plan.history[1].details,
            json!({
                "stateExecutionId": "Verify-1",
                "queueName": "verify",
                "messages": [{ "sequenceId": 3, "dedupId": "d" }],
            })
        );
    }

    #[test]
    fn a_message_published_by_the_answer_itself_is_consumed_once_and_recorded() {
        let mut r = response(CommandWaitingType::AllOfCompletion);
        r.command_request.timer_commands.clear();
        r.command_request.local_queue_commands[0].count = Some(2);
        let queued = |seq: i64| QueuedMessage {
            queue_name: "verify".into(),
            sequence_id: seq,
            message: xdb_protocol::LocalQueueMessage {
                queue_name: "verify".into(),
                dedup_id: None,
                payload: None,
            },
        };
        let plan = complete_wait_until(
            &process(1),
            &state("Verify", 1, StateExecutionStatus::WaitUntilRunning),
            &r,
            &[queued(1), queued(2)],
            &[],
            Utc::now(),
        )
        .unwrap();
        let consumed: Vec<_> = plan
            .history
            .iter()
            .filter(|h| h.event_type == events::LOCAL_QUEUE_MESSAGES_CONSUMED)
            .collect();
        assert_eq!(consumed.len(), 1, "{:?}", plan.history);
        assert_eq!(
            consumed[0].details["messages"],
            json!([{ "sequenceId": 1 }, { "sequenceId": 2 }])
        );
        assert_eq!(plan.consume_messages[0].sequence_ids, vec![1, 2]);
    }

    #[test]
    fn nothing_queued_records_no_consumption() {
        let plan = complete_wait_until(
            &process(1),
            &state("Verify", 1, StateExecutionStatus::WaitUntilRunning),
            &response(CommandWaitingType::AnyOfCompletion),
            &[],
            &[],
            Utc::now(),
        )
        .unwrap();
        assert!(plan
            .history
            .iter()
            .all(|h| h.event_type != events::LOCAL_QUEUE_MESSAGES_CONSUMED));
    }

    #[test]
    fn an_empty_command_request_goes_straight_to_execute() {
        let plan = complete_wait_until(
            &process(1),
            &state("S", 1, StateExecutionStatus::WaitUntilRunning),
            &AsyncStateWaitUntilResponse::default(),
            &[],
            &[],
            Utc::now(),
        )
        .unwrap();
        assert_eq!(
            plan.state_updates[0].status,
            StateExecutionStatus::ExecuteRunning
        );
    }

    #[test]
    fn a_huge_timer_is_refused() {
        let mut r = response(CommandWaitingType::AllOfCompletion);
        r.command_request.timer_commands[0].delay_in_seconds = u32::MAX;
        let err = complete_wait_until(
            &process(1),
            &state("S", 1, StateExecutionStatus::WaitUntilRunning),
            &r,
            &[],
            &[],
            Utc::now(),
        )
        .unwrap_err();
        assert!(matches!(err, DecideError::Invalid(_)));
    }
}
