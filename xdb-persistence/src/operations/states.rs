//! The states view: an execution's state executions, the calls they wait on, their last
//! failures and what their commands wait for. The rows are read here; the view is built
//! from them by a pure function.

use xdb_engine::{ProcessExecution, StateExecution, StateExecutionStatus, TaskType};
use xdb_protocol::{
    CallPhase, HistoryEvent, HistoryEventType, LocalQueueCommandStatus, LocalQueueWait,
    PendingCall, ProcessExecutionStatesRequest, ProcessExecutionStatesResponse,
    StateApiFailureDetails, StateApiName, StateExecutionInfo, StateFailure, TaskParkedReason,
    TimerStatus, TimerWait, WaitingFor,
};

use crate::tables::{
    Dialect, HistoryQuery, HistoryRows, Lane, OperatorRows, ParkReason, ProcessRows, TaskView,
};
use crate::StoreError;

/// How many of the latest failure events are read for the view: enough for every state
/// that failed lately; an older failure of a state long past is not shown.
const FAILURES_READ: i64 = 500;

pub(crate) async fn process_states<D: Dialect>(
    store: &D,
    request: &ProcessExecutionStatesRequest,
) -> Result<ProcessExecutionStatesResponse, StoreError> {
    let mut session = store.session(Lane::Main).await?;
    let id = session
        .resolve_execution(&request.process_id, request.process_execution_id.as_deref())
        .await?;
    let process = session.read_process(id).await?;
    let states = session.states_of(id).await?;
    let tasks = session.tasks_of(id, false).await?;
    let queued = session.queued_counts(id).await?;
    let failure_types = [
        HistoryEventType::StateApiFailed.as_str(),
        HistoryEventType::StateFailed.as_str(),
    ];
    let failures = session
        .read_history(
            id,
            &request.process_id,
            &HistoryQuery {
                after_event_id: None,
                event_types: &failure_types,
                limit: FAILURES_READ,
                newest_first: true,
            },
        )
        .await?;
    Ok(states_view(&process, &states, &tasks, &queued, &failures))
}

/// The view of `process` from its rows; `failures` newest first.
pub(crate) fn states_view(
    process: &ProcessExecution,
    states: &[StateExecution],
    tasks: &[TaskView],
    queued: &[(String, u64)],
    failures: &[HistoryEvent],
) -> ProcessExecutionStatesResponse {
    let running = !process.status.is_closed();
    ProcessExecutionStatesResponse {
        process_execution_id: process.id.to_string(),
        status: process.status,
        paused: process.paused.clone().filter(|_| running),
        states: states
            .iter()
            .map(|state| {
                let id = state.id.to_string();
                let own_tasks: Vec<&TaskView> = tasks
                    .iter()
                    .filter(|v| running && v.task.state.as_ref() == Some(&state.id))
                    .collect();
                StateExecutionInfo {
                    state_execution_id: id.clone(),
                    state_id: state.id.state_id.clone(),
                    status: status(state.status),
                    started_timestamp_ms: state.created_at.timestamp_millis(),
                    pending_call: own_tasks.iter().find_map(|v| pending_call(v)),
                    last_failure: last_failure(&id, failures),
                    waiting_for: (state.status == StateExecutionStatus::WaitingCommands)
                        .then(|| waiting_for(state, &own_tasks, queued))
                        .flatten(),
                    command_results: match (&state.command_request, &state.command_progress) {
                        (Some(request), Some(progress)) => Some(progress.to_results(request)),
                        _ => None,
                    },
                }
            })
            .collect(),
    }
}

fn status(status: StateExecutionStatus) -> xdb_protocol::StateExecutionStatus {
    use xdb_protocol::StateExecutionStatus as Wire;
    match status {
        StateExecutionStatus::WaitUntilRunning => Wire::WaitUntilRunning,
        StateExecutionStatus::WaitingCommands => Wire::WaitingCommands,
        StateExecutionStatus::ExecuteRunning => Wire::ExecuteRunning,
        StateExecutionStatus::Completed => Wire::Completed,
        StateExecutionStatus::Failed => Wire::Failed,
        StateExecutionStatus::Aborted => Wire::Aborted,
    }
}

fn pending_call(view: &TaskView) -> Option<PendingCall> {
    let api = match view.task.task_type {
        TaskType::WaitUntil => StateApiName::WaitUntil,
        TaskType::Execute => StateApiName::Execute,
        TaskType::Timer | TaskType::ProcessTimeout => return None,
    };
    let (phase, parked_reason, parked_kind) = match (&view.parked, &view.lease_owner) {
        (Some((ParkReason::Paused, _)), _) => (CallPhase::Paused, None, None),
        (Some((ParkReason::Refused, error)), _) => (
            CallPhase::Parked,
            error.clone(),
            Some(TaskParkedReason::Refused),
        ),
        (Some((ParkReason::NonRetryable, error)), _) => (
            CallPhase::Parked,
            error.clone(),
            Some(TaskParkedReason::NonRetryableWorkerError),
        ),
        (None, Some(_)) => (CallPhase::Running, None, None),
        (None, None) if view.rate_limited => (CallPhase::FlowLimited, None, None),
        (None, None) => (CallPhase::Scheduled, None, None),
    };
    Some(PendingCall {
        api,
        attempt: u32::try_from(view.task.attempt).unwrap_or(1).max(1),
        phase,
        due_timestamp_ms: view.task.fire_at.timestamp_millis(),
        parked_reason,
        parked_kind,
    })
}

fn last_failure(state_execution_id: &str, failures: &[HistoryEvent]) -> Option<StateFailure> {
    failures.iter().find_map(|event| {
        let details: StateApiFailureDetails = serde_json::from_value(event.details.clone()).ok()?;
        (details.state_execution_id == state_execution_id).then_some(StateFailure {
            api: details.api,
            attempt: details.attempt,
            error: details.error,
            timestamp_ms: event.event_timestamp_ms,
        })
    })
}

fn waiting_for(
    state: &StateExecution,
    own_tasks: &[&TaskView],
    queued: &[(String, u64)],
) -> Option<WaitingFor> {
    let request = state.command_request.as_ref()?;
    let progress = state.command_progress.clone().unwrap_or_default();
    let timers = request
        .timer_commands
        .iter()
        .enumerate()
        .map(|(index, timer)| {
            let fired = progress.timers_fired.get(index).copied().unwrap_or(false);
            let due = own_tasks.iter().find(|v| {
                v.task.task_type == TaskType::Timer
                    && v.task.timer_index == i32::try_from(index).ok()
            });
            TimerWait {
                delay_in_seconds: timer.delay_in_seconds,
                due_timestamp_ms: (!fired)
                    .then(|| due.map(|v| v.task.fire_at.timestamp_millis()))
                    .flatten(),
                status: fired.then_some(TimerStatus::Fired),
            }
        })
        .collect();
    let local_queues = request
        .local_queue_commands
        .iter()
        .enumerate()
        .map(|(index, command)| {
            let received = progress
                .queues_received
                .get(index)
                .is_some_and(Option::is_some);
            LocalQueueWait {
                queue_name: command.queue_name.clone(),
                count: command.count.unwrap_or(0).max(1),
                queued: queued
                    .iter()
                    .find(|(name, _)| *name == command.queue_name)
                    .map_or(0, |(_, count)| *count),
                status: received.then_some(LocalQueueCommandStatus::Received),
            }
        })
        .collect();
    Some(WaitingFor {
        waiting_type: request.waiting_type,
        timers,
        local_queues,
    })
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};
    use serde_json::json;
    use uuid::Uuid;
    use xdb_engine::{CommandProgress, StateExecutionId, Task};
    use xdb_protocol::{CommandRequest, LocalQueueCommand, PauseInfo, TimerCommand};

    use super::*;
    use crate::fixtures::{process, state};

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + seconds, 0).unwrap()
    }

    fn task(id: i64, task_type: TaskType, state: &str, attempt: i32) -> TaskView {
        TaskView {
            task: Task {
                id,
                task_type,
                fire_at: at(id),
                process_execution_id: Uuid::nil(),
                state: StateExecutionId::parse(state),
                timer_index: (task_type == TaskType::Timer).then_some(0),
                attempt,
                first_attempt_at: None,
                traceparent: None,
            },
            lease_owner: None,
            parked: None,
            rate_limited: false,
        }
    }

    fn failure(event_id: i64, state: &str, attempt: u32, error: &str) -> HistoryEvent {
        HistoryEvent {
            event_id,
            event_timestamp_ms: at(event_id).timestamp_millis(),
            event_type: "STATE_API_FAILED".into(),
            details: json!({
                "stateExecutionId": state, "api": "execute", "attempt": attempt, "error": error
            }),
        }
    }

    #[test]
    fn a_failing_state_shows_its_next_attempt_and_last_failure() {
        let mut process = process(xdb_protocol::ProcessStatus::Running);
        process.paused = Some(PauseInfo {
            since_timestamp_ms: 5,
            reason: Some("deploy".into()),
            identity: None,
            pending_on_key: None,
        });
        let states = [state("A-1", StateExecutionStatus::ExecuteRunning)];
        let mut parked = task(7, TaskType::Execute, "A-1", 3);
        parked.parked = Some((ParkReason::Refused, Some("check constraint".into())));
        let tasks = [parked];
        // Newest first.
        let failures = [
            failure(9, "A-1", 2, "HTTP 500"),
            failure(4, "A-1", 1, "HTTP 502"),
        ];
        let view = states_view(&process, &states, &tasks, &[], &failures);
        assert_eq!(
            view.paused.as_ref().unwrap().reason.as_deref(),
            Some("deploy")
        );
        let a = &view.states[0];
        let call = a.pending_call.as_ref().unwrap();
        assert_eq!((call.attempt, call.phase), (3, CallPhase::Parked));
        assert_eq!(call.parked_reason.as_deref(), Some("check constraint"));
        assert_eq!(call.parked_kind, Some(TaskParkedReason::Refused));
        assert_eq!(call.due_timestamp_ms, at(7).timestamp_millis());
        let last = a.last_failure.as_ref().unwrap();
        assert_eq!((last.attempt, last.error.as_str()), (2, "HTTP 500"));
    }

    #[test]
    fn a_call_parked_for_a_non_retryable_answer_says_so() {
        let process = process(xdb_protocol::ProcessStatus::Running);
        let states = [state("A-1", StateExecutionStatus::WaitUntilRunning)];
        let mut parked = task(7, TaskType::WaitUntil, "A-1", 2);
        parked.parked = Some((
            ParkReason::NonRetryable,
            Some("NOT_IMPLEMENTED: no waitUntil".into()),
        ));
        let view = states_view(&process, &states, &[parked], &[], &[]);
        let call = view.states[0].pending_call.as_ref().unwrap();
        assert_eq!((call.attempt, call.phase), (2, CallPhase::Parked));
        assert_eq!(
            call.parked_kind,
            Some(TaskParkedReason::NonRetryableWorkerError)
        );
        assert_eq!(
            call.parked_reason.as_deref(),
            Some("NOT_IMPLEMENTED: no waitUntil")
        );
    }

    #[test]
    fn a_waiting_state_shows_its_timers_and_queues() {
        let process = process(xdb_protocol::ProcessStatus::Running);
        let mut waiting = state("W-1", StateExecutionStatus::WaitingCommands);
        let request = CommandRequest {
            waiting_type: xdb_protocol::CommandWaitingType::AllOfCompletion,
            timer_commands: vec![TimerCommand {
                delay_in_seconds: 60,
            }],
            local_queue_commands: vec![LocalQueueCommand {
                queue_name: "approvals".into(),
                count: Some(2),
            }],
        };
        waiting.command_progress = Some(CommandProgress::new(&request));
        waiting.command_request = Some(request);
        let tasks = [task(3, TaskType::Timer, "W-1", 1)];
        let queued = [("approvals".to_owned(), 1)];
        let view = states_view(&process, &[waiting], &tasks, &queued, &[]);
        let wait = view.states[0].waiting_for.as_ref().unwrap();
        assert_eq!(
            wait.timers[0].due_timestamp_ms,
            Some(at(3).timestamp_millis())
        );
        assert_eq!(wait.timers[0].status, None);
        assert_eq!(
            (wait.local_queues[0].count, wait.local_queues[0].queued),
            (2, 1)
        );
        assert!(view.states[0].pending_call.is_none());
    }
}
