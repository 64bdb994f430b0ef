//! `xdb states`: a row per state execution, its call, last failure and what it waits for.

use xdb_protocol::{
    CallPhase, PendingCall, ProcessExecutionStatesResponse, StateExecutionInfo, StateFailure,
    WaitingFor,
};

use super::{name, paused_text};
use crate::format::{between_ms, duration, table, truncate};

/// `in 12.0s` for a time to come, `3m05s ago` for one past.
fn relative(at_ms: i64, now_ms: i64) -> String {
    if at_ms > now_ms {
        format!("in {}", duration(between_ms(now_ms, at_ms)))
    } else {
        format!("{} ago", duration(between_ms(at_ms, now_ms)))
    }
}

/// The failure column is cut to this many characters (the JSON answer has it whole).
const FAILURE_WIDTH: usize = 50;

fn call_cells(call: Option<&PendingCall>, now_ms: i64) -> [String; 3] {
    match call {
        None => ["-".into(), "-".into(), "-".into()],
        Some(c) => [
            format!("{} #{}", name(&c.api), c.attempt),
            name(&c.phase),
            match c.phase {
                CallPhase::Running => "-".to_string(),
                _ => relative(c.due_timestamp_ms, now_ms),
            },
        ],
    }
}

fn failure_cell(f: Option<&StateFailure>) -> String {
    match f {
        None => "-".to_string(),
        Some(f) => {
            // One line: the worker's detail may span several.
            let error = f.error.split_whitespace().collect::<Vec<_>>().join(" ");
            truncate(&format!("#{}: {error}", f.attempt), FAILURE_WIDTH)
        }
    }
}

/// What a waiting state waits for: `ANY_OF_COMPLETION: timer 60s (in 59.0s), queue
/// verify 0/1`; the waiting type only with more than one command.
pub fn waiting_for_text(w: &WaitingFor, now_ms: i64) -> String {
    let timers = w.timers.iter().map(|t| {
        let when = match (&t.status, t.due_timestamp_ms) {
            (Some(status), _) => name(status),
            (None, Some(due)) => relative(due, now_ms),
            (None, None) => "pending".to_string(),
        };
        format!("timer {}s ({when})", t.delay_in_seconds)
    });
    let queues = w.local_queues.iter().map(|q| match &q.status {
        Some(status) => format!("queue {} ({})", q.queue_name, name(status)),
        None => format!("queue {} ({}/{} queued)", q.queue_name, q.queued, q.count),
    });
    let parts: Vec<String> = timers.chain(queues).collect();
    match parts.len() {
        0 => "nothing (no commands)".to_string(),
        1 => parts[0].clone(),
        _ => format!("{}: {}", name(&w.waiting_type), parts.join(", ")),
    }
}

fn state_row(st: &StateExecutionInfo, now_ms: i64) -> Vec<String> {
    let [call, phase, due] = call_cells(st.pending_call.as_ref(), now_ms);
    vec![
        st.state_execution_id.clone(),
        name(&st.status),
        call,
        phase,
        due,
        failure_cell(st.last_failure.as_ref()),
        st.waiting_for
            .as_ref()
            .map_or("-".to_string(), |w| waiting_for_text(w, now_ms)),
    ]
}

/// `xdb states`: the execution's status (and pause), a row per state execution, and a
/// note for each parked call saying why and how to release it.
pub fn states(process_id: &str, s: &ProcessExecutionStatesResponse, now_ms: i64) -> String {
    let mut out = format!(
        "Execution {}  {}\n",
        s.process_execution_id,
        s.status.as_str()
    );
    if let Some(paused) = &s.paused {
        out.push_str(&format!(
            "Paused {} (xdb resume {process_id})\n",
            paused_text(paused, now_ms)
        ));
    }
    let rows: Vec<Vec<String>> = s.states.iter().map(|st| state_row(st, now_ms)).collect();
    out.push_str(&table(
        &[
            "STATE EXECUTION",
            "STATUS",
            "CALL",
            "PHASE",
            "DUE",
            "LAST FAILURE",
            "WAITING FOR",
        ],
        &rows,
    ));
    for st in &s.states {
        if let Some(call) = st
            .pending_call
            .as_ref()
            .filter(|c| c.phase == CallPhase::Parked)
        {
            out.push_str(&format!(
                "{} is parked: {} (xdb retry {process_id} --state {})\n",
                st.state_execution_id,
                call.parked_reason.as_deref().unwrap_or("no reason given"),
                st.state_execution_id
            ));
        }
    }
    out
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use serde_json::json;

    pub(in crate::views) fn states_response() -> ProcessExecutionStatesResponse {
        serde_json::from_value(json!({
            "processExecutionId": "e1", "status": "RUNNING",
            "paused": {"sinceTimestampMs": 0, "reason": "look", "identity": "ann"},
            "states": [
                {"stateExecutionId": "Submit-1", "stateId": "Submit", "status": "COMPLETED",
                 "startedTimestampMs": 0},
                {"stateExecutionId": "Verify-1", "stateId": "Verify",
                 "status": "WAITING_COMMANDS", "startedTimestampMs": 0,
                 "waitingFor": {"waitingType": "ANY_OF_COMPLETION",
                    "timers": [{"delayInSeconds": 60, "dueTimestampMs": 70_000}],
                    "localQueues": [{"queueName": "verify", "count": 1, "queued": 0}]}},
                {"stateExecutionId": "Charge-1", "stateId": "Charge",
                 "status": "EXECUTE_RUNNING", "startedTimestampMs": 0,
                 "pendingCall": {"api": "execute", "attempt": 3, "phase": "SCHEDULED",
                    "dueTimestampMs": 22_000},
                 "lastFailure": {"api": "execute", "attempt": 2,
                    "error": "HTTP 500:\n  connection reset by peer while reading the answer of the worker",
                    "timestampMs": 9_000}},
                {"stateExecutionId": "Mail-1", "stateId": "Mail",
                 "status": "WAIT_UNTIL_RUNNING", "startedTimestampMs": 0,
                 "pendingCall": {"api": "waitUntil", "attempt": 1, "phase": "PARKED",
                    "dueTimestampMs": 4_000, "parkedReason": "refused 5 times"}}
            ]
        }))
        .unwrap()
    }

    #[test]
    fn states_table_shows_calls_failures_and_waits() {
        let text = states("p1", &states_response(), 10_000);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Execution e1  RUNNING");
        assert_eq!(
            lines[1],
            "Paused since 1970-01-01 00:00:00.000Z (10.0s ago) by ann: look (xdb resume p1)"
        );
        assert!(
            lines[2]
                .starts_with("STATE EXECUTION  STATUS              CALL          PHASE      DUE"),
            "{text}"
        );
        assert!(
            lines[3].starts_with("Submit-1         COMPLETED           -"),
            "{text}"
        );
        assert!(
            lines[4]
                .ends_with("  ANY_OF_COMPLETION: timer 60s (in 1m00s), queue verify (0/1 queued)"),
            "{text}"
        );
        assert!(
            lines[5].starts_with(
                "Charge-1         EXECUTE_RUNNING     execute #3    SCHEDULED  in 12.0s"
            ),
            "{text}"
        );
        assert!(
            lines[5].contains("#2: HTTP 500: connection reset by peer while read…  -"),
            "{text}"
        );
        assert!(
            lines[6].starts_with(
                "Mail-1           WAIT_UNTIL_RUNNING  waitUntil #1  PARKED     6.0s ago"
            ),
            "{text}"
        );
        assert_eq!(
            lines[7],
            "Mail-1 is parked: refused 5 times (xdb retry p1 --state Mail-1)"
        );
        assert_eq!(lines.len(), 8, "{text}");
    }

    #[test]
    fn waiting_for_names_fired_and_received_commands() {
        let w: WaitingFor = serde_json::from_value(json!({
            "waitingType": "ALL_OF_COMPLETION",
            "timers": [{"delayInSeconds": 5, "status": "FIRED"}],
            "localQueues": []
        }))
        .unwrap();
        assert_eq!(waiting_for_text(&w, 0), "timer 5s (FIRED)");
        let w: WaitingFor = serde_json::from_value(json!({
            "waitingType": "ALL_OF_COMPLETION", "timers": [],
            "localQueues": [{"queueName": "a", "count": 2, "queued": 3, "status": "RECEIVED"},
                            {"queueName": "b", "count": 1, "queued": 0}]
        }))
        .unwrap();
        assert_eq!(
            waiting_for_text(&w, 0),
            "ALL_OF_COMPLETION: queue a (RECEIVED), queue b (0/1 queued)"
        );
    }
}
