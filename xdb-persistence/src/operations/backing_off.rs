//! Marks the executions of a list page whose state call waits out a retry's backoff,
//! with its next attempt and the last failure's error: one statement for the page's
//! tasks, and one history read per execution backing off.

use uuid::Uuid;
use xdb_protocol::{BackingOff, HistoryEventType, ProcessExecutionSummary, ProcessStatus};

use crate::tables::{Dialect, HistoryQuery, HistoryRows, Lane, OperatorRows};
use crate::StoreError;

/// Failures read to find a state's last one (its own are the newest of them).
const FAILURES_READ: i64 = 10;

pub(crate) async fn mark_backing_off<D: Dialect>(
    store: &D,
    executions: &mut [ProcessExecutionSummary],
) -> Result<(), StoreError> {
    let running: Vec<Uuid> = executions
        .iter()
        .filter(|e| e.status == ProcessStatus::Running)
        .filter_map(|e| Uuid::parse_str(&e.process_execution_id).ok())
        .collect();
    if running.is_empty() {
        return Ok(());
    }
    let now = store.database_clock().now();
    let mut session = store.session(Lane::Main).await?;
    // Soonest first: an execution with several shows its next attempt.
    for task in session.backing_off_of(&running, now).await? {
        let id = task.process_execution_id.to_string();
        let Some(summary) = executions
            .iter_mut()
            .find(|e| e.process_execution_id == id && e.backing_off.is_none())
        else {
            continue;
        };
        let state = task
            .state
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        let failed = [HistoryEventType::StateApiFailed.as_str()];
        let query = HistoryQuery {
            after_event_id: None,
            event_types: &failed,
            limit: FAILURES_READ,
            newest_first: true,
        };
        let failures = session
            .read_history(task.process_execution_id, &summary.process_id, &query)
            .await?;
        let last_error = failures
            .iter()
            .find(|e| e.details["stateExecutionId"] == state.as_str())
            .and_then(|e| e.details["error"].as_str())
            .map(str::to_owned);
        summary.backing_off = Some(BackingOff {
            state_execution_id: state,
            attempt: task.attempt,
            next_attempt_timestamp_ms: task.fire_at.timestamp_millis(),
            last_error,
        });
    }
    Ok(())
}
