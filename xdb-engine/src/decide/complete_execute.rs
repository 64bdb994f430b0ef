//! execute answered: apply the decision — next states, or closing the thread/process.

use chrono::{DateTime, Utc};
use serde_json::json;
use xdb_protocol::{AsyncStateExecuteResponse, ProcessFailure, ProcessStatus, ThreadCloseType};

use super::{check_running, close, end_thread, start_states, DecideError};
use crate::model::*;
use crate::plan::*;

/// Most next states one decision may start.
pub const MAX_NEXT_STATES: usize = 100;

pub fn complete_execute(
    process: &ProcessExecution,
    state: &StateExecution,
    response: &AsyncStateExecuteResponse,
    now: DateTime<Utc>,
) -> Result<TransitionPlan, DecideError> {
    check_running(process)?;
    let decision = &response.state_decision;
    match (
        decision.next_states.is_empty(),
        &decision.thread_close_decision,
    ) {
        (true, None) => {
            return Err(DecideError::InvalidWorkerResponse(
                "the state decision has neither next states nor a thread close decision".into(),
            ))
        }
        (false, Some(_)) => {
            return Err(DecideError::InvalidWorkerResponse(
                "the state decision has both next states and a thread close decision".into(),
            ))
        }
        _ => {}
    }
    if decision.next_states.len() > MAX_NEXT_STATES {
        return Err(DecideError::InvalidWorkerResponse(format!(
            "the state decision starts more than {MAX_NEXT_STATES} states"
        )));
    }

    let mut plan = TransitionPlan {
        attribute_writes: response.writes.clone(),
        ..Default::default()
    };
    plan.state_updates.push(StateUpdate {
        id: state.id.clone(),
        expected_version: state.version,
        status: StateExecutionStatus::Completed,
        command_request: state.command_request.clone(),
        command_progress: state.command_progress.clone(),
        last_failure: None,
    });
    plan.history.push(HistoryEntry::new(
        events::EXECUTE_COMPLETED,
        json!({ "stateExecutionId": state.id.to_string(), "decision": decision }),
    ));

    let running_after = process.running_state_executions - 1 + decision.next_states.len() as i32;
    if !decision.next_states.is_empty() {
        let mut sequences = process.state_execution_sequences.clone();
        start_states(&mut sequences, &decision.next_states, now, &mut plan)
            .map_err(|e| DecideError::InvalidWorkerResponse(e.to_string()))?;
        let update = plan.process.get_or_insert_with(ProcessUpdate::default);
        update.state_execution_sequences = Some(sequences);
        update.running_state_executions = Some(running_after);
        return Ok(plan);
    }

    let close_decision = decision
        .thread_close_decision
        .as_ref()
        .expect("checked above");
    match close_decision.close_type {
        ThreadCloseType::ForceCompleteProcess => close(
            &mut plan,
            ProcessStatus::Completed,
            close_decision.output.clone(),
            None,
            now,
        ),
        ThreadCloseType::ForceFailProcess => {
            let failure = ProcessFailure {
                reason: format!("state {} decided to fail the process", state.id),
                details: close_decision.output.as_ref().map(|o| o.data.clone()),
            };
            close(&mut plan, ProcessStatus::Failed, None, Some(failure), now)
        }
        ThreadCloseType::GracefulCompleteProcess => {
            plan.process
                .get_or_insert_with(ProcessUpdate::default)
                .graceful_completion = Some(GracefulCompletion {
                output: close_decision.output.clone(),
            });
            end_thread(process, &mut plan, running_after, now);
        }
        ThreadCloseType::DeadEnd => end_thread(process, &mut plan, running_after, now),
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use xdb_protocol::{EncodedObject, StateDecision, StateMovement, ThreadCloseDecision};

    use super::*;
    use crate::decide::fixtures::{process, state};

    fn close_response(close_type: ThreadCloseType) -> AsyncStateExecuteResponse {
        AsyncStateExecuteResponse {
            state_decision: StateDecision {
                next_states: vec![],
                thread_close_decision: Some(ThreadCloseDecision {
                    close_type,
                    output: Some(EncodedObject {
                        encoding: "json".into(),
                        data: "\"done\"".into(),
                    }),
                }),
            },
            ..Default::default()
        }
    }

    fn running() -> StateExecution {
        state("A", 1, StateExecutionStatus::ExecuteRunning)
    }

    #[test]
    fn next_states_run_as_parallel_threads_with_their_own_numbers() {
        let response = AsyncStateExecuteResponse {
            state_decision: StateDecision {
                next_states: ["A", "B"]
                    .iter()
                    .map(|id| StateMovement {
                        state_id: id.to_string(),
                        state_input: None,
                        state_config: None,
                    })
                    .collect(),
                thread_close_decision: None,
            },
            ..Default::default()
        };
        let plan = complete_execute(&process(1), &running(), &response, Utc::now()).unwrap();
        let ids: Vec<String> = plan.new_states.iter().map(|s| s.id.to_string()).collect();
        assert_eq!(ids, vec!["A-2", "B-1"]);
        assert_eq!(
            plan.process.as_ref().unwrap().running_state_executions,
            Some(2)
        );
        assert_eq!(plan.new_tasks.len(), 2);
        assert_eq!(
            plan.state_updates[0].status,
            StateExecutionStatus::Completed
        );
    }

    #[test]
    fn graceful_completion_waits_for_other_threads() {
        let plan = complete_execute(
            &process(2),
            &running(),
            &close_response(ThreadCloseType::GracefulCompleteProcess),
            Utc::now(),
        )
        .unwrap();
        assert!(!plan.closes_process());
        assert_eq!(
            plan.process.as_ref().unwrap().running_state_executions,
            Some(1)
        );
        assert!(plan.process.as_ref().unwrap().graceful_completion.is_some());

        let alone = complete_execute(
            &process(1),
            &running(),
            &close_response(ThreadCloseType::GracefulCompleteProcess),
            Utc::now(),
        )
        .unwrap();
        assert!(alone.closes_process());
        assert!(alone.nothing_else_open, "the last thread, no timeout task");
        assert_eq!(alone.process.unwrap().result.unwrap().data, "\"done\"");

        let mut timed = process(1);
        timed.timeout_seconds = 60;
        let with_timeout = complete_execute(
            &timed,
            &running(),
            &close_response(ThreadCloseType::GracefulCompleteProcess),
            Utc::now(),
        )
        .unwrap();
        assert!(with_timeout.closes_process());
        assert!(!with_timeout.nothing_else_open, "its timeout task is open");
    }

    #[test]
    fn a_dead_end_completes_a_process_with_a_pending_graceful_completion() {
        let mut p = process(1);
        p.graceful_completion = Some(GracefulCompletion { output: None });
        let plan = complete_execute(
            &p,
            &running(),
            &close_response(ThreadCloseType::DeadEnd),
            Utc::now(),
        )
        .unwrap();
        assert_eq!(plan.process.unwrap().status, Some(ProcessStatus::Completed));

        let other = complete_execute(
            &process(1),
            &running(),
            &close_response(ThreadCloseType::DeadEnd),
            Utc::now(),
        )
        .unwrap();
        assert!(!other.closes_process());
    }

    #[test]
    fn force_decisions_close_everything() {
        let plan = complete_execute(
            &process(3),
            &running(),
            &close_response(ThreadCloseType::ForceFailProcess),
            Utc::now(),
        )
        .unwrap();
        assert!(plan.close_execution);
        assert!(!plan.nothing_else_open, "other threads run");
        assert_eq!(plan.process.unwrap().status, Some(ProcessStatus::Failed));
    }

    #[test]
    fn an_empty_decision_is_a_worker_error() {
        let err = complete_execute(
            &process(1),
            &running(),
            &AsyncStateExecuteResponse::default(),
            Utc::now(),
        )
        .unwrap_err();
        assert!(matches!(err, DecideError::InvalidWorkerResponse(_)));
    }
}
