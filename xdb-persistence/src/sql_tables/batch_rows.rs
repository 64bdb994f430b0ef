//! [`BatchStore`] over every dialect: batch rows in `xdb_sys_batches`, their items in
//! `xdb_sys_request_receipts`.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;
use xdb_protocol::{
    BatchInfo, BatchItem, BatchItemOutcome, BatchListRequest, BatchListResponse, BatchOperation,
    BatchStartRequest, BatchStartResponse, BatchStatus,
};

use crate::batch_store::{BatchProgress, BatchStore, LeasedBatch};
use crate::columns::ColumnReader;
use crate::conflict_retry::retrying_conflicts;
use crate::receipts::Receipt;
use crate::sql::{Param, SqlConn};
use crate::tables::{Dialect, Lane, Transaction};
use crate::StoreError;

const BATCH_COLUMNS: &str = "batch_id, operation, request, status, rate_per_second, expected, \
                             done, skipped, failed, error, created_at, closed_at, \
                             walk_position, lease_owner";

/// Most batches a list page holds.
const MAX_PAGE: u32 = 1000;

fn corrupt(what: &str, value: &str) -> StoreError {
    StoreError::Database(format!("unknown batch {what} {value}"))
}

fn count(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// A batch row of [`BATCH_COLUMNS`], with its walk position and lease owner.
fn read_batch(
    row: &mut impl ColumnReader,
) -> Result<(BatchInfo, Option<String>, Option<String>), StoreError> {
    let batch_id = row.uuid()?;
    let operation = row.text()?;
    let operation =
        BatchOperation::parse(&operation).ok_or_else(|| corrupt("operation", &operation))?;
    let request: BatchStartRequest = row
        .json()?
        .ok_or_else(|| StoreError::Database("a batch without its request".into()))?;
    let status = row.text()?;
    let status = BatchStatus::parse(&status).ok_or_else(|| corrupt("status", &status))?;
    let rate_per_second = u32::try_from(row.int()?).unwrap_or(1);
    let expected = count(row.bigint()?);
    let (done, skipped, failed) = (
        count(row.bigint()?),
        count(row.bigint()?),
        count(row.bigint()?),
    );
    let error = row.optional_text()?;
    let created = row.time()?;
    let closed = row.optional_time()?;
    let info = BatchInfo {
        batch_id: batch_id.to_string(),
        operation,
        status,
        request,
        rate_per_second,
        expected,
        matched: done + skipped + failed,
        done,
        skipped,
        failed,
        created_timestamp_ms: created.timestamp_millis(),
        closed_timestamp_ms: closed.map(|t| t.timestamp_millis()),
        error,
    };
    Ok((info, row.optional_text()?, row.optional_text()?))
}

async fn batch_of<C: SqlConn>(
    conn: &mut C,
    batch_id: Uuid,
    lock: bool,
) -> Result<Option<(BatchInfo, Option<String>, Option<String>)>, StoreError> {
    let lock = if lock { " FOR UPDATE" } else { "" };
    let sql = format!("SELECT {BATCH_COLUMNS} FROM xdb_sys_batches WHERE batch_id = ?{lock}");
    let rows = conn.query(&sql, &[batch_id.into()]).await?;
    rows.first()
        .map(|row| read_batch(&mut C::columns(row, 0)))
        .transpose()
}

/// A list page token: the last batch's creation (microseconds) and id.
fn page_token(info: &BatchInfo, created_micros: i64) -> String {
    format!("{created_micros}_{}", info.batch_id)
}

fn parse_page_token(token: &str) -> Result<(DateTime<Utc>, Uuid), StoreError> {
    let invalid = || {
        StoreError::Decide(xdb_engine::decide::DecideError::Invalid(
            xdb_engine::validation::ValidationError::new(
                "nextPageToken",
                "is not a token a batch list answered",
            ),
        ))
    };
    let (micros, id) = token.split_once('_').ok_or_else(invalid)?;
    let micros: i64 = micros.parse().map_err(|_| invalid())?;
    let at = DateTime::from_timestamp_micros(micros).ok_or_else(invalid)?;
    Ok((at, Uuid::parse_str(id).map_err(|_| invalid())?))
}

/// The execution a batch item's receipt names (its request id ends with it).
fn item_execution(request_id: &str) -> String {
    request_id.rsplit(':').next().unwrap_or_default().to_owned()
}

#[async_trait]
impl<D: Dialect> BatchStore for D
where
    D::Session: SqlConn,
{
    async fn create_batch(
        &self,
        request: &BatchStartRequest,
        rate_per_second: u32,
        expected: u64,
        receipt: Option<&Receipt>,
    ) -> Result<BatchStartResponse, StoreError> {
        if let Some(receipt) = receipt {
            if let Some(answer) = crate::operations::replayed(self, receipt).await? {
                return answer_of(answer.answer);
            }
        }
        let batch_id = Uuid::now_v7();
        let answer = BatchStartResponse {
            batch_id: batch_id.to_string(),
            expected,
        };
        let created = retrying_conflicts(|| async {
            let mut tx = self.begin(Lane::Main).await?;
            let now = self.database_clock().now();
            tx.execute(
                "INSERT INTO xdb_sys_batches (batch_id, operation, request, status, \
                   rate_per_second, expected, created_at) VALUES (?, ?, ?, 'RUNNING', ?, ?, ?)",
                &[
                    batch_id.into(),
                    request.operation.as_str().into(),
                    Param::Json(Some(crate::sql::json(request))),
                    i32::try_from(rate_per_second).unwrap_or(i32::MAX).into(),
                    i64::try_from(expected).unwrap_or(i64::MAX).into(),
                    now.into(),
                ],
            )
            .await?;
            crate::operations::record_receipt(&mut tx, receipt, &answer, now).await?;
            if let Some(wake_up) = self.batch_wake_up() {
                tx.execute(wake_up, &[]).await?;
            }
            tx.commit().await
        })
        .await;
        match (created, receipt) {
            (Ok(()), _) => Ok(answer),
            (Err(error), None) => Err(error),
            // A twin request with the same id committed first: its batch is ours.
            (Err(error), Some(receipt)) => {
                match crate::operations::replayed(self, receipt).await? {
                    Some(answer) => answer_of(answer.answer),
                    None => Err(error),
                }
            }
        }
    }

    async fn describe_batch(
        &self,
        batch_id: Uuid,
        limit: usize,
    ) -> Result<Option<(BatchInfo, Vec<BatchItem>)>, StoreError> {
        let mut session = self.session(Lane::Main).await?;
        let Some((info, _, _)) = batch_of(&mut session, batch_id, false).await? else {
            return Ok(None);
        };
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = session
            .query(
                "SELECT request_id, outcome, answer FROM xdb_sys_request_receipts \
                 WHERE batch_id = ? AND outcome <> 'DONE' ORDER BY created_at DESC LIMIT ?",
                &[batch_id.into(), limit.into()],
            )
            .await?;
        let mut items = Vec::with_capacity(rows.len());
        for row in &rows {
            let mut row = D::Session::columns(row, 0);
            let request_id = row.text()?;
            let outcome = row.text()?;
            let outcome =
                BatchItemOutcome::parse(&outcome).ok_or_else(|| corrupt("outcome", &outcome))?;
            let answer: serde_json::Value = serde_json::from_str(&row.text()?).unwrap_or_default();
            items.push(BatchItem {
                process_execution_id: item_execution(&request_id),
                outcome,
                reason: answer["reason"].as_str().map(str::to_owned),
            });
        }
        Ok(Some((info, items)))
    }

    async fn list_batches(
        &self,
        request: &BatchListRequest,
    ) -> Result<BatchListResponse, StoreError> {
        let page = request.page_size.unwrap_or(50).clamp(1, MAX_PAGE);
        let mut sql =
            format!("SELECT {BATCH_COLUMNS}, created_at FROM xdb_sys_batches WHERE 1 = 1");
        let mut params: Vec<Param<'_>> = Vec::new();
        if let Some(status) = request.status {
            sql.push_str(" AND status = ?");
            params.push(status.as_str().into());
        }
        if let Some(token) = &request.next_page_token {
            let (at, id) = parse_page_token(token)?;
            sql.push_str(" AND (created_at < ? OR (created_at = ? AND batch_id < ?))");
            params.extend([at.into(), at.into(), id.into()]);
        }
        sql.push_str(" ORDER BY created_at DESC, batch_id DESC LIMIT ?");
        params.push(i64::from(page + 1).into());
        let mut session = self.session(Lane::Main).await?;
        let rows = session.query(&sql, &params).await?;
        let mut batches = Vec::with_capacity(rows.len());
        let mut last_created = 0;
        for row in rows.iter().take(page as usize) {
            let mut columns = D::Session::columns(row, 0);
            let (info, _, _) = read_batch(&mut columns)?;
            last_created = columns.time()?.timestamp_micros();
            batches.push(info);
        }
        let next_page_token = match batches.last() {
            Some(last) if rows.len() > page as usize => Some(page_token(last, last_created)),
            _ => None,
        };
        Ok(BatchListResponse {
            batches,
            next_page_token,
        })
    }

    async fn cancel_batch(
        &self,
        batch_id: Uuid,
        why: &str,
    ) -> Result<Option<BatchInfo>, StoreError> {
        let mut session = self.session(Lane::Main).await?;
        let now = self.database_clock().now();
        session
            .execute(
                "UPDATE xdb_sys_batches SET status = 'CANCELLED', error = ?, closed_at = ?, \
                   lease_owner = NULL, lease_until = NULL \
                 WHERE batch_id = ? AND status = 'RUNNING'",
                &[why.into(), now.into(), batch_id.into()],
            )
            .await?;
        drop(session);
        // Progress its driver made since its last checkpoint is in the receipts; the
        // driver recounts again when it sees the cancel, for what it did meanwhile.
        self.recount_batch(batch_id).await?;
        let mut session = self.session(Lane::Main).await?;
        Ok(batch_of(&mut session, batch_id, false)
            .await?
            .map(|(info, _, _)| info))
    }

    async fn lease_batch(
        &self,
        owner: &str,
        lease: Duration,
    ) -> Result<Option<LeasedBatch>, StoreError> {
        retrying_conflicts(|| async {
            let mut tx = self.begin(Lane::Main).await?;
            let now = self.database_clock().now();
            let sql = format!(
                "SELECT {BATCH_COLUMNS} FROM xdb_sys_batches \
                 WHERE status = 'RUNNING' \
                   AND (lease_owner IS NULL OR lease_owner = ? OR lease_until < ?) \
                 ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED"
            );
            let rows = tx.query(&sql, &[owner.into(), now.into()]).await?;
            let Some(row) = rows.first() else {
                tx.commit().await?;
                return Ok(None);
            };
            let (info, walk_position, held_by) = read_batch(&mut D::Tx::columns(row, 0))?;
            let until = now + chrono::Duration::from_std(lease).unwrap_or_default();
            let batch_id =
                Uuid::parse_str(&info.batch_id).map_err(|_| corrupt("id", &info.batch_id))?;
            tx.execute(
                "UPDATE xdb_sys_batches SET lease_owner = ?, lease_until = ? WHERE batch_id = ?",
                &[owner.into(), until.into(), batch_id.into()],
            )
            .await?;
            tx.commit().await?;
            Ok(Some(LeasedBatch {
                info,
                walk_position,
                taken_over: held_by.as_deref() != Some(owner),
            }))
        })
        .await
    }

    async fn recount_batch(&self, batch_id: Uuid) -> Result<BatchProgress, StoreError> {
        let mut session = self.session(Lane::Main).await?;
        let rows = session
            .query(
                "SELECT outcome, COUNT(*) FROM xdb_sys_request_receipts \
                 WHERE batch_id = ? GROUP BY outcome",
                &[batch_id.into()],
            )
            .await?;
        let mut progress = BatchProgress::default();
        for row in &rows {
            let mut row = D::Session::columns(row, 0);
            let outcome = row.text()?;
            let n = count(row.bigint()?);
            match BatchItemOutcome::parse(&outcome) {
                Some(BatchItemOutcome::Done) => progress.done = n,
                Some(BatchItemOutcome::Skipped) => progress.skipped = n,
                Some(BatchItemOutcome::Failed) => progress.failed = n,
                None => return Err(corrupt("outcome", &outcome)),
            }
        }
        let as_i64 = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        session
            .execute(
                "UPDATE xdb_sys_batches SET done = ?, skipped = ?, failed = ? WHERE batch_id = ?",
                &[
                    as_i64(progress.done).into(),
                    as_i64(progress.skipped).into(),
                    as_i64(progress.failed).into(),
                    batch_id.into(),
                ],
            )
            .await?;
        Ok(progress)
    }

    async fn checkpoint_batch(
        &self,
        batch_id: Uuid,
        owner: &str,
        walk_position: Option<&str>,
        progress: BatchProgress,
        lease: Duration,
    ) -> Result<bool, StoreError> {
        let mut session = self.session(Lane::Main).await?;
        let until =
            self.database_clock().now() + chrono::Duration::from_std(lease).unwrap_or_default();
        let as_i64 = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        let updated = session
            .execute(
                "UPDATE xdb_sys_batches SET walk_position = ?, done = done + ?, \
                   skipped = skipped + ?, failed = failed + ?, lease_until = ? \
                 WHERE batch_id = ? AND lease_owner = ? AND status = 'RUNNING'",
                &[
                    Param::Text(walk_position),
                    as_i64(progress.done).into(),
                    as_i64(progress.skipped).into(),
                    as_i64(progress.failed).into(),
                    until.into(),
                    batch_id.into(),
                    owner.into(),
                ],
            )
            .await?;
        Ok(updated == 1)
    }

    async fn close_batch(
        &self,
        batch_id: Uuid,
        owner: &str,
        status: BatchStatus,
        error: Option<&str>,
    ) -> Result<bool, StoreError> {
        let mut session = self.session(Lane::Main).await?;
        let now = self.database_clock().now();
        let updated = session
            .execute(
                "UPDATE xdb_sys_batches SET status = ?, error = ?, closed_at = ?, \
                   lease_owner = NULL, lease_until = NULL \
                 WHERE batch_id = ? AND lease_owner = ? AND status = 'RUNNING'",
                &[
                    status.as_str().into(),
                    Param::Text(error),
                    now.into(),
                    batch_id.into(),
                    owner.into(),
                ],
            )
            .await?;
        Ok(updated == 1)
    }
}

/// A stored batch start's answer.
fn answer_of(answer: serde_json::Value) -> Result<BatchStartResponse, StoreError> {
    serde_json::from_value(answer)
        .map_err(|e| StoreError::Database(format!("unreadable batch start answer: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_tokens_read_back_and_bad_ones_are_refused() {
        let id = Uuid::now_v7();
        let (at, read) = parse_page_token(&format!("1700000000123456_{id}")).unwrap();
        assert_eq!((at.timestamp_micros(), read), (1_700_000_000_123_456, id));
        for bad in ["", "x_y", "12", &format!("1_{id}x")] {
            assert!(parse_page_token(bad).is_err(), "{bad:?}");
        }
        assert_eq!(item_execution(&format!("batch:{id}:abc")), "abc");
    }
}
