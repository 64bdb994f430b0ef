//! Claiming one task by id, for task sources that learn of tasks one at a time (Pulsar CDC
//! mode): a change event names a task, and the row decides whether there is work.

use std::time::Duration;

use super::rows::{qualified, task_from_row, TASK_COLUMNS};
use super::PostgresStore;
use crate::{StoreError, TaskClaim};

pub(crate) async fn claim_task(
    store: &PostgresStore,
    task_id: i64,
    owner: &str,
    lease: Duration,
) -> Result<TaskClaim, StoreError> {
    let client = store.pool().get().await?;
    // Only a due, unleased task is taken; SKIP LOCKED: a locked row is being completed,
    // rescheduled or claimed by someone else right now, which the status query reports.
    let claim = client
        .prepare_cached(&format!(
            "UPDATE xdb_sys_tasks t SET lease_owner = $2, \
               lease_expires_at = clock_timestamp() + make_interval(secs => $3), \
               first_attempt_at = COALESCE(t.first_attempt_at, clock_timestamp()) \
             WHERE t.id IN (SELECT id FROM xdb_sys_tasks WHERE id = $1 \
                 AND fire_at <= clock_timestamp() \
                 AND (lease_expires_at IS NULL OR lease_expires_at < clock_timestamp()) \
                 FOR UPDATE SKIP LOCKED) \
             RETURNING {}",
            qualified(TASK_COLUMNS, "t")
        ))
        .await?;
    if let Some(row) = client
        .query_opt(&claim, &[&task_id, &owner, &lease.as_secs_f64()])
        .await?
    {
        return Ok(TaskClaim::Claimed(task_from_row(&row)?));
    }
    let status = client
        .prepare_cached(
            "SELECT EXTRACT(EPOCH FROM (fire_at - clock_timestamp()))::float8, \
                    EXTRACT(EPOCH FROM (lease_expires_at - clock_timestamp()))::float8 \
             FROM xdb_sys_tasks WHERE id = $1",
        )
        .await?;
    let Some(row) = client.query_opt(&status, &[&task_id]).await? else {
        return Ok(TaskClaim::Gone);
    };
    let due_in: f64 = row.get(0);
    let lease_left: Option<f64> = row.get(1);
    Ok(TaskClaim::from_wait(due_in, lease_left))
}
