//! List: executions newest first, filtered, with a keyset paging token.

use chrono::{DateTime, Utc};
use tokio_postgres::types::ToSql;
use uuid::Uuid;
use xdb_engine::decide::DecideError;
use xdb_engine::validation::ValidationError;
use xdb_protocol::{
    ProcessExecutionListRequest, ProcessExecutionListResponse, ProcessExecutionSummary,
    ProcessStatus,
};

use super::PostgresStore;
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
    store: &PostgresStore,
    request: &ProcessExecutionListRequest,
) -> Result<ProcessExecutionListResponse, StoreError> {
    let page_size = request.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
    if page_size == 0 || page_size > MAX_PAGE_SIZE {
        return Err(StoreError::Decide(DecideError::Invalid(
            ValidationError::new("pageSize", format!("must be between 1 and {MAX_PAGE_SIZE}")),
        )));
    }
    let filter = &request.filter;
    let status = filter.status.map(ProcessStatus::as_str);
    let min = filter
        .start_time_min_ms
        .map(|ms| millis("startTimeMinMs", ms))
        .transpose()?;
    let max = filter
        .start_time_max_ms
        .map(|ms| millis("startTimeMaxMs", ms))
        .transpose()?;
    let after = request
        .next_page_token
        .as_deref()
        .map(decode_token)
        .transpose()?;
    let (after_start, after_id) = (after.map(|a| a.0), after.map(|a| a.1));
    let limit = i64::from(page_size) + 1;

    // Null parameters switch their filter off, so one prepared statement serves all.
    let sql = "SELECT id, process_id, process_type, status, start_time, close_time \
               FROM xdb_sys_process_executions \
               WHERE ($1::varchar IS NULL OR status = $1) \
                 AND ($2::varchar IS NULL OR process_type = $2) \
                 AND ($3::varchar IS NULL OR process_id = $3) \
                 AND ($4::timestamptz IS NULL OR start_time >= $4) \
                 AND ($5::timestamptz IS NULL OR start_time < $5) \
                 AND ($6::timestamptz IS NULL OR (start_time, id) < ($6, $7::uuid)) \
               ORDER BY start_time DESC, id DESC LIMIT $8";
    let client = store.pool().get().await?;
    let statement = client.prepare_cached(sql).await?;
    let params: [&(dyn ToSql + Sync); 8] = [
        &status,
        &filter.process_type,
        &filter.process_id,
        &min,
        &max,
        &after_start,
        &after_id,
        &limit,
    ];
    let rows = client.query(&statement, &params).await?;
    let mut executions = Vec::with_capacity(rows.len());
    let mut last = None;
    for row in rows.iter().take(page_size as usize) {
        let id: Uuid = row.get(0);
        let start: DateTime<Utc> = row.get(4);
        let status: String = row.get(3);
        last = Some((start, id));
        executions.push(ProcessExecutionSummary {
            process_execution_id: id.to_string(),
            process_id: row.get(1),
            process_type: row.get(2),
            status: ProcessStatus::parse(&status)
                .ok_or_else(|| StoreError::Database(format!("unknown status {status}")))?,
            start_timestamp_ms: start.timestamp_millis(),
            close_timestamp_ms: row
                .get::<_, Option<DateTime<Utc>>>(5)
                .map(|t| t.timestamp_millis()),
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
