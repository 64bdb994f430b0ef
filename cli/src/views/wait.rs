//! `xdb wait`: its result, and the progress line while it waits.

use xdb_protocol::{
    CallPhase, ProcessExecutionStatesResponse, ProcessExecutionWaitForCompletionResponse,
    StateExecutionStatus,
};

use super::{failure_text, name};
use crate::format::{duration, key_values};
use crate::payload::show_payload;

pub fn wait_result(w: &ProcessExecutionWaitForCompletionResponse) -> String {
    let mut pairs = vec![
        ("Execution id", w.process_execution_id.clone()),
        ("Status", w.status.as_str().to_string()),
    ];
    if w.timed_out {
        pairs.push(("Timed out", "still running".to_string()));
    }
    if w.result.is_some() {
        pairs.push(("Result", show_payload(w.result.as_ref())));
    }
    if w.failure.is_some() {
        pairs.push(("Failure", failure_text(w.failure.as_ref())));
    }
    key_values(&pairs)
}

/// The progress line of `wait`; `states` (from [`active_states`]) replaces the count of
/// running states when known.
pub fn progress_line(
    process_id: &str,
    status: &str,
    paused: bool,
    running_states: Option<i32>,
    states: Option<&str>,
    waited: std::time::Duration,
) -> String {
    let paused = if paused { " (paused)" } else { "" };
    let states = match (states, running_states) {
        (Some(states), _) if !states.is_empty() => format!(", {states}"),
        (_, Some(1)) => ", 1 state running".to_string(),
        (_, Some(n)) => format!(", {n} states running"),
        (_, None) => String::new(),
    };
    format!(
        "waiting for {process_id}: {status}{paused}{states}, {} elapsed",
        duration(waited)
    )
}

/// The states not yet ended, each as `id STATUS` (with its call's phase when it is not
/// simply scheduled or running), at most `max` of them and then how many more.
pub fn active_states(s: &ProcessExecutionStatesResponse, max: usize) -> String {
    let active: Vec<String> = s
        .states
        .iter()
        .filter(|st| {
            !matches!(
                st.status,
                StateExecutionStatus::Completed
                    | StateExecutionStatus::Failed
                    | StateExecutionStatus::Aborted
            )
        })
        .map(|st| {
            let phase = match &st.pending_call {
                Some(call) if matches!(call.phase, CallPhase::Parked | CallPhase::Paused) => {
                    format!(" {}", name(&call.phase))
                }
                Some(call) if call.attempt > 1 => format!(" attempt {}", call.attempt),
                _ => String::new(),
            };
            format!("{} {}{phase}", st.state_execution_id, name(&st.status))
        })
        .collect();
    let mut text = active
        .iter()
        .take(max)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if active.len() > max {
        text.push_str(&format!(" and {} more", active.len() - max));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::states::tests::states_response;
    use std::time::Duration;
    use xdb_protocol::{EncodedObject, ProcessStatus};

    #[test]
    fn wait_result_and_progress() {
        let w = ProcessExecutionWaitForCompletionResponse {
            process_execution_id: "e1".into(),
            status: ProcessStatus::Completed,
            timed_out: false,
            result: Some(EncodedObject::json(&"done").unwrap()),
            failure: None,
        };
        assert_eq!(
            wait_result(&w),
            "Execution id  e1\nStatus        COMPLETED\nResult        \"done\"\n"
        );
        assert_eq!(
            progress_line(
                "p1",
                "RUNNING",
                false,
                Some(2),
                None,
                Duration::from_secs(75)
            ),
            "waiting for p1: RUNNING, 2 states running, 1m15s elapsed"
        );
        assert_eq!(
            progress_line(
                "p1",
                "RUNNING",
                false,
                Some(1),
                Some(""),
                Duration::from_millis(300)
            ),
            "waiting for p1: RUNNING, 1 state running, 300ms elapsed"
        );
        let active = active_states(&states_response(), 3);
        assert_eq!(
            active,
            "Verify-1 WAITING_COMMANDS, Charge-1 EXECUTE_RUNNING attempt 3, Mail-1 WAIT_UNTIL_RUNNING PARKED"
        );
        assert_eq!(
            active_states(&states_response(), 1),
            "Verify-1 WAITING_COMMANDS and 2 more"
        );
        assert_eq!(
            progress_line(
                "p1",
                "RUNNING",
                true,
                Some(1),
                Some(&active[..25]),
                Duration::from_secs(2)
            ),
            "waiting for p1: RUNNING (paused), Verify-1 WAITING_COMMANDS, 2.0s elapsed"
        );
    }
}
