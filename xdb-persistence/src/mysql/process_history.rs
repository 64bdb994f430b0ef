//! History: the events of one execution, oldest first.

use mysql_async::prelude::Queryable;
use mysql_async::Row;
use xdb_protocol::{HistoryEvent, ProcessExecutionHistoryRequest, ProcessExecutionHistoryResponse};

use super::locks::resolve_execution;
use super::rows::{get, get_json, get_time};
use super::MySqlStore;
use crate::StoreError;

pub(crate) async fn process_history(
    store: &MySqlStore,
    request: &ProcessExecutionHistoryRequest,
) -> Result<ProcessExecutionHistoryResponse, StoreError> {
    let mut conn = store.pool().get_conn().await?;
    let id = resolve_execution(
        &mut conn,
        &request.process_id,
        request.process_execution_id.as_deref(),
    )
    .await?;
    let rows: Vec<Row> = conn
        .exec(
            "SELECT h.id, h.event_time, h.event_type, h.details FROM xdb_sys_history_events h \
             JOIN xdb_sys_process_executions p ON p.id = h.process_execution_id \
             WHERE h.process_execution_id = ? AND p.process_id = ? ORDER BY h.id",
            (id.to_string(), request.process_id.as_str()),
        )
        .await?;
    let events = rows
        .iter()
        .map(|row| {
            Ok(HistoryEvent {
                event_id: get(row, "id")?,
                event_timestamp_ms: get_time(row, "event_time")?.timestamp_millis(),
                event_type: get(row, "event_type")?,
                details: get_json(row, "details")?.unwrap_or(serde_json::Value::Null),
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    Ok(ProcessExecutionHistoryResponse {
        process_execution_id: id.to_string(),
        events,
    })
}
