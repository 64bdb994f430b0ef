//! [`ReceiptRows`]: receipts of requests with a request id and of batches' items.

use chrono::{DateTime, Utc};
use xdb_protocol::BatchItemOutcome;

use crate::columns::ColumnReader;
use crate::receipts::{Receipt, StoredReceipt};
use crate::sql::{Param, SqlConn, SqlKind};
use crate::tables::ReceiptRows;
use crate::StoreError;

/// Inserts a receipt unless its request id has one: 0 rows then. Waits for a concurrent
/// transaction inserting the same id, so only one of two twins commits its effect.
/// Parameters: request id, operation, hash, answer, batch, outcome, time.
///
/// MySQL's `INSERT IGNORE` reports a duplicate as 0 affected rows; no other error can be
/// downgraded here: every value fits its column (the id is checked, the rest are ours).
fn insert_sql(kind: SqlKind) -> &'static str {
    kind.pick(
        "INSERT INTO xdb_sys_request_receipts \
           (request_id, operation, body_hash, answer, batch_id, outcome, created_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (request_id) DO NOTHING",
        "INSERT IGNORE INTO xdb_sys_request_receipts \
           (request_id, operation, body_hash, answer, batch_id, outcome, created_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?)",
    )
}

impl<C: SqlConn> ReceiptRows for C {
    async fn insert_receipt(
        &mut self,
        receipt: &Receipt,
        outcome: BatchItemOutcome,
        answer: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let params = [
            receipt.request_id.as_str().into(),
            receipt.operation.into(),
            receipt.body_hash.as_str().into(),
            answer.into(),
            Param::OptionalUuid(receipt.batch_id),
            outcome.as_str().into(),
            now.into(),
        ];
        Ok(self.execute(insert_sql(C::KIND), &params).await? == 1)
    }

    async fn find_receipt(
        &mut self,
        request_id: &str,
    ) -> Result<Option<StoredReceipt>, StoreError> {
        let rows = self
            .query(
                "SELECT operation, body_hash, answer, outcome, created_at \
                 FROM xdb_sys_request_receipts WHERE request_id = ?",
                &[request_id.into()],
            )
            .await?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let mut row = C::columns(row, 0);
        let operation = row.text()?;
        let body_hash = row.text()?;
        let answer = row.text()?;
        let outcome = row.text()?;
        let outcome = BatchItemOutcome::parse(&outcome)
            .ok_or_else(|| StoreError::Database(format!("unknown receipt outcome {outcome}")))?;
        Ok(Some(StoredReceipt {
            operation,
            body_hash,
            answer,
            outcome,
            created_at: row.time()?,
        }))
    }

    async fn delete_receipts_before(
        &mut self,
        before: DateTime<Utc>,
        limit: i64,
    ) -> Result<u64, StoreError> {
        // Both read the (batch_id, created_at) index; PostgreSQL has no DELETE … LIMIT.
        let sql = C::KIND.pick(
            "DELETE FROM xdb_sys_request_receipts WHERE request_id IN \
               (SELECT request_id FROM xdb_sys_request_receipts \
                WHERE batch_id IS NULL AND created_at < ? ORDER BY created_at LIMIT ?)",
            "DELETE FROM xdb_sys_request_receipts \
             WHERE batch_id IS NULL AND created_at < ? ORDER BY created_at LIMIT ?",
        );
        self.execute(sql, &[before.into(), limit.into()]).await
    }

    async fn delete_receipt(&mut self, request_id: &str) -> Result<(), StoreError> {
        self.execute(
            "DELETE FROM xdb_sys_request_receipts WHERE request_id = ?",
            &[request_id.into()],
        )
        .await?;
        Ok(())
    }
}

#[cfg(test)]
#[path = "receipt_rows_tests.rs"]
mod tests;
