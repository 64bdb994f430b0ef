//! The human (table) rendering of each answer; pure functions of the answer and `now`.

use xdb_protocol::{
    ProcessExecutionDescribeResponse, ProcessExecutionHistoryResponse, ProcessExecutionSummary,
    ProcessExecutionWaitForCompletionResponse, ProcessFailure,
};

use crate::format::{between_ms, duration, key_values, table, timestamp_ms, truncate};
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
    pairs.push(("Result", show_payload(d.result.as_ref())));
    pairs.push(("Failure", failure_text(d.failure.as_ref())));
    key_values(&pairs)
}

pub fn list(executions: &[ProcessExecutionSummary], now_ms: i64) -> String {
    let rows: Vec<Vec<String>> = executions
        .iter()
        .map(|e| {
            vec![
                e.process_id.clone(),
                e.process_execution_id.clone(),
                e.process_type.clone(),
                e.status.as_str().to_string(),
                timestamp_ms(e.start_timestamp_ms),
                ran_for(e.start_timestamp_ms, e.close_timestamp_ms, now_ms),
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
        ],
        &rows,
    )
}

/// The details column is cut to `details_width` characters unless it is `None`.
pub fn history(h: &ProcessExecutionHistoryResponse, details_width: Option<usize>) -> String {
    let rows: Vec<Vec<String>> = h
        .events
        .iter()
        .map(|e| {
            let details = serde_json::to_string(&e.details).unwrap_or_default();
            vec![
                e.event_id.to_string(),
                timestamp_ms(e.event_timestamp_ms),
                e.event_type.clone(),
                match details_width {
                    Some(width) => truncate(&details, width),
                    None => details,
                },
            ]
        })
        .collect();
    format!(
        "Execution {}\n{}",
        h.process_execution_id,
        table(&["ID", "TIME", "EVENT", "DETAILS"], &rows)
    )
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

/// The progress line of `wait`.
pub fn progress_line(
    process_id: &str,
    status: &str,
    running_states: Option<i32>,
    waited: std::time::Duration,
) -> String {
    let states = match running_states {
        Some(1) => ", 1 state running".to_string(),
        Some(n) => format!(", {n} states running"),
        None => String::new(),
    };
    format!(
        "waiting for {process_id}: {status}{states}, {} elapsed",
        duration(waited)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;
    use xdb_protocol::{EncodedObject, HistoryEvent, ProcessStatus};

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
            process_execution_id: "e1".into(),
            process_id: "p1".into(),
            process_type: "T".into(),
            status: ProcessStatus::Running,
            start_timestamp_ms: 0,
            close_timestamp_ms: None,
        };
        let text = list(&[e], 2_500);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("PROCESS ID  EXECUTION ID  TYPE  STATUS"));
        assert!(lines[1].starts_with("p1          e1            T     RUNNING"));
        assert!(lines[1].ends_with("2.5s"), "{text}");
    }

    #[test]
    fn history_cuts_details_unless_wide() {
        let h = ProcessExecutionHistoryResponse {
            process_execution_id: "e1".into(),
            events: vec![HistoryEvent {
                event_id: 1,
                event_timestamp_ms: 0,
                event_type: "PROCESS_STARTED".into(),
                details: json!({"long": "x".repeat(50)}),
            }],
            next_after_event_id: None,
        };
        let narrow = history(&h, Some(20));
        assert!(narrow.starts_with("Execution e1\nID  TIME"), "{narrow}");
        assert!(narrow.contains("PROCESS_STARTED  {\"long\":\"xxxxxxxxxx…"));
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
            progress_line("p1", "RUNNING", Some(2), Duration::from_secs(75)),
            "waiting for p1: RUNNING, 2 states running, 1m15s elapsed"
        );
        assert_eq!(
            progress_line("p1", "RUNNING", Some(1), Duration::from_millis(300)),
            "waiting for p1: RUNNING, 1 state running, 300ms elapsed"
        );
    }
}
