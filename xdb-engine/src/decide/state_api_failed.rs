//! A worker call failed: retry with backoff, or apply the state's failure recovery.

use chrono::{DateTime, Utc};
use serde_json::json;
use xdb_protocol::{
    EncodedObject, FailureRecoveryPolicy, HistoryEventType, ProcessFailure, ProcessStatus,
    StateMovement, TaskParkedDetails, TaskParkedReason, WorkerErrorType,
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

/// How an attempt failed, as the retry decision sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptFailure {
    /// What failed, for people: the history and the states view.
    pub error: String,
    /// The worker answered that the call can never succeed as it stands.
    pub non_retryable: Option<NonRetryable>,
}

/// A worker's answer naming a non-retryable [`WorkerErrorType`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonRetryable {
    pub error_type: WorkerErrorType,
    pub detail: String,
}

impl AttemptFailure {
    /// A failure the retry policy judges (a worker's error, a timeout, an unusable
    /// answer, a refusal by the business table).
    pub fn retryable(error: impl Into<String>) -> Self {
        Self {
            error: error.into(),
            non_retryable: None,
        }
    }

    /// The worker answered `error_type` (non-retryable) with `detail`.
    pub fn non_retryable(
        error: impl Into<String>,
        error_type: WorkerErrorType,
        detail: &str,
    ) -> Self {
        Self {
            error: error.into(),
            non_retryable: Some(NonRetryable {
                error_type,
                detail: detail.to_owned(),
            }),
        }
    }
}

impl NonRetryable {
    /// Kept with the parked task, shown as the states view's `parkedReason`.
    pub fn park_note(&self) -> String {
        format!("{}: {}", self.error_type, self.detail)
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
    /// The call can never succeed as the worker stands: set the task aside, due as the
    /// next attempt when an operator releases it (`retry-now`), with `note` kept as the
    /// reason; `history` records the failed attempt and the parking.
    Park {
        note: String,
        history: Vec<HistoryEntry>,
    },
}

/// `attempt` (1-based) of `api` failed with `failure` at `now`: a retry by the state's
/// policy, or its failure recovery once the policy gives up; but an answer that can never
/// succeed is parked at once, whatever attempts the policy has left, so no retries are
/// spent on it and no recovery runs before an operator decides.
pub fn state_api_failed(
    process: &ProcessExecution,
    state: &StateExecution,
    api: StateApi,
    attempt: u32,
    first_attempt_at: DateTime<Utc>,
    failure: &AttemptFailure,
    now: DateTime<Utc>,
) -> FailureOutcome {
    let error = failure.error.as_str();
    if let Some(never) = &failure.non_retryable {
        let failed = json!({
            "stateExecutionId": state.id.to_string(),
            "api": api.as_str(),
            "attempt": attempt,
            "error": error,
            "nonRetryableErrorType": never.error_type.as_str(),
        });
        let parked = TaskParkedDetails {
            state_execution_id: Some(state.id.to_string()),
            task_type: match api {
                StateApi::WaitUntil => TaskType::WaitUntil,
                StateApi::Execute => TaskType::Execute,
            }
            .as_str()
            .to_owned(),
            reason: TaskParkedReason::NonRetryableWorkerError,
            refusals: 0,
            error: never.detail.clone(),
            worker_error_type: Some(never.error_type.as_str().to_owned()),
        };
        return FailureOutcome::Park {
            note: never.park_note(),
            history: vec![
                HistoryEntry::new(events::STATE_API_FAILED, failed),
                HistoryEntry::new(HistoryEventType::TaskParked.as_str(), json!(parked)),
            ],
        };
    }
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

    fn boom() -> AttemptFailure {
        AttemptFailure::retryable("boom")
    }

    fn never(error_type: WorkerErrorType) -> AttemptFailure {
        AttemptFailure::non_retryable(
            "worker answered HTTP 400: no state X",
            error_type,
            "no state X",
        )
    }

    #[test]
    fn a_non_retryable_answer_parks_at_once_whatever_the_policy() {
        let now = Utc::now();
        let mut unlimited = failing_state(None);
        unlimited.config.execute_api_retry_policy = None;
        for s in [failing_state(None), unlimited] {
            for kind in WorkerErrorType::ALL.into_iter().filter(|k| !k.retryable()) {
                let outcome = state_api_failed(
                    &process(1),
                    &s,
                    StateApi::Execute,
                    1,
                    now,
                    &never(kind),
                    now,
                );
                let FailureOutcome::Park { note, history } = outcome else {
                    panic!("{kind}: expected park, got {outcome:?}");
                };
                assert_eq!(note, format!("{kind}: no state X"));
                let types: Vec<&str> = history.iter().map(|h| h.event_type).collect();
                assert_eq!(types, ["STATE_API_FAILED", "TASK_PARKED"]);
                assert_eq!(history[0].details["attempt"], 1);
                assert_eq!(history[0].details["nonRetryableErrorType"], kind.as_str());
                let parked: TaskParkedDetails =
                    serde_json::from_value(history[1].details.clone()).unwrap();
                assert_eq!(parked.reason, TaskParkedReason::NonRetryableWorkerError);
                assert_eq!(parked.worker_error_type.as_deref(), Some(kind.as_str()));
                assert_eq!(parked.error, "no state X");
                assert_eq!(parked.task_type, "EXECUTE");
                assert_eq!(parked.state_execution_id.as_deref(), Some("Create-1"));
            }
        }
    }

    #[test]
    fn a_retryable_worker_error_spends_the_policy() {
        let now = Utc::now();
        let s = failing_state(None);
        let failure = AttemptFailure::retryable("worker answered HTTP 500: boom");
        assert!(matches!(
            state_api_failed(&process(1), &s, StateApi::WaitUntil, 1, now, &failure, now),
            FailureOutcome::Retry { .. }
        ));
    }

    #[test]
    fn retries_until_max_attempts_then_fails_the_process() {
        let now = Utc::now();
        let s = failing_state(None);
        assert!(matches!(
            state_api_failed(&process(1), &s, StateApi::Execute, 1, now, &boom(), now),
            FailureOutcome::Retry { .. }
        ));
        let FailureOutcome::GiveUp(plan) =
            state_api_failed(&process(1), &s, StateApi::Execute, 2, now, &boom(), now)
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
            state_api_failed(&process(1), &s, StateApi::Execute, 2, now, &boom(), now)
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
