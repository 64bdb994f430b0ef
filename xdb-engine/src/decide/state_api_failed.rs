//! A worker call failed: retry with backoff, or apply the state's failure recovery.

use chrono::{DateTime, Utc};
use serde_json::json;
use xdb_protocol::{
    EncodedObject, FailureRecoveryPolicy, ProcessFailure, ProcessStatus, StateMovement,
};

use super::{close, start_states};
use crate::model::*;
use crate::plan::*;
use crate::retry::{next_attempt, RetryDecision};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateApi {
    WaitUntil,
    Execute,
}

impl StateApi {
    pub fn as_str(self) -> &'static str {
        match self {
            StateApi::WaitUntil => "waitUntil",
            StateApi::Execute => "execute",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum FailureOutcome {
    /// Try the same task again at this time, with the next attempt number.
    Retry {
        at: DateTime<Utc>,
        history: HistoryEntry,
    },
    /// Retries are exhausted: the recovery plan.
    GiveUp(Box<TransitionPlan>),
}

/// `attempt` (1-based) of `api` failed with `error` at `now`.
pub fn state_api_failed(
    process: &ProcessExecution,
    state: &StateExecution,
    api: StateApi,
    attempt: u32,
    first_attempt_at: DateTime<Utc>,
    error: &str,
    now: DateTime<Utc>,
) -> FailureOutcome {
    let policy = match api {
        StateApi::WaitUntil => state.config.wait_until_api_retry_policy.as_ref(),
        StateApi::Execute => state.config.execute_api_retry_policy.as_ref(),
    };
    let details = json!({
        "stateExecutionId": state.id.to_string(),
        "api": api.as_str(),
        "attempt": attempt,
        "error": error,
    });
    if let RetryDecision::RetryAt(at) = next_attempt(policy, attempt, first_attempt_at, now) {
        return FailureOutcome::Retry {
            at,
            history: HistoryEntry::new(events::STATE_API_FAILED, details),
        };
    }
    FailureOutcome::GiveUp(Box::new(recovery_plan(
        process, state, details, api, error, now,
    )))
}

/// `attempt` of `api` failed with `error`, and is not to be retried whatever the retry
/// policy says: the state's failure recovery, as when its retries are exhausted. For a
/// task that could not be handled at all (Pulsar mode's dead-letter path: its message
/// was delivered the maximum number of times without its transition being recorded).
pub fn state_api_given_up(
    process: &ProcessExecution,
    state: &StateExecution,
    api: StateApi,
    attempt: u32,
    error: &str,
    now: DateTime<Utc>,
) -> TransitionPlan {
    let details = json!({
        "stateExecutionId": state.id.to_string(),
        "api": api.as_str(),
        "attempt": attempt,
        "error": error,
    });
    recovery_plan(process, state, details, api, error, now)
}

/// The state fails; the process fails too, or goes on at the recovery state.
fn recovery_plan(
    process: &ProcessExecution,
    state: &StateExecution,
    details: serde_json::Value,
    api: StateApi,
    error: &str,
    now: DateTime<Utc>,
) -> TransitionPlan {
    let mut plan = TransitionPlan::default();
    plan.state_updates.push(StateUpdate {
        id: state.id.clone(),
        expected_version: state.version,
        status: StateExecutionStatus::Failed,
        command_request: state.command_request.clone(),
        command_progress: state.command_progress.clone(),
        last_failure: Some(details.clone()),
    });
    plan.history
        .push(HistoryEntry::new(events::STATE_FAILED, details.clone()));
    let recovery = state
        .config
        .state_failure_recovery_options
        .clone()
        .unwrap_or_default();
    let proceed_to = match recovery.policy {
        FailureRecoveryPolicy::ProceedToConfiguredState => {
            recovery.state_failure_proceed_state_id.clone()
        }
        FailureRecoveryPolicy::FailProcessOnStateFailure => None,
    };
    match proceed_to {
        Some(next_state_id) => {
            let movement = StateMovement {
                state_id: next_state_id,
                state_input: EncodedObject::json(&details).ok(),
                state_config: recovery.state_failure_proceed_state_config.map(|c| *c),
            };
            let mut sequences = process.state_execution_sequences.clone();
            if start_states(&mut sequences, &[movement], now, &mut plan).is_err() {
                fail_process(&mut plan, state, api, error, now);
            } else {
                // One thread ends, one begins: the running count stays.
                plan.process
                    .get_or_insert_with(ProcessUpdate::default)
                    .state_execution_sequences = Some(sequences);
            }
        }
        None => fail_process(&mut plan, state, api, error, now),
    }
    plan
}

fn fail_process(
    plan: &mut TransitionPlan,
    state: &StateExecution,
    api: StateApi,
    error: &str,
    now: DateTime<Utc>,
) {
    let failure = ProcessFailure {
        reason: format!("state {} failed in {}", state.id, api.as_str()),
        details: Some(error.to_string()),
    };
    close(plan, ProcessStatus::Failed, None, Some(failure), now);
}

#[cfg(test)]
mod tests {
    use xdb_protocol::{RetryPolicy, StateFailureRecoveryOptions};

    use super::*;
    use crate::decide::fixtures::{process, state};

    fn failing_state(recovery: Option<StateFailureRecoveryOptions>) -> StateExecution {
        let mut s = state("Create", 1, StateExecutionStatus::ExecuteRunning);
        s.config.execute_api_retry_policy = Some(RetryPolicy {
            initial_interval_seconds: Some(0.1),
            backoff_coefficient: None,
            maximum_interval_seconds: None,
            maximum_attempts: Some(2),
            maximum_attempts_duration_seconds: None,
        });
        s.config.state_failure_recovery_options = recovery;
        s
    }

    #[test]
    fn retries_until_max_attempts_then_fails_the_process() {
        let now = Utc::now();
        let s = failing_state(None);
        assert!(matches!(
            state_api_failed(&process(1), &s, StateApi::Execute, 1, now, "boom", now),
            FailureOutcome::Retry { .. }
        ));
        let FailureOutcome::GiveUp(plan) =
            state_api_failed(&process(1), &s, StateApi::Execute, 2, now, "boom", now)
        else {
            panic!("expected give up");
        };
        assert_eq!(plan.process.unwrap().status, Some(ProcessStatus::Failed));
        assert_eq!(plan.state_updates[0].status, StateExecutionStatus::Failed);
    }

    #[test]
    fn giving_up_applies_the_recovery_with_attempts_left() {
        let now = Utc::now();
        let s = failing_state(None);
        let plan = state_api_given_up(&process(1), &s, StateApi::Execute, 1, "poison", now);
        assert_eq!(plan.process.unwrap().status, Some(ProcessStatus::Failed));
        assert_eq!(plan.state_updates[0].status, StateExecutionStatus::Failed);
        assert_eq!(plan.history[0].event_type, events::STATE_FAILED);
    }

    #[test]
    fn proceeds_to_the_recovery_state_with_the_failure_as_input() {
        let now = Utc::now();
        let s = failing_state(Some(StateFailureRecoveryOptions {
            policy: FailureRecoveryPolicy::ProceedToConfiguredState,
            state_failure_proceed_state_id: Some("Recover".into()),
            state_failure_proceed_state_config: None,
        }));
        let FailureOutcome::GiveUp(plan) =
            state_api_failed(&process(1), &s, StateApi::Execute, 2, now, "boom", now)
        else {
            panic!("expected give up");
        };
        assert!(!plan.closes_process());
        assert_eq!(plan.new_states[0].id.state_id, "Recover");
        assert!(plan.new_states[0]
            .input
            .as_ref()
            .unwrap()
            .data
            .contains("boom"));
    }
}
