//! [`ReceiptRows`]: receipts of requests with a request id and of batches' items.

use chrono::{DateTime, Utc};
use xdb_protocol::BatchItemOutcome;

use crate::columns::ColumnReader;
use crate::receipts::{Receipt, StoredReceipt};
use crate::sql::{Param, SqlConn, SqlKind};
use crate::tables::ReceiptRows;
use crate::StoreError;

/// Inserts `rows` receipts, each unless its request id has one (not counted then).
/// Waits for a concurrent transaction inserting the same id, so only one of two twins
/// commits its effect. Parameters: [`receipt_params`] of each.
///
/// MySQL's `INSERT IGNORE` reports a duplicate as 0 affected rows; no other error can be
/// downgraded here: every value fits its column (the id is checked, the rest are ours).
pub(crate) fn insert_receipts_sql(kind: SqlKind, rows: usize) -> String {
    format!(
        "{} INTO xdb_sys_request_receipts \
           (request_id, operation, body_hash, answer, batch_id, outcome, created_at) \
         VALUES {} {}",
        kind.pick("INSERT", "INSERT IGNORE"),
        vec!["(?, ?, ?, ?, ?, ?, ?)"; rows].join(", "),
        kind.pick("ON CONFLICT (request_id) DO NOTHING", ""),
    )
}

/// The parameters of one row of [`insert_receipts_sql`].
pub(crate) fn receipt_params<'a>(
    receipt: &'a Receipt,
    outcome: BatchItemOutcome,
    answer: &'a str,
    now: DateTime<Utc>,
) -> [Param<'a>; 7] {
    [
        receipt.request_id.as_str().into(),
        receipt.operation.into(),
        receipt.body_hash.as_str().into(),
        answer.into(),
        Param::OptionalUuid(receipt.batch_id),
        outcome.as_str().into(),
        now.into(),
    ]
}

impl<C: SqlConn> ReceiptRows for C {
    async fn insert_receipt(
        &mut self,
        receipt: &Receipt,
        outcome: BatchItemOutcome,
        answer: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let params = receipt_params(receipt, outcome, answer, now);
        Ok(self
            .execute(&insert_receipts_sql(C::KIND, 1), &params)
            .await?
            == 1)
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
