//! [`TaskRows`]: a leased task taken, dropped or given back by its owner.

use chrono::{DateTime, Utc};
use xdb_engine::Task;

use crate::sql::{Param, SqlConn, SqlKind};
use crate::tables::TaskRows;
use crate::trace_context::TaskInfo;
use crate::StoreError;

/// Deletes a task its owner holds. Parameters: id, owner.
///
/// PostgreSQL compares the owner with `IS NOT DISTINCT FROM` (the same as `=` here: the
/// owner is never null) so that only the primary key can find the task: with `=`, the
/// owner index qualifies too, and a generic plan made while the task table was near
/// empty took it (auto_explain: `Index Cond: lease_owner = $2, Filter: id = $1`),
/// walking every index entry of the owner's, dead ones included until the next VACUUM,
/// on each transition: 160 buffers and 0.66 ms per statement (pg_stat_statements) over
/// a 60,000-process load. Every such statement of PostgreSQL's does the same; MySQL
/// finds a row by its primary key first whatever else the condition says.
pub(crate) fn take_task_sql(kind: SqlKind) -> &'static str {
    kind.pick(
        "DELETE FROM xdb_sys_tasks WHERE id = ? AND lease_owner IS NOT DISTINCT FROM ?",
        "DELETE FROM xdb_sys_tasks WHERE id = ? AND lease_owner = ?",
    )
}

/// The task table in a statement that finds its tasks by a list of ids
/// (`WHERE id IN (…)`). MySQL is told to take the primary key: while the table is small
/// (the tasks in flight), its optimizer scans the whole table for such a list (EXPLAIN:
/// `type: ALL`), and the scan of a locking statement waits for every row another
/// transaction holds. The batched transitions' DELETE took 8.6 ms a call so, a quarter
/// of the server's statement time at 64 processes in flight.
pub(crate) fn tasks_by_ids(kind: SqlKind) -> &'static str {
    kind.pick("xdb_sys_tasks", "xdb_sys_tasks FORCE INDEX (PRIMARY)")
}

/// `DELETE FROM` [`tasks_by_ids`]: MySQL takes index hints only in its multi-table form.
pub(crate) fn delete_tasks_by_ids(kind: SqlKind) -> &'static str {
    kind.pick(
        "DELETE FROM xdb_sys_tasks",
        "DELETE xdb_sys_tasks FROM xdb_sys_tasks FORCE INDEX (PRIMARY)",
    )
}

/// Gives a task its owner holds back for another attempt. Parameters: due, id, owner.
fn retry_task_sql(kind: SqlKind) -> &'static str {
    kind.pick(
        "UPDATE xdb_sys_tasks SET attempt = attempt + 1, fire_at = ?, \
           lease_owner = NULL, lease_expires_at = NULL \
         WHERE id = ? AND lease_owner IS NOT DISTINCT FROM ?",
        "UPDATE xdb_sys_tasks SET attempt = attempt + 1, fire_at = ?, \
           lease_owner = NULL, lease_expires_at = NULL \
         WHERE id = ? AND lease_owner = ?",
    )
}

/// Gives a task its owner holds back at the same attempt. Parameters: due, info, id,
/// owner.
fn hold_task_sql(kind: SqlKind) -> &'static str {
    kind.pick(
        "UPDATE xdb_sys_tasks SET fire_at = ?, info = ?, \
           lease_owner = NULL, lease_expires_at = NULL \
         WHERE id = ? AND lease_owner IS NOT DISTINCT FROM ?",
        "UPDATE xdb_sys_tasks SET fire_at = ?, info = ?, \
           lease_owner = NULL, lease_expires_at = NULL \
         WHERE id = ? AND lease_owner = ?",
    )
}

fn stale(task: &Task) -> StoreError {
    StoreError::Stale(format!("task {} is no longer leased to us", task.id))
}

impl<C: SqlConn> TaskRows for C {
    async fn take_task(&mut self, task: &Task, owner: &str) -> Result<(), StoreError> {
        let taken = self
            .execute(take_task_sql(C::KIND), &[task.id.into(), owner.into()])
            .await?;
        if taken != 1 {
            return Err(stale(task));
        }
        Ok(())
    }

    async fn drop_task(&mut self, task: &Task, owner: &str) -> Result<(), StoreError> {
        self.execute(take_task_sql(C::KIND), &[task.id.into(), owner.into()])
            .await?;
        Ok(())
    }

    async fn retry_task(
        &mut self,
        task: &Task,
        owner: &str,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let retried = self
            .execute(
                retry_task_sql(C::KIND),
                &[at.into(), task.id.into(), owner.into()],
            )
            .await?;
        if retried != 1 {
            return Err(stale(task));
        }
        Ok(())
    }

    async fn hold_task(
        &mut self,
        task: &Task,
        owner: &str,
        at: DateTime<Utc>,
        info: &TaskInfo,
    ) -> Result<bool, StoreError> {
        let held = self
            .execute(
                hold_task_sql(C::KIND),
                &[
                    at.into(),
                    Param::Json(Some(crate::sql::json(info))),
                    task.id.into(),
                    owner.into(),
                ],
            )
            .await?;
        Ok(held == 1)
    }
}
