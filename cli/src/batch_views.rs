//! How batches read on a terminal (pure, unit-tested).

use std::time::Duration;

use xdb_protocol::{BatchDescribeResponse, BatchInfo, BatchStartRequest, DEFAULT_BATCH_RATE};

use crate::format::{between_ms, duration, key_values, table, timestamp_ms, truncate};

/// The widest a `where` tree is shown in a table.
const WHERE_WIDTH: usize = 200;

/// The selection of a batch: its type and its `where` tree as compact JSON.
fn selection(request: &BatchStartRequest) -> Vec<(&'static str, String)> {
    let mut pairs = Vec::new();
    if let Some(process_type) = &request.process_type {
        pairs.push(("type", process_type.clone()));
    }
    if let Some(tree) = &request.where_ {
        let json = serde_json::to_string(tree).unwrap_or_default();
        pairs.push(("where", truncate(&json, WHERE_WIDTH)));
    }
    if pairs.is_empty() {
        pairs.push(("selection", "every execution".to_string()));
    }
    pairs
}

/// What the batch is about to do, before it is confirmed: the operation, how many
/// executions the selection matches now, and how long that takes at its rate.
pub fn preview(request: &BatchStartRequest, count: u64) -> String {
    let rate = request.rate_per_second.unwrap_or(DEFAULT_BATCH_RATE).max(1);
    let s = if count == 1 { "" } else { "s" };
    let mut pairs = vec![(
        "batch",
        format!(
            "{} of {count} execution{s} (as counted now)",
            request.operation.as_str()
        ),
    )];
    pairs.extend(selection(request));
    pairs.push((
        "rate",
        format!(
            "{rate}/s, about {}",
            duration(Duration::from_secs_f64(count as f64 / f64::from(rate)))
        ),
    ));
    if let Some(reason) = &request.reason {
        pairs.push(("reason", reason.clone()));
    }
    key_values(&pairs)
}

/// `done 9, skipped 1, failed 0`.
pub fn counts(b: &BatchInfo) -> String {
    format!(
        "done {}, skipped {}, failed {}",
        b.done, b.skipped, b.failed
    )
}

/// `matched/expected (pct%)`.
fn handled(b: &BatchInfo) -> String {
    let pct = (b.matched * 100).checked_div(b.expected).unwrap_or(100);
    format!("{}/{} ({}%)", b.matched, b.expected, pct.min(100))
}

/// One progress line, for logs: `batch b1 RUNNING: 10/42 (23%) handled (done 9, ...), 3.0s`.
pub fn progress_line(b: &BatchInfo, elapsed: Duration) -> String {
    format!(
        "batch {} {}: {} handled ({}), {}",
        b.batch_id,
        b.status.as_str(),
        handled(b),
        counts(b),
        duration(elapsed)
    )
}

/// A batch, its progress and the executions it skipped or failed on.
pub fn describe(d: &BatchDescribeResponse, now_ms: i64) -> String {
    let b = &d.batch;
    let ran = between_ms(
        b.created_timestamp_ms,
        b.closed_timestamp_ms.unwrap_or(now_ms),
    );
    let mut pairs = vec![
        ("batch", b.batch_id.clone()),
        ("operation", b.operation.as_str().to_string()),
        ("status", b.status.as_str().to_string()),
        ("handled", handled(b)),
        ("done", b.done.to_string()),
        ("skipped", b.skipped.to_string()),
        ("failed", b.failed.to_string()),
        ("rate", format!("{}/s", b.rate_per_second)),
        ("created", timestamp_ms(b.created_timestamp_ms)),
    ];
    match b.closed_timestamp_ms {
        Some(closed) => {
            pairs.push(("closed", timestamp_ms(closed)));
            pairs.push(("took", duration(ran)));
        }
        None => pairs.push(("running for", duration(ran))),
    }
    if let Some(error) = &b.error {
        pairs.push(("error", error.clone()));
    }
    pairs.extend(selection(&b.request));
    if let Some(reason) = &b.request.reason {
        pairs.push(("reason", reason.clone()));
    }
    if let Some(identity) = &b.request.identity {
        pairs.push(("identity", identity.clone()));
    }
    let mut out = key_values(&pairs);
    if !d.not_done.is_empty() {
        let rows: Vec<Vec<String>> = d
            .not_done
            .iter()
            .map(|item| {
                vec![
                    item.process_execution_id.clone(),
                    item.outcome.as_str().to_string(),
                    item.reason.clone().unwrap_or_default(),
                ]
            })
            .collect();
        out.push_str("\nnot done (latest first):\n");
        out.push_str(&table(&["EXECUTION", "OUTCOME", "REASON"], &rows));
    }
    out
}

/// Batches, one a row.
pub fn list(batches: &[BatchInfo], now_ms: i64) -> String {
    let rows: Vec<Vec<String>> = batches
        .iter()
        .map(|b| {
            let ran = between_ms(
                b.created_timestamp_ms,
                b.closed_timestamp_ms.unwrap_or(now_ms),
            );
            vec![
                b.batch_id.clone(),
                b.operation.as_str().to_string(),
                b.status.as_str().to_string(),
                handled(b),
                b.done.to_string(),
                b.skipped.to_string(),
                b.failed.to_string(),
                timestamp_ms(b.created_timestamp_ms),
                duration(ran),
            ]
        })
        .collect();
    table(
        &[
            "BATCH",
            "OPERATION",
            "STATUS",
            "HANDLED",
            "DONE",
            "SKIPPED",
            "FAILED",
            "CREATED",
            "TOOK",
        ],
        &rows,
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use xdb_protocol::{BatchItem, BatchItemOutcome, BatchOperation, BatchStatus};

    pub(crate) fn info(status: BatchStatus) -> BatchInfo {
        let request: BatchStartRequest = serde_json::from_value(serde_json::json!({
            "operation": "TERMINATE",
            "processType": "Order",
            "where": {"column": "amount", "op": "<", "value": 10},
            "reason": "test orders",
            "identity": "ann"
        }))
        .unwrap();
        BatchInfo {
            batch_id: "b1".into(),
            operation: BatchOperation::Terminate,
            status,
            request,
            rate_per_second: 100,
            expected: 4,
            matched: 4,
            done: 3,
            skipped: 1,
            failed: 0,
            created_timestamp_ms: 1_714_564_800_000,
            closed_timestamp_ms: status.is_closed().then_some(1_714_564_802_500),
            error: None,
        }
    }

    #[test]
    fn preview_names_the_operation_count_selection_and_time() {
        let mut request = info(BatchStatus::Running).request;
        request.rate_per_second = Some(10);
        let text = preview(&request, 25);
        assert_eq!(
            text,
            "batch   TERMINATE of 25 executions (as counted now)\n\
             type    Order\n\
             where   {\"column\":\"amount\",\"op\":\"<\",\"value\":10}\n\
             rate    10/s, about 2.5s\n\
             reason  test orders\n"
        );
        request.process_type = None;
        request.where_ = None;
        request.reason = None;
        request.rate_per_second = None;
        let text = preview(&request, 1);
        assert!(text.contains("of 1 execution (as"), "{text}");
        assert!(text.contains("every execution"), "{text}");
        assert!(text.contains("100/s, about 10ms"), "{text}");
    }

    #[test]
    fn describe_shows_progress_and_what_was_not_done() {
        let mut d = BatchDescribeResponse {
            batch: info(BatchStatus::Completed),
            not_done: vec![BatchItem {
                process_execution_id: "e-7".into(),
                outcome: BatchItemOutcome::Skipped,
                reason: Some("closed already".into()),
            }],
        };
        // Each line with its runs of spaces as one.
        let lines = |text: &str| -> Vec<String> {
            text.lines()
                .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect()
        };
        let text = describe(&d, 0);
        let shown = lines(&text);
        for expected in [
            "status COMPLETED",
            "handled 4/4 (100%)",
            "done 3",
            "skipped 1",
            "took 2.5s",
            "identity ann",
            "EXECUTION OUTCOME REASON",
            "e-7 SKIPPED closed already",
        ] {
            assert!(
                shown.iter().any(|l| l == expected),
                "{expected:?} in\n{text}"
            );
        }
        d.batch = info(BatchStatus::Running);
        d.batch.matched = 1;
        d.not_done.clear();
        let text = describe(&d, 1_714_564_803_000);
        let shown = lines(&text);
        assert!(shown.iter().any(|l| l == "handled 1/4 (25%)"), "{text}");
        assert!(shown.iter().any(|l| l == "running for 3.0s"), "{text}");
        assert!(!text.contains("not done"), "{text}");
    }

    #[test]
    fn progress_lines_and_list_rows() {
        let mut b = info(BatchStatus::Running);
        b.matched = 2;
        b.done = 2;
        b.skipped = 0;
        assert_eq!(
            progress_line(&b, Duration::from_secs(3)),
            "batch b1 RUNNING: 2/4 (50%) handled (done 2, skipped 0, failed 0), 3.0s"
        );
        // Nothing expected reads as all handled, not a division by zero.
        b.expected = 0;
        b.matched = 0;
        assert!(progress_line(&b, Duration::ZERO).contains("0/0 (100%)"));
        let text = list(&[info(BatchStatus::Completed)], 0);
        let lines: Vec<Vec<&str>> = text
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(lines[0][0..4], ["BATCH", "OPERATION", "STATUS", "HANDLED"]);
        assert_eq!(
            lines[1][0..7],
            ["b1", "TERMINATE", "COMPLETED", "4/4", "(100%)", "3", "1"]
        );
    }
}
