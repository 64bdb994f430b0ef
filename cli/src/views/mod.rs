//! The human (table) rendering of each answer; pure functions of the answer and `now`.

use serde::Serialize;
use xdb_protocol::{
    fairness, PauseInfo, ProcessExecutionCountResponse, ProcessExecutionDescribeResponse,
    ProcessExecutionSummary, ProcessFailure, QueryPlan, Reprioritization,
};

use crate::format::{between_ms, duration, key_values, table, timestamp_ms, truncate};
use crate::operate::Control;
use crate::payload::show_payload;

mod history;
mod states;
mod wait;

pub use history::{history, history_header, history_line, history_rows};
pub use states::{states, waiting_for_text};
pub use wait::{active_states, progress_line, wait_result};

/// A filtered list's plan: whether indexes serve it and, if not, what would; then the
/// database's own plan.
pub fn plan(plan: &QueryPlan) -> String {
    let mut out = String::new();
    if plan.advice.is_empty() {
        out.push_str("indexes serve this filter: no table is read in full\n");
    }
    for advice in &plan.advice {
        out.push_str(&format!("advice: {advice}\n"));
    }
    out.push_str("\nthe database's plan:\n");
    out.push_str(&serde_json::to_string_pretty(&plan.plan).unwrap_or_default());
    out.push('\n');
    out
}

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
        ("Priority", d.priority.to_string()),
        ("Worker", d.worker_url.clone()),
    ];
    if let Some(key) = &d.fairness_key {
        let weight = d.fairness_weight.unwrap_or(fairness::DEFAULT_WEIGHT);
        pairs.push(("Fairness key", format!("{key} (weight {weight})")));
    }
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
        // A running limit's hold reads as what it is: the execution has not begun.
        let label = match paused.pending_on_key {
            Some(_) => "Pending",
            None => "Paused",
        };
        pairs.push((label, paused_text(paused, now_ms)));
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
                if e.pending {
                    "PENDING".to_string()
                } else if e.paused {
                    format!("{} (paused)", e.status.as_str())
                } else {
                    e.status.as_str().to_string()
                },
                e.priority.to_string(),
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
            "PRIORITY",
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
/// An enum as the API spells it (`WAIT_UNTIL_RUNNING`, `waitUntil`).
fn name(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => "?".to_string(),
    }
}

/// What a control did, for people: `paused p1 (held: A-1, B-1)`, `reprioritized p1 to
/// priority 1 (reordered: A-1)`.
pub fn control_result(
    control: &Control,
    process_id: &str,
    state_execution_ids: &[String],
) -> String {
    let (done, which) = match control {
        Control::RetryNow => ("retry requested for", "due now"),
        Control::GiveUp => ("gave up on", "given up"),
        Control::Pause => ("paused", "held"),
        Control::Resume => ("resumed", "released"),
        Control::Reprioritize(_) => ("reprioritized", "reordered"),
    };
    let mut line = format!("{done} {process_id}");
    if let Some(change) = control.reprioritization() {
        line.push_str(&format!(" to {}", reprioritization_text(change)));
    }
    if !state_execution_ids.is_empty() {
        line.push_str(&format!(" ({which}: {})", state_execution_ids.join(", ")));
    }
    line.push('\n');
    line
}

/// The change asked for: `priority 1, fairness key acme, fairness weight 2`.
pub fn reprioritization_text(change: &Reprioritization) -> String {
    let mut parts = Vec::new();
    if let Some(priority) = change.priority {
        parts.push(format!("priority {priority}"));
    }
    match change.fairness_key.as_deref() {
        Some("") => parts.push("no fairness key".to_string()),
        Some(key) => parts.push(format!("fairness key {key}")),
        None => {}
    }
    if let Some(weight) = change.fairness_weight {
        parts.push(format!("fairness weight {weight}"));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use xdb_protocol::ProcessStatus;

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
    fn describe_shows_a_fairness_key_with_its_weight_when_set() {
        let mut d = described();
        assert!(!describe(&d, 0).contains("Fairness"));
        d.fairness_key = Some("tenant-a".into());
        d.fairness_weight = Some(5);
        let text = describe(&d, 0);
        assert!(
            text.contains("Fairness key    tenant-a (weight 5)\n"),
            "{text}"
        );
        // A service that answers the key alone: the weight is the default, 1.
        d.fairness_weight = None;
        let text = describe(&d, 0);
        assert!(
            text.contains("Fairness key    tenant-a (weight 1)\n"),
            "{text}"
        );
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
            pending: false,
            priority: 3,
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
        let pending = ProcessExecutionSummary {
            process_id: "p3".into(),
            paused: true,
            pending: true,
            priority: 1,
            ..e.clone()
        };
        let text = list(&[e, paused, pending], 2_500);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("PROCESS ID  EXECUTION ID  TYPE  STATUS"));
        assert!(lines[0].contains("  PRIORITY  STARTED"), "{text}");
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
        assert!(
            lines[3].starts_with("p3          e1            T     PENDING  "),
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
            pending_on_key: None,
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
            pending_on_key: None,
        });
        assert!(describe(&d, 1_000)
            .contains("Paused          since 1970-01-01 00:00:00.000Z (1.0s ago)\n"));
    }

    #[test]
    fn control_results_name_the_states() {
        assert_eq!(
            control_result(&Control::Pause, "p1", &["A-1".into(), "B-1".into()]),
            "paused p1 (held: A-1, B-1)\n"
        );
        assert_eq!(control_result(&Control::Resume, "p1", &[]), "resumed p1\n");
        assert_eq!(
            control_result(&Control::RetryNow, "p1", &["A-1".into()]),
            "retry requested for p1 (due now: A-1)\n"
        );
        assert_eq!(
            control_result(&Control::GiveUp, "p1", &["A-1".into()]),
            "gave up on p1 (given up: A-1)\n"
        );
    }

    #[test]
    fn a_reprioritize_result_names_the_change_and_the_states_reordered() {
        let change = |priority, key: Option<&str>, weight| {
            Control::Reprioritize(Reprioritization {
                priority,
                fairness_key: key.map(str::to_string),
                fairness_weight: weight,
            })
        };
        assert_eq!(
            control_result(
                &change(Some(1), Some("acme"), Some(2)),
                "p1",
                &["A-1".into(), "B-2".into()]
            ),
            "reprioritized p1 to priority 1, fairness key acme, fairness weight 2 \
             (reordered: A-1, B-2)\n"
        );
        // Nothing waiting: nothing reordered now, the new order holds for later calls.
        assert_eq!(
            control_result(&change(None, Some(""), None), "p1", &[]),
            "reprioritized p1 to no fairness key\n"
        );
        assert_eq!(
            control_result(&change(None, None, Some(5)), "p1", &[]),
            "reprioritized p1 to fairness weight 5\n"
        );
    }
}
