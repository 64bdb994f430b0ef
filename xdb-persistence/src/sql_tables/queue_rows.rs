//! [`QueueRows`]: an execution's local-queue messages.

use uuid::Uuid;
use xdb_engine::QueuedMessage;
use xdb_protocol::LocalQueueMessage;

use crate::columns::ColumnReader;
use crate::plan_writes::NewMessage;
use crate::sql::{Param, SqlConn, SqlKind};
use crate::tables::QueueRows;
use crate::StoreError;

/// Inserts a message unless the execution has its dedup id. Parameters: execution id,
/// queue, dedup id, payload.
///
/// MySQL's `INSERT IGNORE` reports a duplicate as 0 affected rows. It would also
/// downgrade other errors to warnings, but none can occur here: names are validated to
/// fit their columns and the payload is JSON that serde wrote.
fn insert_message_sql(kind: SqlKind) -> &'static str {
    kind.pick(
        "INSERT INTO xdb_sys_local_queue_messages \
           (process_execution_id, queue_name, dedup_id, payload) VALUES (?, ?, ?, ?) \
         ON CONFLICT (process_execution_id, queue_name, dedup_id) DO NOTHING",
        "INSERT IGNORE INTO xdb_sys_local_queue_messages \
           (process_execution_id, queue_name, dedup_id, payload, created_at) \
         VALUES (?, ?, ?, ?, UTC_TIMESTAMP(6))",
    )
}

impl<C: SqlConn> QueueRows for C {
    async fn insert_messages(
        &mut self,
        process: Uuid,
        messages: &[NewMessage<'_>],
    ) -> Result<u64, StoreError> {
        let mut inserted = 0;
        for message in messages {
            let payload = message
                .payload
                .map(|p| serde_json::to_value(p).expect("model types serialize"));
            let params = [
                process.into(),
                message.queue_name.into(),
                message.dedup_id.as_str().into(),
                Param::Json(payload),
            ];
            inserted += self.execute(insert_message_sql(C::KIND), &params).await?;
        }
        Ok(inserted)
    }

    async fn queued_messages(&mut self, process: Uuid) -> Result<Vec<QueuedMessage>, StoreError> {
        let rows = self
            .query(
                "SELECT queue_name, sequence_id, dedup_id, payload \
                 FROM xdb_sys_local_queue_messages \
                 WHERE process_execution_id = ? AND consumed_by IS NULL ORDER BY sequence_id",
                &[process.into()],
            )
            .await?;
        rows.iter()
            .map(|row| {
                let mut columns = C::columns(row, 0);
                let queue_name = columns.text()?;
                Ok(QueuedMessage {
                    queue_name: queue_name.clone(),
                    sequence_id: columns.bigint()?,
                    message: LocalQueueMessage {
                        queue_name,
                        dedup_id: Some(columns.text()?),
                        payload: columns.json()?,
                    },
                })
            })
            .collect()
    }
}
