//! Reads that lock, and the lock order every transaction keeps to avoid deadlocks:
//! the user's global-attribute row, then the process execution row, then its task and
//! state rows.

use mysql_async::prelude::Queryable;
use mysql_async::{Row, Value};
use uuid::Uuid;
use xdb_engine::{ProcessExecution, QueuedMessage, StateExecution, StateExecutionId};
use xdb_protocol::{LocalAttributeValue, LocalQueueMessage};

use super::rows::{
    get, get_json, in_list, json_text, process_from_row, state_from_row, uuid_value,
    PROCESS_COLUMNS, STATE_COLUMNS,
};
use crate::plan_writes::NewMessage;
use crate::StoreError;

pub(crate) async fn lock_process(
    tx: &mut impl Queryable,
    id: Uuid,
) -> Result<ProcessExecution, StoreError> {
    select_process(tx, id, true).await
}

pub(crate) async fn select_process(
    tx: &mut impl Queryable,
    id: Uuid,
    for_update: bool,
) -> Result<ProcessExecution, StoreError> {
    let lock = if for_update { " FOR UPDATE" } else { "" };
    let row: Option<Row> = tx
        .exec_first(
            format!("SELECT {PROCESS_COLUMNS} FROM xdb_sys_process_executions WHERE id = ?{lock}"),
            (id.to_string(),),
        )
        .await?;
    let row =
        row.ok_or_else(|| StoreError::NotFound(format!("process execution {id} not found")))?;
    process_from_row(&row)
}

/// The latest execution of `process_id`, if any.
pub(crate) async fn latest_execution(
    tx: &mut impl Queryable,
    process_id: &str,
) -> Result<Option<Uuid>, StoreError> {
    let id: Option<String> = tx
        .exec_first(
            "SELECT process_execution_id FROM xdb_sys_latest_process_executions \
             WHERE process_id = ?",
            (process_id,),
        )
        .await?;
    id.map(|id| Uuid::parse_str(&id).map_err(|e| StoreError::Database(format!("corrupt row: {e}"))))
        .transpose()
}

pub(crate) async fn lock_state(
    tx: &mut impl Queryable,
    process_execution_id: Uuid,
    id: &StateExecutionId,
) -> Result<Option<StateExecution>, StoreError> {
    select_state(tx, process_execution_id, id, true).await
}

pub(crate) async fn select_state(
    tx: &mut impl Queryable,
    process_execution_id: Uuid,
    id: &StateExecutionId,
    for_update: bool,
) -> Result<Option<StateExecution>, StoreError> {
    let lock = if for_update { " FOR UPDATE" } else { "" };
    let row: Option<Row> = tx
        .exec_first(
            format!(
                "SELECT {STATE_COLUMNS} FROM xdb_sys_async_state_executions \
                 WHERE process_execution_id = ? AND state_id = ? \
                 AND state_execution_number = ?{lock}"
            ),
            (
                process_execution_id.to_string(),
                id.state_id.as_str(),
                id.number,
            ),
        )
        .await?;
    row.map(|row| state_from_row(&row)).transpose()
}

/// The execution's waiting states, oldest first, locked.
pub(crate) async fn lock_waiting_states(
    tx: &mut impl Queryable,
    process_execution_id: Uuid,
) -> Result<Vec<StateExecution>, StoreError> {
    let rows: Vec<Row> = tx
        .exec(
            format!(
                "SELECT {STATE_COLUMNS} FROM xdb_sys_async_state_executions \
                 WHERE process_execution_id = ? AND status = 'WAITING_COMMANDS' \
                 ORDER BY created_at, state_id, state_execution_number FOR UPDATE"
            ),
            (process_execution_id.to_string(),),
        )
        .await?;
    rows.iter().map(state_from_row).collect()
}

/// The execution's unconsumed messages in FIFO order.
pub(crate) async fn queued_messages(
    tx: &mut impl Queryable,
    process_execution_id: Uuid,
) -> Result<Vec<QueuedMessage>, StoreError> {
    let rows: Vec<Row> = tx
        .exec(
            "SELECT queue_name, sequence_id, dedup_id, payload FROM xdb_sys_local_queue_messages \
             WHERE process_execution_id = ? AND consumed_by IS NULL ORDER BY sequence_id",
            (process_execution_id.to_string(),),
        )
        .await?;
    rows.iter()
        .map(|row| {
            let queue_name: String = get(row, "queue_name")?;
            Ok(QueuedMessage {
                queue_name: queue_name.clone(),
                sequence_id: get(row, "sequence_id")?,
                message: LocalQueueMessage {
                    queue_name,
                    dedup_id: Some(get(row, "dedup_id")?),
                    payload: get_json(row, "payload")?,
                },
            })
        })
        .collect()
}

/// Inserts messages, dropping duplicates of a dedup id; returns how many were new.
///
/// `INSERT IGNORE` reports a duplicate as 0 affected rows. It would also downgrade other
/// errors to warnings, but none can occur here: names are validated to fit their columns
/// and the payload is JSON that serde wrote.
pub(crate) async fn insert_messages(
    tx: &mut (impl Queryable + super::tables::AffectedRows),
    process_execution_id: Uuid,
    messages: &[NewMessage<'_>],
) -> Result<u64, StoreError> {
    let mut inserted = 0;
    for message in messages {
        let payload = message.payload.map(json_text);
        tx.exec_drop(
            "INSERT IGNORE INTO xdb_sys_local_queue_messages \
               (process_execution_id, queue_name, dedup_id, payload, created_at) \
             VALUES (?, ?, ?, ?, UTC_TIMESTAMP(6))",
            vec![
                uuid_value(process_execution_id),
                Value::from(message.queue_name),
                Value::from(message.dedup_id.as_str()),
                Value::from(payload),
            ],
        )
        .await?;
        inserted += tx.affected();
    }
    Ok(inserted)
}

/// Every local attribute of the execution, by key (a null value reads as absent).
pub(crate) async fn all_local_attributes(
    conn: &mut impl Queryable,
    process_execution_id: uuid::Uuid,
) -> Result<Vec<LocalAttributeValue>, StoreError> {
    let rows: Vec<Row> = conn
        .exec(
            "SELECT `key`, value FROM xdb_sys_local_attributes \
             WHERE process_execution_id = ? ORDER BY `key`",
            (uuid_value(process_execution_id),),
        )
        .await?;
    let mut attributes = Vec::with_capacity(rows.len());
    for row in &rows {
        if let Some(value) = get_json(row, "value")? {
            attributes.push(LocalAttributeValue {
                key: get(row, "key")?,
                value,
            });
        }
    }
    Ok(attributes)
}

/// The execution's local attributes among `keys`; `lock` is appended to the query.
pub(crate) async fn read_local_attributes(
    conn: &mut impl Queryable,
    process_execution_id: uuid::Uuid,
    keys: &[String],
    lock: &str,
) -> Result<Vec<LocalAttributeValue>, StoreError> {
    let mut params = vec![uuid_value(process_execution_id)];
    params.extend(keys.iter().map(|k| Value::from(k.as_str())));
    let placeholders = in_list(&mut params, keys.len());
    let rows: Vec<Row> = conn
        .exec(
            format!(
                "SELECT `key`, value FROM xdb_sys_local_attributes \
                 WHERE process_execution_id = ? AND `key` IN ({placeholders}){lock}"
            ),
            params,
        )
        .await?;
    let mut attributes = Vec::with_capacity(rows.len());
    for row in &rows {
        if let Some(value) = get_json(row, "value")? {
            attributes.push(LocalAttributeValue {
                key: get(row, "key")?,
                value,
            });
        }
    }
    Ok(attributes)
}
