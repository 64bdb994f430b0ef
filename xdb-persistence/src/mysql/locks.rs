//! Reads that lock, and the lock order every transaction keeps to avoid deadlocks:
//! the user's global-attribute row, then the process execution row, then its task and
//! state rows.

use mysql_async::prelude::Queryable;
use mysql_async::{Row, Value};
use uuid::Uuid;
use xdb_engine::ProcessExecution;
use xdb_protocol::LocalAttributeValue;

use super::rows::{get, get_json, in_list, process_from_row, uuid_value, PROCESS_COLUMNS};
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
