//! List: executions newest first, filtered, with a keyset paging token.
//!
//! Tokens are the PostgreSQL store's (`start_time µs:id`), and CHAR(36) ids sort like
//! PostgreSQL's UUIDs, so paging behaves the same on both dialects.

use chrono::{DateTime, Utc};
use mysql_async::prelude::Queryable;
use mysql_async::{Row, Value};
use uuid::Uuid;
use xdb_engine::decide::DecideError;
use xdb_engine::validation::ValidationError;
use xdb_protocol::{
    ProcessExecutionListRequest, ProcessExecutionListResponse, ProcessExecutionSummary,
    ProcessStatus,
};

use super::rows::{get, get_opt_time, get_time, get_uuid, time_value, uuid_value};
use super::MySqlStore;
use crate::StoreError;

pub const DEFAULT_PAGE_SIZE: u32 = 100;
pub const MAX_PAGE_SIZE: u32 = 1000;

/// The token is the last row's `(start_time µs, id)`: stable while rows are added.
fn encode_token(start: DateTime<Utc>, id: Uuid) -> String {
    format!("{}:{}", start.timestamp_micros(), id)
}

fn decode_token(token: &str) -> Result<(DateTime<Utc>, Uuid), StoreError> {
    let invalid = || {
        StoreError::Decide(DecideError::Invalid(ValidationError::new(
            "nextPageToken",
            "is not a token this service issued",
        )))
    };
    let (micros, id) = token.split_once(':').ok_or_else(invalid)?;
    let micros: i64 = micros.parse().map_err(|_| invalid())?;
    let start = DateTime::from_timestamp_micros(micros).ok_or_else(invalid)?;
    Ok((start, Uuid::parse_str(id).map_err(|_| invalid())?))
}

fn millis(field: &str, ms: i64) -> Result<DateTime<Utc>, StoreError> {
    DateTime::from_timestamp_millis(ms).ok_or_else(|| {
        StoreError::Decide(DecideError::Invalid(ValidationError::new(
            field,
            "is out of range",
        )))
    })
}

pub(crate) async fn list_processes(
    store: &MySqlStore,
    request: &ProcessExecutionListRequest,
) -> Result<ProcessExecutionListResponse, StoreError> {
    let page_size = request.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
    if page_size == 0 || page_size > MAX_PAGE_SIZE {
        return Err(StoreError::Decide(DecideError::Invalid(
            ValidationError::new("pageSize", format!("must be between 1 and {MAX_PAGE_SIZE}")),
        )));
    }
    let filter = &request.filter;
    // Only the filters asked for go into the SQL (fixed fragments, values bound), so
    // MySQL can pick the index that matches; a handful of distinct statements results.
    let mut conditions = Vec::new();
    let mut params = Vec::new();
    if let Some(status) = filter.status {
        conditions.push("status = ?");
        params.push(Value::from(status.as_str()));
    }
    if let Some(process_type) = &filter.process_type {
        conditions.push("process_type = ?");
        params.push(Value::from(process_type.as_str()));
    }
    if let Some(process_id) = &filter.process_id {
        conditions.push("process_id = ?");
        params.push(Value::from(process_id.as_str()));
    }
    if let Some(ms) = filter.start_time_min_ms {
        conditions.push("start_time >= ?");
        params.push(time_value(millis("startTimeMinMs", ms)?));
    }
    if let Some(ms) = filter.start_time_max_ms {
        conditions.push("start_time < ?");
        params.push(time_value(millis("startTimeMaxMs", ms)?));
    }
    if let Some(token) = &request.next_page_token {
        let (start, id) = decode_token(token)?;
        conditions.push("(start_time < ? OR (start_time = ? AND id < ?))");
        params.extend([time_value(start), time_value(start), uuid_value(id)]);
    }
    params.push(Value::from(i64::from(page_size) + 1));
    let where_clause = if conditions.is_empty() {
        String::new()
    } else {
        format!("WHERE {} ", conditions.join(" AND "))
    };
    let sql = format!(
        "SELECT id, process_id, process_type, status, start_time, close_time \
         FROM xdb_sys_process_executions {where_clause}\
         ORDER BY start_time DESC, id DESC LIMIT ?"
    );
    let mut conn = store.pool().get_conn().await?;
    let rows: Vec<Row> = conn.exec(sql, params).await?;
    let mut executions = Vec::with_capacity(rows.len());
    let mut last = None;
    for row in rows.iter().take(page_size as usize) {
        let id = get_uuid(row, "id")?;
        let start = get_time(row, "start_time")?;
        let status: String = get(row, "status")?;
        last = Some((start, id));
        executions.push(ProcessExecutionSummary {
            process_execution_id: id.to_string(),
            process_id: get(row, "process_id")?,
            process_type: get(row, "process_type")?,
            status: ProcessStatus::parse(&status)
                .ok_or_else(|| StoreError::Database(format!("unknown status {status}")))?,
            start_timestamp_ms: start.timestamp_millis(),
            close_timestamp_ms: get_opt_time(row, "close_time")?.map(|t| t.timestamp_millis()),
        });
    }
    let next_page_token = if rows.len() > page_size as usize {
        last.map(|(start, id)| encode_token(start, id))
    } else {
        None
    };
    Ok(ProcessExecutionListResponse {
        executions,
        next_page_token,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_garbage_is_refused() {
        let start = DateTime::from_timestamp_micros(1_700_000_000_123_456).unwrap();
        let id = Uuid::now_v7();
        assert_eq!(decode_token(&encode_token(start, id)).unwrap(), (start, id));
        assert!(decode_token("nonsense").is_err());
        assert!(decode_token("12:not-a-uuid").is_err());
    }
}
