//! Reset: an operator restarts an execution from a named state. A running execution's
//! open states are aborted, their tasks cancelled and the state started, in place; a
//! closed one is continued by a new execution of the same process id.

use chrono::{DateTime, Duration, Utc};
use serde_json::json;
use uuid::Uuid;
use xdb_protocol::{ProcessResetDetails, ProcessStatus, StateMovement};

use super::{start_states, DecideError};
use crate::model::*;
use crate::plan::*;
use crate::validation::check_id;

/// What the operator asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ResetRequest<'a> {
    /// The state to start, with its input and options.
    pub movement: StateMovement,
    pub reason: Option<&'a str>,
    pub identity: Option<&'a str>,
}

/// What a reset writes.
#[derive(Debug, Clone, PartialEq)]
pub struct ResetPlan {
    /// The execution that continues, when the reset one was closed: a new row to insert
    /// (the plan is then for it, and the latest-execution pointer moves to it).
    pub new_execution: Option<ProcessExecution>,
    /// For the running execution, or else the new one.
    pub plan: TransitionPlan,
    /// Tasks of the running execution to delete: every state's call, timer and wait
    /// (the process timeout stays), held by an instance or not, parked or not.
    pub cancel_tasks: Vec<i64>,
    /// The state execution the reset starts.
    pub started: StateExecutionId,
    /// The state executions it aborts.
    pub closed: Vec<StateExecutionId>,
}

/// Decides the reset of `process` (locked), whose states and tasks are `states` and
/// `tasks` as read under that lock. `new_id` names the new execution a closed one gets.
pub fn reset(
    process: &ProcessExecution,
    states: &[StateExecution],
    tasks: &[Task],
    request: &ResetRequest<'_>,
    new_id: Uuid,
    now: DateTime<Utc>,
) -> Result<ResetPlan, DecideError> {
    check_id("stateId", &request.movement.state_id)?;
    if process.status.is_closed() {
        Ok(reopen(process, request, new_id, now))
    } else {
        Ok(restart_in_place(process, states, tasks, request, now))
    }
}

fn details(
    request: &ResetRequest<'_>,
    started: &StateExecutionId,
    closed: &[StateExecutionId],
    reset_from: Option<Uuid>,
) -> HistoryEntry {
    let details = ProcessResetDetails {
        state_execution_id: started.to_string(),
        closed_state_execution_ids: closed.iter().map(ToString::to_string).collect(),
        reset_from: reset_from.map(|id| id.to_string()),
        reason: request.reason.map(str::to_owned),
        identity: request.identity.map(str::to_owned),
    };
    HistoryEntry::new(
        xdb_protocol::HistoryEventType::ProcessReset.as_str(),
        serde_json::to_value(details).expect("reset details serialize"),
    )
}

fn restart_in_place(
    process: &ProcessExecution,
    states: &[StateExecution],
    tasks: &[Task],
    request: &ResetRequest<'_>,
    now: DateTime<Utc>,
) -> ResetPlan {
    let mut plan = TransitionPlan::default();
    let mut closed = Vec::new();
    for state in states.iter().filter(|s| s.status.is_active()) {
        closed.push(state.id.clone());
        plan.state_updates.push(StateUpdate {
            id: state.id.clone(),
            expected_version: state.version,
            status: StateExecutionStatus::Aborted,
            command_request: state.command_request.clone(),
            command_progress: state.command_progress.clone(),
            last_failure: None,
        });
    }
    let mut sequences = process.state_execution_sequences.clone();
    start_states(
        &mut sequences,
        std::slice::from_ref(&request.movement),
        now,
        &mut plan,
    )
    .expect("the state id was checked");
    let started = plan.new_states[0].id.clone();
    plan.process = Some(ProcessUpdate {
        running_state_executions: Some(1),
        state_execution_sequences: Some(sequences),
        ..Default::default()
    });
    plan.history.push(details(request, &started, &closed, None));
    let cancel_tasks = tasks
        .iter()
        .filter(|t| t.state.is_some())
        .map(|t| t.id)
        .collect();
    ResetPlan {
        new_execution: None,
        plan,
        cancel_tasks,
        started,
        closed,
    }
}

fn reopen(
    old: &ProcessExecution,
    request: &ResetRequest<'_>,
    new_id: Uuid,
    now: DateTime<Utc>,
) -> ResetPlan {
    let mut plan = TransitionPlan::default();
    let mut sequences = Default::default();
    start_states(
        &mut sequences,
        std::slice::from_ref(&request.movement),
        now,
        &mut plan,
    )
    .expect("the state id was checked");
    let started = plan.new_states[0].id.clone();
    let execution = ProcessExecution {
        id: new_id,
        status: ProcessStatus::Running,
        start_time: now,
        close_time: None,
        running_state_executions: 1,
        graceful_completion: None,
        state_execution_sequences: sequences,
        result: None,
        failure: None,
        paused: None,
        ..old.clone()
    };
    if execution.timeout_seconds > 0 {
        plan.new_tasks.push(NewTask {
            task_type: TaskType::ProcessTimeout,
            fire_at: now + Duration::seconds(i64::from(execution.timeout_seconds)),
            state: None,
            timer_index: None,
        });
    }
    plan.history.push(HistoryEntry::new(
        events::PROCESS_STARTED,
        json!({
            "processType": execution.process_type,
            "startStateId": request.movement.state_id,
            "terminatedPrevious": null,
            "resetFrom": old.id.to_string(),
        }),
    ));
    plan.history
        .push(details(request, &started, &[], Some(old.id)));
    ResetPlan {
        new_execution: Some(execution),
        plan,
        cancel_tasks: Vec::new(),
        started,
        closed: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use xdb_protocol::{AsyncStateConfig, EncodedObject};

    use super::*;
    use crate::decide::fixtures::{process, state};

    fn request(state_id: &str) -> ResetRequest<'static> {
        ResetRequest {
            movement: StateMovement {
                state_id: state_id.into(),
                state_input: Some(EncodedObject {
                    encoding: "json".into(),
                    data: "1".into(),
                }),
                state_config: None,
            },
            reason: Some("bad deploy"),
            identity: Some("ops"),
        }
    }

    fn task(id: i64, task_type: TaskType, state: Option<&str>) -> Task {
        Task {
            id,
            task_type,
            fire_at: DateTime::<Utc>::UNIX_EPOCH,
            process_execution_id: Uuid::nil(),
            state: state.and_then(StateExecutionId::parse),
            timer_index: None,
            attempt: 1,
            first_attempt_at: None,
            traceparent: None,
        }
    }

    #[test]
    fn a_running_execution_aborts_its_open_states_and_starts_the_state_in_place() {
        let now = Utc::now();
        let mut running = process(2);
        running.state_execution_sequences = [("A".to_string(), 1), ("B".to_string(), 2)]
            .into_iter()
            .collect();
        let mut waiting = state("B", 2, StateExecutionStatus::WaitingCommands);
        waiting.version = 3;
        let states = vec![
            state("A", 1, StateExecutionStatus::Completed),
            state("B", 1, StateExecutionStatus::Aborted),
            waiting,
            state("C", 1, StateExecutionStatus::ExecuteRunning),
        ];
        let tasks = vec![
            task(7, TaskType::Timer, Some("B-2")),
            task(8, TaskType::Execute, Some("C-1")),
            task(9, TaskType::ProcessTimeout, None),
        ];
        let reset = reset(&running, &states, &tasks, &request("A"), Uuid::nil(), now).unwrap();
        assert_eq!(reset.new_execution, None);
        assert_eq!(reset.started.to_string(), "A-2");
        let closed: Vec<String> = reset.closed.iter().map(ToString::to_string).collect();
        assert_eq!(closed, ["B-2", "C-1"]);
        // Every state's task goes; the process timeout stays.
        assert_eq!(reset.cancel_tasks, [7, 8]);
        let updates = &reset.plan.state_updates;
        assert_eq!(updates.len(), 2);
        assert!(updates
            .iter()
            .all(|u| u.status == StateExecutionStatus::Aborted));
        assert_eq!(updates[0].expected_version, 3);
        let new = &reset.plan.new_states[0];
        assert_eq!(new.status, StateExecutionStatus::WaitUntilRunning);
        assert_eq!(new.input.as_ref().unwrap().data, "1");
        assert_eq!(reset.plan.new_tasks.len(), 1);
        assert_eq!(reset.plan.new_tasks[0].task_type, TaskType::WaitUntil);
        let update = reset.plan.process.as_ref().unwrap();
        assert_eq!(update.running_state_executions, Some(1));
        assert_eq!(update.status, None);
        assert_eq!(update.state_execution_sequences.as_ref().unwrap()["A"], 2);
        assert!(!reset.plan.close_execution);
        let event = &reset.plan.history[0];
        assert_eq!(event.event_type, "PROCESS_RESET");
        let details: ProcessResetDetails = serde_json::from_value(event.details.clone()).unwrap();
        assert_eq!(details.state_execution_id, "A-2");
        assert_eq!(details.closed_state_execution_ids, ["B-2", "C-1"]);
        assert_eq!(details.reason.as_deref(), Some("bad deploy"));
        assert_eq!(details.identity.as_deref(), Some("ops"));
        assert_eq!(details.reset_from, None);
    }

    #[test]
    fn a_state_config_skipping_wait_until_starts_with_execute() {
        let mut asked = request("B");
        asked.movement.state_config = Some(AsyncStateConfig {
            skip_wait_until: true,
            ..Default::default()
        });
        let reset = reset(&process(1), &[], &[], &asked, Uuid::nil(), Utc::now()).unwrap();
        assert_eq!(reset.started.to_string(), "B-1");
        assert_eq!(reset.plan.new_tasks[0].task_type, TaskType::Execute);
        assert!(reset.closed.is_empty() && reset.cancel_tasks.is_empty());
    }

    #[test]
    fn a_closed_execution_is_continued_by_a_new_one_linked_to_it() {
        let now = Utc::now();
        let mut old = process(0);
        old.id = Uuid::now_v7();
        old.status = ProcessStatus::Completed;
        old.close_time = Some(now);
        old.timeout_seconds = 60;
        old.state_execution_sequences = [("A".to_string(), 4)].into_iter().collect();
        let states = vec![state("A", 4, StateExecutionStatus::Completed)];
        let new_id = Uuid::now_v7();
        let reset = reset(&old, &states, &[], &request("A"), new_id, now).unwrap();
        let new = reset.new_execution.as_ref().unwrap();
        assert_eq!(new.id, new_id);
        assert_eq!(new.process_id, old.process_id);
        assert_eq!(new.status, ProcessStatus::Running);
        assert_eq!(new.close_time, None);
        assert_eq!(new.running_state_executions, 1);
        assert_eq!(new.state_execution_sequences["A"], 1);
        // Numbers start again in the new execution.
        assert_eq!(reset.started.to_string(), "A-1");
        assert!(reset.closed.is_empty() && reset.cancel_tasks.is_empty());
        assert!(reset.plan.state_updates.is_empty());
        let types: Vec<TaskType> = reset.plan.new_tasks.iter().map(|t| t.task_type).collect();
        assert_eq!(types, [TaskType::WaitUntil, TaskType::ProcessTimeout]);
        let events: Vec<&str> = reset.plan.history.iter().map(|e| e.event_type).collect();
        assert_eq!(events, ["PROCESS_STARTED", "PROCESS_RESET"]);
        assert_eq!(
            reset.plan.history[0].details["resetFrom"],
            old.id.to_string()
        );
        let details: ProcessResetDetails =
            serde_json::from_value(reset.plan.history[1].details.clone()).unwrap();
        assert_eq!(details.reset_from, Some(old.id.to_string()));
    }

    #[test]
    fn a_bad_state_id_is_refused() {
        let error =
            reset(&process(1), &[], &[], &request(""), Uuid::nil(), Utc::now()).unwrap_err();
        assert!(matches!(error, DecideError::Invalid(_)), "{error:?}");
    }
}
