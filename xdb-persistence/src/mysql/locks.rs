//! Reads that lock, and the lock order every transaction keeps to avoid deadlocks:
//! the user's global-attribute row, then the process execution row, then its task and
//! state rows.

use mysql_async::prelude::Queryable;
use mysql_async::Row;
use uuid::Uuid;
use xdb_engine::ProcessExecution;

use super::rows::{process_from_row, PROCESS_COLUMNS};
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
