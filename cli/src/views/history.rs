//! `xdb history`: an execution's events as a table, or a line each as they come.

use xdb_protocol::{HistoryEvent, ProcessExecutionHistoryResponse};

use crate::format::{table, timestamp_ms, truncate};

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
}
