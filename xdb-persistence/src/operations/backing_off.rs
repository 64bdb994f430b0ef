//! Marks the executions of a list page whose state call waits out a retry's backoff,
//! with its next attempt and the last failure's error. The page's statement flags the
//! rows that may be (a retry's task waiting); only then one statement reads their tasks,
//! and one history read per execution backing off finds its last error.

use uuid::Uuid;
use xdb_protocol::{BackingOff, HistoryEventType, ProcessExecutionSummary};

use crate::tables::{Dialect, HistoryQuery, HistoryRows, Lane, Listed, OperatorRows};
use crate::StoreError;

/// Failures read to find a state's last one (its own are the newest of them).
const FAILURES_READ: i64 = 10;

/// The summaries of `rows`, those backing off marked so: only rows whose statement
/// found a retry waiting (`Listed::may_back_off`) cost a look at their tasks.
pub(crate) async fn marked<D: Dialect>(
    store: &D,
    rows: Vec<Listed>,
) -> Result<Vec<ProcessExecutionSummary>, StoreError> {
    let candidates: Vec<Uuid> = rows
        .iter()
        .filter(|r| r.may_back_off)
        .map(|r| r.id)
        .collect();
    let mut executions: Vec<_> = rows.into_iter().map(|row| row.summary).collect();
    if !candidates.is_empty() {
        mark_backing_off(store, &candidates, &mut executions).await?;
    }
    Ok(executions)
}

async fn mark_backing_off<D: Dialect>(
    store: &D,
    running: &[Uuid],
    executions: &mut [ProcessExecutionSummary],
) -> Result<(), StoreError> {
    let now = store.database_clock().now();
    let mut session = store.session(Lane::Main).await?;
    // Soonest first: an execution with several shows its next attempt.
    for task in session.backing_off_of(running, now).await? {
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
