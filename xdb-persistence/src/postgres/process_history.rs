//! History: the events of one execution, oldest first.

use chrono::{DateTime, Utc};
use serde_json::Value;
use xdb_protocol::{HistoryEvent, ProcessExecutionHistoryRequest, ProcessExecutionHistoryResponse};

use super::locks::resolve_execution;
use super::PostgresStore;
use crate::StoreError;

pub(crate) async fn process_history(
    store: &PostgresStore,
    request: &ProcessExecutionHistoryRequest,
) -> Result<ProcessExecutionHistoryResponse, StoreError> {
    let client = store.pool().get().await?;
    let id = resolve_execution(
        &client,
        &request.process_id,
        request.process_execution_id.as_deref(),
    )
    .await?;
    let statement = client
        .prepare_cached(
            "SELECT h.id, h.event_time, h.event_type, h.details FROM xdb_sys_history_events h \
             JOIN xdb_sys_process_executions p ON p.id = h.process_execution_id \
             WHERE h.process_execution_id = $1 AND p.process_id = $2 ORDER BY h.id",
        )
        .await?;
    let rows = client
        .query(&statement, &[&id, &request.process_id])
        .await?;
    Ok(ProcessExecutionHistoryResponse {
        process_execution_id: id.to_string(),
        events: rows
            .iter()
            .map(|row| HistoryEvent {
                event_id: row.get(0),
                event_timestamp_ms: row.get::<_, DateTime<Utc>>(1).timestamp_millis(),
                event_type: row.get(2),
                details: row.get::<_, Value>(3),
            })
            .collect(),
    })
}
