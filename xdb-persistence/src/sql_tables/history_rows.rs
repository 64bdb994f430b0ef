//! [`HistoryRows`]: an execution's history events, as asked for.

use uuid::Uuid;
use xdb_protocol::HistoryEvent;

use super::in_list::in_list;
use crate::columns::ColumnReader;
use crate::sql::{Param, SqlConn};
use crate::tables::{HistoryQuery, HistoryRows};
use crate::StoreError;

impl<C: SqlConn> HistoryRows for C {
    async fn read_history(
        &mut self,
        id: Uuid,
        process_id: &str,
        query: &HistoryQuery<'_>,
    ) -> Result<Vec<HistoryEvent>, StoreError> {
        let mut params: Vec<Param<'_>> = vec![
            id.into(),
            process_id.into(),
            query.after_event_id.unwrap_or(0).into(),
        ];
        params.extend(query.event_types.iter().map(|t| Param::from(*t)));
        let type_filter = match query.event_types.len() {
            0 => String::new(),
            n => format!(" AND h.event_type IN ({})", in_list(&mut params, n)),
        };
        params.push(query.limit.into());
        let order = if query.newest_first { " DESC" } else { "" };
        let sql = format!(
            "SELECT h.id, h.event_time, h.event_type, h.details \
             FROM xdb_sys_history_events h \
             JOIN xdb_sys_process_executions p ON p.id = h.process_execution_id \
             WHERE h.process_execution_id = ? AND p.process_id = ? AND h.id > ?\
             {type_filter} ORDER BY h.id{order} LIMIT ?"
        );
        let rows = self.query(&sql, &params).await?;
        rows.iter()
            .map(|row| {
                let mut columns = C::columns(row, 0);
                Ok(HistoryEvent {
                    event_id: columns.bigint()?,
                    event_timestamp_ms: columns.time()?.timestamp_millis(),
                    event_type: columns.text()?,
                    details: columns.json()?.unwrap_or(serde_json::Value::Null),
                })
            })
            .collect()
    }
}
