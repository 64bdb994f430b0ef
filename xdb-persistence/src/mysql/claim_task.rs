//! Claiming one task by id, for task sources that learn of tasks one at a time (Pulsar CDC
//! mode): a change event names a task, and the row decides whether there is work.

use std::time::Duration;

use chrono::NaiveDateTime;
use mysql_async::prelude::Queryable;
use mysql_async::Row;

use super::rows::{get, task_from_row, TASK_COLUMNS};
use super::MySqlStore;
use crate::{StoreError, TaskClaim};

pub(crate) async fn claim_task(
    store: &MySqlStore,
    task_id: i64,
    owner: &str,
    lease: Duration,
) -> Result<TaskClaim, StoreError> {
    let mut tx = store.begin().await?;
    // SKIP LOCKED: a locked row is being completed, rescheduled or claimed right now;
    // it is then reported as leased for a moment, and looked at again after that.
    let row: Option<Row> = tx
        .exec_first(
            format!(
                "SELECT {TASK_COLUMNS}, UTC_TIMESTAMP(6) AS db_now, \
                   TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), fire_at) AS due_in, \
                   TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), lease_expires_at) AS lease_left \
                 FROM xdb_sys_tasks WHERE id = ? FOR UPDATE SKIP LOCKED"
            ),
            (task_id,),
        )
        .await?;
    let Some(row) = row else {
        let exists: Option<i64> = tx
            .exec_first("SELECT id FROM xdb_sys_tasks WHERE id = ?", (task_id,))
            .await?;
        tx.commit().await?;
        return Ok(match exists {
            Some(_) => TaskClaim::from_wait(0.0, None),
            None => TaskClaim::Gone,
        });
    };
    let due_in: i64 = get(&row, "due_in")?;
    let lease_left: Option<i64> = get(&row, "lease_left")?;
    if let Some(wait) = TaskClaim::wait(
        due_in as f64 / 1e6,
        lease_left.map(|micros| micros as f64 / 1e6),
    ) {
        tx.commit().await?;
        return Ok(wait);
    }
    let now: NaiveDateTime = get(&row, "db_now")?;
    let mut task = task_from_row(&row)?;
    tx.exec_drop(
        "UPDATE xdb_sys_tasks SET lease_owner = ?, \
           lease_expires_at = ? + INTERVAL ? MICROSECOND, \
           first_attempt_at = COALESCE(first_attempt_at, ?) \
         WHERE id = ?",
        (owner, now, lease.as_micros() as i64, now, task_id),
    )
    .await?;
    tx.commit().await?;
    task.first_attempt_at.get_or_insert(now.and_utc());
    Ok(TaskClaim::Claimed(task))
}
