//! Which of an execution's tasks an operator's control acts on, decided from the tasks as
//! locked: pure, so every rule is unit-tested (the IO is in `operations::controls`).

use chrono::{DateTime, Utc};
use xdb_engine::{StateExecutionId, TaskType};
use xdb_protocol::MAX_CONTROL_TEXT;

use crate::tables::{ParkReason, TaskView};

/// A control's request, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ControlTarget {
    /// Only this state execution.
    pub state: Option<StateExecutionId>,
}

/// Checks a control's free text and target; `Err` names the field.
pub(crate) fn check_request(
    state_execution_id: Option<&str>,
    reason: Option<&str>,
    identity: Option<&str>,
    targets_states: bool,
) -> Result<ControlTarget, (&'static str, String)> {
    for (field, text) in [("reason", reason), ("identity", identity)] {
        if text.is_some_and(|t| t.len() > MAX_CONTROL_TEXT) {
            return Err((field, format!("at most {MAX_CONTROL_TEXT} bytes")));
        }
    }
    let state = match state_execution_id {
        None => None,
        Some(_) if !targets_states => {
            return Err((
                "stateExecutionId",
                "pause and resume act on the whole execution".to_owned(),
            ))
        }
        Some(text) => Some(StateExecutionId::parse(text).ok_or_else(|| {
            (
                "stateExecutionId",
                format!("{text:?} is not a state execution id (stateId-number)"),
            )
        })?),
    };
    Ok(ControlTarget { state })
}

/// A task that calls a state's API: its waitUntil or execute, or a timer of it past its
/// first attempt or parked (the firing calls the state's execute, and until an attempt
/// succeeds the timer task stands for that call, retried by the state's policy).
fn is_state_call(view: &TaskView) -> bool {
    match view.task.task_type {
        TaskType::WaitUntil | TaskType::Execute => true,
        TaskType::Timer => view.task.state.is_some() && (view.task.attempt > 1 || refused(view)),
        TaskType::ProcessTimeout => false,
    }
}

fn targeted(view: &TaskView, target: &ControlTarget) -> bool {
    match &target.state {
        None => true,
        Some(state) => view.task.state.as_ref() == Some(state),
    }
}

/// Parked for an operator: refused by the database, or a non-retryable worker error.
fn refused(view: &TaskView) -> bool {
    matches!(view.parked, Some((reason, _)) if reason.awaits_operator())
}

/// A state call waiting for the end of its backoff: a failed attempt's retry.
fn waiting_for_retry(view: &TaskView, now: DateTime<Utc>) -> bool {
    is_state_call(view)
        && view.parked.is_none()
        && view.lease_owner.is_none()
        && view.task.attempt > 1
        && view.task.fire_at > now
}

/// Why nothing matched: an attempt of a targeted state is being called right now, or
/// else `otherwise`.
fn nothing_applies(tasks: &[TaskView], target: &ControlTarget, otherwise: &str) -> String {
    let running = tasks
        .iter()
        .find(|v| is_state_call(v) && v.lease_owner.is_some() && targeted(v, target));
    match (running, &target.state) {
        (Some(view), _) => format!(
            "attempt {} of state {} is being called right now; try again once it has failed",
            view.task.attempt,
            view.task
                .state
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default()
        ),
        (None, Some(state)) => format!("state {state}: {otherwise}"),
        (None, None) => otherwise.to_owned(),
    }
}

/// retry-now: state calls waiting for their backoff, and tasks parked after refusals.
pub(crate) fn retry_now<'a>(
    tasks: &'a [TaskView],
    target: &ControlTarget,
    now: DateTime<Utc>,
) -> Result<Vec<&'a TaskView>, String> {
    let picked: Vec<&TaskView> = tasks
        .iter()
        .filter(|v| targeted(v, target) && (refused(v) || waiting_for_retry(v, now)))
        .collect();
    if picked.is_empty() {
        return Err(nothing_applies(
            tasks,
            target,
            "nothing waits for a retry (no failed attempt waits for its backoff, no task is parked)",
        ));
    }
    Ok(picked)
}

/// give-up: failing state calls, waiting for their next attempt or parked.
pub(crate) fn give_up<'a>(
    tasks: &'a [TaskView],
    target: &ControlTarget,
) -> Result<Vec<&'a TaskView>, String> {
    let picked: Vec<&TaskView> = tasks
        .iter()
        .filter(|v| {
            targeted(v, target)
                && is_state_call(v)
                && v.lease_owner.is_none()
                && (refused(v) || (v.parked.is_none() && v.task.attempt > 1))
        })
        .collect();
    if picked.is_empty() {
        return Err(nothing_applies(
            tasks,
            target,
            "no state is failing (none has a failed attempt waiting for its retry)",
        ));
    }
    Ok(picked)
}

/// pause: the tasks to set aside (those no instance holds; one held finishes its call).
pub(crate) fn to_hold(tasks: &[TaskView]) -> Vec<&TaskView> {
    tasks
        .iter()
        .filter(|v| v.parked.is_none() && v.lease_owner.is_none())
        .collect()
}

/// resume: the tasks set aside by the pause.
pub(crate) fn to_release(tasks: &[TaskView]) -> Vec<&TaskView> {
    tasks
        .iter()
        .filter(|v| matches!(v.parked, Some((ParkReason::Paused, _))))
        .collect()
}

/// The state executions `tasks` belong to, each once, in order.
pub(crate) fn state_ids(tasks: &[&TaskView]) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for id in tasks.iter().filter_map(|v| v.task.state.as_ref()) {
        let id = id.to_string();
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids
}

#[cfg(test)]
mod tests {
    use chrono::Duration;
    use uuid::Uuid;
    use xdb_engine::Task;

    use super::*;

    fn task(id: i64, task_type: TaskType, state: &str, attempt: i32, due_in: i64) -> TaskView {
        TaskView {
            task: Task {
                id,
                task_type,
                fire_at: now() + Duration::seconds(due_in),
                process_execution_id: Uuid::nil(),
                state: StateExecutionId::parse(state),
                timer_index: None,
                attempt,
                first_attempt_at: None,
                traceparent: None,
            },
            lease_owner: None,
            parked: None,
            rate_limited: false,
        }
    }

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap()
    }

    fn all() -> ControlTarget {
        ControlTarget { state: None }
    }

    fn only(state: &str) -> ControlTarget {
        ControlTarget {
            state: StateExecutionId::parse(state),
        }
    }

    #[test]
    fn retry_now_takes_backoffs_and_refused_tasks_only() {
        let mut refused = task(3, TaskType::Timer, "B-1", 1, 0);
        refused.parked = Some((ParkReason::Refused, Some("boom".into())));
        let mut paused = task(4, TaskType::Execute, "C-1", 2, 10);
        paused.parked = Some((ParkReason::Paused, None));
        let tasks = vec![
            task(1, TaskType::Execute, "A-1", 3, 30),
            // A first attempt due now: nothing to hurry.
            task(2, TaskType::WaitUntil, "A-2", 1, 0),
            refused,
            paused,
            // A timer is not a retry.
            task(5, TaskType::Timer, "D-1", 1, 60),
        ];
        let picked = retry_now(&tasks, &all(), now()).unwrap();
        assert_eq!(picked.iter().map(|v| v.task.id).collect::<Vec<_>>(), [1, 3]);
        assert_eq!(state_ids(&picked), ["A-1", "B-1"]);
        let picked = retry_now(&tasks, &only("B-1"), now()).unwrap();
        assert_eq!(picked.len(), 1);
    }

    #[test]
    fn a_running_attempt_is_named_when_nothing_else_applies() {
        let mut running = task(1, TaskType::Execute, "A-1", 2, -1);
        running.lease_owner = Some("async-1".into());
        let tasks = vec![running];
        let error = retry_now(&tasks, &all(), now()).unwrap_err();
        assert!(
            error.contains("attempt 2 of state A-1 is being called"),
            "{error}"
        );
        let error = give_up(&tasks, &all()).unwrap_err();
        assert!(error.contains("being called right now"), "{error}");
        let error = give_up(&[], &only("X-1")).unwrap_err();
        assert!(
            error.starts_with("state X-1: no state is failing"),
            "{error}"
        );
    }

    #[test]
    fn give_up_takes_failing_state_calls() {
        let mut refused = task(2, TaskType::Execute, "B-1", 1, 0);
        refused.parked = Some((ParkReason::Refused, None));
        let mut refused_timer = task(6, TaskType::Timer, "F-1", 1, 0);
        refused_timer.parked = Some((ParkReason::Refused, None));
        let mut paused_timer = task(7, TaskType::Timer, "G-1", 1, 0);
        paused_timer.parked = Some((ParkReason::Paused, None));
        let mut refused_timeout = task(8, TaskType::ProcessTimeout, "", 1, 0);
        refused_timeout.parked = Some((ParkReason::Refused, None));
        let tasks = vec![
            task(1, TaskType::Execute, "A-1", 2, 5),
            refused,
            task(3, TaskType::Execute, "C-1", 1, 0),
            // A timer whose firing's execute failed: it stands for the execute's retry.
            task(4, TaskType::Timer, "D-1", 2, 5),
            // A timer that has not fired yet: nothing fails.
            task(5, TaskType::Timer, "E-1", 1, 5),
            refused_timer,
            paused_timer,
            // No state's recovery applies to the execution's deadline.
            refused_timeout,
        ];
        let picked = give_up(&tasks, &all()).unwrap();
        let ids = picked.iter().map(|v| v.task.id).collect::<Vec<_>>();
        assert_eq!(ids, [1, 2, 4, 6]);
        assert!(give_up(&tasks, &only("E-1")).is_err());
        assert!(give_up(&tasks, &only("G-1")).is_err());
    }

    #[test]
    fn a_timer_standing_for_its_failing_execute_is_retried_now_and_named_while_called() {
        let tasks = vec![
            task(1, TaskType::Timer, "A-1", 3, 300),
            task(2, TaskType::Timer, "B-1", 1, 300),
        ];
        let picked = retry_now(&tasks, &all(), now()).unwrap();
        assert_eq!(picked.iter().map(|v| v.task.id).collect::<Vec<_>>(), [1]);
        let mut running = task(1, TaskType::Timer, "A-1", 3, -1);
        running.lease_owner = Some("async-1".into());
        let error = give_up(&[running], &all()).unwrap_err();
        assert!(
            error.contains("attempt 3 of state A-1 is being called"),
            "{error}"
        );
    }

    #[test]
    fn a_call_parked_for_a_non_retryable_answer_is_retried_now_or_given_up() {
        let mut never = task(1, TaskType::Execute, "A-1", 2, 0);
        never.parked = Some((
            ParkReason::NonRetryable,
            Some("UNKNOWN_STATE: no state A".into()),
        ));
        let tasks = vec![never];
        let ids = |views: Vec<&TaskView>| views.iter().map(|v| v.task.id).collect::<Vec<_>>();
        assert_eq!(ids(retry_now(&tasks, &all(), now()).unwrap()), [1]);
        assert_eq!(ids(give_up(&tasks, &only("A-1")).unwrap()), [1]);
        // A pause neither holds it again nor releases it on resume.
        assert!(to_hold(&tasks).is_empty());
        assert!(to_release(&tasks).is_empty());
    }

    #[test]
    fn pause_holds_free_tasks_and_resume_releases_what_pause_held() {
        let mut held = task(1, TaskType::Execute, "A-1", 1, 0);
        held.lease_owner = Some("async-1".into());
        let mut paused = task(3, TaskType::Timer, "B-1", 1, 0);
        paused.parked = Some((ParkReason::Paused, None));
        let mut refused = task(4, TaskType::Execute, "C-1", 1, 0);
        refused.parked = Some((ParkReason::Refused, None));
        let tasks = vec![held, task(2, TaskType::Timer, "A-1", 1, 9), paused, refused];
        let ids = |views: Vec<&TaskView>| views.iter().map(|v| v.task.id).collect::<Vec<_>>();
        assert_eq!(ids(to_hold(&tasks)), [2]);
        assert_eq!(ids(to_release(&tasks)), [3]);
    }

    #[test]
    fn requests_are_checked() {
        assert_eq!(
            check_request(Some("A-2"), None, None, true).unwrap(),
            only("A-2")
        );
        assert_eq!(
            check_request(Some("A"), None, None, true).unwrap_err().0,
            "stateExecutionId"
        );
        assert_eq!(
            check_request(Some("A-1"), None, None, false).unwrap_err().0,
            "stateExecutionId"
        );
        let long = "x".repeat(MAX_CONTROL_TEXT + 1);
        assert_eq!(
            check_request(None, Some(&long), None, true).unwrap_err().0,
            "reason"
        );
    }
}
