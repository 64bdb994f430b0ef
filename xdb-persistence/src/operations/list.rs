//! List: executions newest first, filtered, with a keyset paging token.
//!
//! The token is the last row's `(start_time µs, id)`: stable while rows are added, and
//! the same on every dialect (their ids sort alike).

use chrono::{DateTime, Utc};
use uuid::Uuid;
use xdb_engine::decide::DecideError;
use xdb_engine::validation::ValidationError;
use xdb_protocol::{ProcessExecutionListRequest, ProcessExecutionListResponse};

use crate::tables::{Dialect, Lane, ListQuery, ProcessRows};
use crate::StoreError;

pub const DEFAULT_PAGE_SIZE: u32 = 100;
pub const MAX_PAGE_SIZE: u32 = 1000;

pub(crate) async fn list_processes<D: Dialect>(
    store: &D,
    request: &ProcessExecutionListRequest,
) -> Result<ProcessExecutionListResponse, StoreError> {
    let query = list_query(request)?;
    let page_size = query.limit as usize - 1;
    let mut session = store.session(Lane::Main).await?;
    let mut rows = session.list_executions(&query).await?;
    drop(session);
    let next_page_token = (rows.len() > page_size)
        .then(|| &rows[page_size - 1])
        .map(|row| encode_token(row.start, &row.summary.process_execution_id));
    rows.truncate(page_size);
    let executions = super::backing_off::marked(store, rows).await?;
    Ok(ProcessExecutionListResponse {
        executions,
        next_page_token,
        plan: None,
    })
}

/// The page size asked for, in range.
pub(crate) fn page_size(asked: Option<u32>) -> Result<u32, StoreError> {
    let page_size = asked.unwrap_or(DEFAULT_PAGE_SIZE);
    if page_size == 0 || page_size > MAX_PAGE_SIZE {
        return Err(invalid(
            "pageSize",
            format!("must be between 1 and {MAX_PAGE_SIZE}"),
        ));
    }
    Ok(page_size)
}

/// The request checked: a page size in range, times that exist, a token we issued.
fn list_query(request: &ProcessExecutionListRequest) -> Result<ListQuery<'_>, StoreError> {
    let page_size = page_size(request.page_size)?;
    let filter = &request.filter;
    Ok(ListQuery {
        status: filter.status,
        process_type: filter.process_type.as_deref(),
        process_id: filter.process_id.as_deref(),
        start_min: filter
            .start_time_min_ms
            .map(|ms| millis("startTimeMinMs", ms))
            .transpose()?,
        start_max: filter
            .start_time_max_ms
            .map(|ms| millis("startTimeMaxMs", ms))
            .transpose()?,
        after: request
            .next_page_token
            .as_deref()
            .map(decode_token)
            .transpose()?,
        // One row more than the page tells whether another page follows.
        limit: i64::from(page_size) + 1,
    })
}

pub(crate) fn encode_token(start: DateTime<Utc>, id: &str) -> String {
    format!("{}:{}", start.timestamp_micros(), id)
}

pub(crate) fn decode_token(token: &str) -> Result<(DateTime<Utc>, Uuid), StoreError> {
    let refused = || invalid("nextPageToken", "is not a token this service issued");
    let (micros, id) = token.split_once(':').ok_or_else(refused)?;
    let micros: i64 = micros.parse().map_err(|_| refused())?;
    let start = DateTime::from_timestamp_micros(micros).ok_or_else(refused)?;
    Ok((start, Uuid::parse_str(id).map_err(|_| refused())?))
}

pub(crate) fn millis(field: &str, ms: i64) -> Result<DateTime<Utc>, StoreError> {
    DateTime::from_timestamp_millis(ms).ok_or_else(|| invalid(field, "is out of range"))
}

pub(crate) fn invalid(field: &str, message: impl Into<String>) -> StoreError {
    StoreError::Decide(DecideError::Invalid(ValidationError::new(field, message)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_garbage_is_refused() {
        let start = DateTime::from_timestamp_micros(1_700_000_000_123_456).unwrap();
        let id = Uuid::now_v7();
        let token = encode_token(start, &id.to_string());
        assert_eq!(decode_token(&token).unwrap(), (start, id));
        assert!(decode_token("nonsense").is_err());
        assert!(decode_token("12:not-a-uuid").is_err());
    }

    #[test]
    fn a_page_size_out_of_range_is_refused() {
        for page_size in [0, MAX_PAGE_SIZE + 1] {
            let request = ProcessExecutionListRequest {
                page_size: Some(page_size),
                ..Default::default()
            };
            assert!(matches!(
                list_query(&request),
                Err(StoreError::Decide(DecideError::Invalid(_)))
            ));
        }
    }
}
