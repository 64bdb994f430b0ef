//! The human (table) rendering of each answer; pure functions of the answer and `now`.

use serde::Serialize;
use xdb_protocol::{
    CallPhase, HistoryEvent, PauseInfo, PendingCall, ProcessExecutionCountResponse,
    ProcessExecutionDescribeResponse, ProcessExecutionHistoryResponse,
    ProcessExecutionStatesResponse, ProcessExecutionSummary,
    ProcessExecutionWaitForCompletionResponse, ProcessFailure, StateExecutionInfo,
    StateExecutionStatus, StateFailure, WaitingFor,
};

use crate::format::{between_ms, duration, key_values, table, timestamp_ms, truncate};
use crate::operate::Control;
use crate::payload::show_payload;

/// How long an execution ran: until its close, or until `now_ms` while it runs.
fn ran_for(start_ms: i64, close_ms: Option<i64>, now_ms: i64) -> String {
    duration(between_ms(start_ms, close_ms.unwrap_or(now_ms)))
}

fn failure_text(failure: Option<&ProcessFailure>) -> String {
    match failure {
        None => "-".to_string(),
        Some(f) => match &f.details {
            Some(details) => format!("{}: {details}", f.reason),
            None => f.reason.clone(),
        },
    }
}

pub fn describe(d: &ProcessExecutionDescribeResponse, now_ms: i64) -> String {
    let mut pairs = vec![
        ("Process id", d.process_id.clone()),
        ("Execution id", d.process_execution_id.clone()),
        ("Type", d.process_type.clone()),
        ("Status", d.status.as_str().to_string()),
        ("Started", timestamp_ms(d.start_timestamp_ms)),
        (
            "Closed",
            d.close_timestamp_ms.map_or("-".to_string(), timestamp_ms),
        ),
        (
            "Duration",
            ran_for(d.start_timestamp_ms, d.close_timestamp_ms, now_ms),
        ),
        ("Running states", d.running_state_executions.to_string()),
        ("Worker", d.worker_url.clone()),
    ];
    if let Some(config) = &d.global_attribute_config {
        pairs.push((
            "Row",
            format!(
                "{} where {} = {}",
                config.table_name, config.primary_key.column, config.primary_key.value
            ),
        ));
    }
    if let Some(paused) = &d.paused {
        pairs.push(("Paused", paused_text(paused, now_ms)));
    }
    if d.parked_tasks > 0 {
        pairs.push((
            "Parked tasks",
            format!(
                "{} (see xdb states; xdb retry releases them)",
                d.parked_tasks
            ),
        ));
    }
    pairs.push(("Result", show_payload(d.result.as_ref())));
    pairs.push(("Failure", failure_text(d.failure.as_ref())));
    key_values(&pairs)
}

/// `since 2024-05-01 12:00:00.000Z (4m05s ago) by ann: investigating`.
pub fn paused_text(p: &PauseInfo, now_ms: i64) -> String {
    let mut text = format!(
        "since {} ({} ago)",
        timestamp_ms(p.since_timestamp_ms),
        duration(between_ms(p.since_timestamp_ms, now_ms))
    );
    if let Some(identity) = &p.identity {
        text.push_str(&format!(" by {identity}"));
    }
    if let Some(reason) = &p.reason {
        text.push_str(&format!(": {reason}"));
    }
    text
}

/// A count: the total, and the groups (largest first) when it was grouped.
pub fn count(response: &ProcessExecutionCountResponse) -> String {
    if response.groups.is_empty() {
        return format!("{}\n", response.count);
    }
    let mut rows: Vec<Vec<String>> = response
        .groups
        .iter()
        .map(|g| {
            let value = match &g.value {
                serde_json::Value::Null => "(null)".to_string(),
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            vec![value, g.count.to_string()]
        })
        .collect();
    if response.truncated {
        rows.push(vec!["(more groups)".into(), String::new()]);
    }
    rows.push(vec!["TOTAL".into(), response.count.to_string()]);
    table(&["GROUP", "COUNT"], &rows)
}

pub fn list(executions: &[ProcessExecutionSummary], now_ms: i64) -> String {
    let rows: Vec<Vec<String>> = executions
        .iter()
        .map(|e| {
            vec![
                e.process_id.clone(),
                e.process_execution_id.clone(),
                e.process_type.clone(),
                if e.paused {
                    format!("{} (paused)", e.status.as_str())
                } else {
                    e.status.as_str().to_string()
                },
                timestamp_ms(e.start_timestamp_ms),
                ran_for(e.start_timestamp_ms, e.close_timestamp_ms, now_ms),
                e.backing_off
                    .as_ref()
                    .map_or_else(|| "-".to_owned(), |b| backing_off(b, now_ms)),
            ]
        })
        .collect();
    table(
        &[
            "PROCESS ID",
            "EXECUTION ID",
            "TYPE",
            "STATUS",
            "STARTED",
            "DURATION",
            "BACKING OFF",
        ],
        &rows,
    )
}

/// A state call waiting out its backoff: `State-1 attempt 3 in 12s: HTTP 500`.
fn backing_off(b: &xdb_protocol::BackingOff, now_ms: i64) -> String {
    let wait = duration(std::time::Duration::from_millis(
        u64::try_from(b.next_attempt_timestamp_ms - now_ms).unwrap_or(0),
    ));
    let error = b
        .last_error
        .as_deref()
        .map(|e| format!(": {}", truncate(e, 40)))
        .unwrap_or_default();
    format!(
        "{} attempt {} in {wait}{error}",
        b.state_execution_id, b.attempt
    )
}

/// The details column is cut to `details_width` characters unless it is `None`.
pub fn history(h: &ProcessExecutionHistoryResponse, details_width: Option<usize>) -> String {
    format!(
        "Execution {}\n{}",
        h.process_execution_id,
        history_rows(h, 1, details_width)
    )
}

/// The header of [`history_line`]s.
pub fn history_header() -> String {
    format!(
        "{:<5} {:<24} {:<31} {:<18} SUMMARY",
        "#", "TIME", "EVENT", "STATE"
    )
}

/// Event number `n` as one line of fixed columns (for `--follow`, whose events come a
/// few at a time: a table's widths would change between them).
pub fn history_line(n: usize, e: &HistoryEvent, summary_width: Option<usize>) -> String {
    use crate::history_lines::{state_of, summary};
    let what = match summary_width {
        Some(width) => truncate(&summary(&e.event_type, &e.details), width),
        None => serde_json::to_string(&e.details).unwrap_or_default(),
    };
    let state = state_of(&e.details).unwrap_or_else(|| "-".to_owned());
    format!(
        "{n:<5} {:<24} {:<31} {state:<18} {what}",
        timestamp_ms(e.event_timestamp_ms),
        e.event_type
    )
}

/// The events of `h` as a table, numbered from `first` in the execution's order: a
/// state column and a one-line summary, or (with no width: `--wide`) the whole details.
pub fn history_rows(
    h: &ProcessExecutionHistoryResponse,
    first: usize,
    summary_width: Option<usize>,
) -> String {
    use crate::history_lines::{state_of, summary};
    let rows: Vec<Vec<String>> = h
        .events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let what = match summary_width {
                Some(width) => truncate(&summary(&e.event_type, &e.details), width),
                None => serde_json::to_string(&e.details).unwrap_or_default(),
            };
            vec![
                (first + i).to_string(),
                timestamp_ms(e.event_timestamp_ms),
                e.event_type.clone(),
                state_of(&e.details).unwrap_or_else(|| "-".to_owned()),
                what,
            ]
        })
        .collect();
    let last = if summary_width.is_some() {
        "SUMMARY"
    } else {
        "DETAILS"
    };
    table(&["#", "TIME", "EVENT", "STATE", last], &rows)
}

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

/// An enum as the API spells it (`WAIT_UNTIL_RUNNING`, `waitUntil`).
fn name(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => "?".to_string(),
    }
}

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

/// What a control did, for people: `paused p1 (held: A-1, B-1)`.
pub fn control_result(
    control: Control,
    process_id: &str,
    state_execution_ids: &[String],
) -> String {
    let (done, which) = match control {
        Control::RetryNow => ("retry requested for", "due now"),
        Control::GiveUp => ("gave up on", "given up"),
        Control::Pause => ("paused", "held"),
        Control::Resume => ("resumed", "released"),
    };
    if state_execution_ids.is_empty() {
        format!("{done} {process_id}\n")
    } else {
        format!(
            "{done} {process_id} ({which}: {})\n",
            state_execution_ids.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;
    use xdb_protocol::{EncodedObject, ProcessStatus};

    fn described() -> ProcessExecutionDescribeResponse {
        serde_json::from_value(json!({
            "processExecutionId": "e1", "processId": "p1", "processType": "T",
            "workerUrl": "http://w", "status": "FAILED", "startTimestampMs": 0,
            "closeTimestampMs": 65_000, "runningStateExecutions": 0,
            "failure": {"reason": "STOPPED", "details": "by hand"},
            "globalAttributeConfig": {"tableName": "user",
                "primaryKey": {"column": "user_id", "value": "ann"}}
        }))
        .unwrap()
    }

    #[test]
    fn describe_shows_status_times_row_and_failure() {
        let text = describe(&described(), 0);
        assert!(text.contains("Status          FAILED\n"), "{text}");
        assert!(text.contains("Duration        1m05s\n"), "{text}");
        assert!(
            text.contains("Row             user where user_id = \"ann\"\n"),
            "{text}"
        );
        assert!(
            text.contains("Failure         STOPPED: by hand\n"),
            "{text}"
        );
        assert!(text.contains("Result          -\n"), "{text}");
    }

    #[test]
    fn list_runs_until_now_while_running() {
        let e = ProcessExecutionSummary {
            backing_off: None,
            process_execution_id: "e1".into(),
            process_id: "p1".into(),
            process_type: "T".into(),
            status: ProcessStatus::Running,
            start_timestamp_ms: 0,
            close_timestamp_ms: None,
            paused: false,
        };
        let paused = ProcessExecutionSummary {
            process_id: "p2".into(),
            paused: true,
            backing_off: Some(xdb_protocol::BackingOff {
                state_execution_id: "Charge-1".into(),
                attempt: 3,
                next_attempt_timestamp_ms: 14_500,
                last_error: Some("HTTP 500".into()),
            }),
            ..e.clone()
        };
        let text = list(&[e, paused], 2_500);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("PROCESS ID  EXECUTION ID  TYPE  STATUS"));
        assert!(lines[1].starts_with("p1          e1            T     RUNNING  "));
        assert!(lines[1].ends_with("2.5s      -"), "{text}");
        assert!(
            lines[2].ends_with("Charge-1 attempt 3 in 12.0s: HTTP 500"),
            "{text}"
        );
        assert!(
            lines[2].starts_with("p2          e1            T     RUNNING (paused)  "),
            "{text}"
        );
    }

    #[test]
    fn describe_shows_a_pause_and_parked_tasks() {
        let mut d = described();
        assert!(!describe(&d, 0).contains("Paused"));
        assert!(!describe(&d, 0).contains("Parked"));
        d.paused = Some(PauseInfo {
            since_timestamp_ms: 0,
            reason: Some("investigating".into()),
            identity: Some("ann".into()),
        });
        d.parked_tasks = 2;
        let text = describe(&d, 245_000);
        assert!(
            text.contains(
                "Paused          since 1970-01-01 00:00:00.000Z (4m05s ago) by ann: investigating\n"
            ),
            "{text}"
        );
        assert!(text.contains("Parked tasks    2 (see xdb states"), "{text}");
        d.paused = Some(PauseInfo {
            since_timestamp_ms: 0,
            reason: None,
            identity: None,
        });
        assert!(describe(&d, 1_000)
            .contains("Paused          since 1970-01-01 00:00:00.000Z (1.0s ago)\n"));
    }

    fn states_response() -> ProcessExecutionStatesResponse {
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

    #[test]
    fn control_results_name_the_states() {
        assert_eq!(
            control_result(Control::Pause, "p1", &["A-1".into(), "B-1".into()]),
            "paused p1 (held: A-1, B-1)\n"
        );
        assert_eq!(control_result(Control::Resume, "p1", &[]), "resumed p1\n");
        assert_eq!(
            control_result(Control::RetryNow, "p1", &["A-1".into()]),
            "retry requested for p1 (due now: A-1)\n"
        );
        assert_eq!(
            control_result(Control::GiveUp, "p1", &["A-1".into()]),
            "gave up on p1 (given up: A-1)\n"
        );
    }

    #[test]
    fn history_cuts_details_unless_wide() {
        let h = ProcessExecutionHistoryResponse {
            process_execution_id: "e1".into(),
            events: vec![HistoryEvent {
                event_id: 1,
                event_timestamp_ms: 0,
                event_type: "PROCESS_STARTED".into(),
                details: json!({"processType": "T", "startStateId": "x".repeat(50)}),
            }],
            next_after_event_id: None,
        };
        let narrow = history(&h, Some(20));
        assert!(narrow.starts_with("Execution e1\n#  TIME"), "{narrow}");
        assert!(
            narrow.contains("PROCESS_STARTED  -      type T, starts at x…"),
            "{narrow}"
        );
        assert!(history(&h, None).contains(&"x".repeat(50)));
    }

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
