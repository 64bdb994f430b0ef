//! The claim of the tasks of named executions (see [`crate::TaskSource::lease_named`]):
//! where a wake-up names the executions whose tasks are new (MySQL's notify calls), an
//! instance reads their tasks by the execution index instead of searching the queue,
//! whose seven-part look for due tasks was most of a claim's time on MariaDB
//! (BENCHMARKS.md). It takes what the search would have taken of those tasks, and says
//! when it could not take them all, so that the caller searches after all.
//!
//! The read locks nothing, for the reason the search's first read locks nothing (see
//! [`super::leases::claim_due`]); the tasks are then locked by their key, as the search's are.

use std::time::Duration;

use uuid::Uuid;

use super::in_list::in_list;
use super::lease_sql::{db_now, micros};
use super::leases::{lease_locked, lock_still_claimable};
use super::task_queue::{ClaimedRows, TaskQueue};
use crate::columns::{read_task, ColumnReader, TASK_COLUMNS};
use crate::sql::{Param, SqlConn};
use crate::tables::{Lane, Transaction};
use crate::task_claim::is_timekeeping;
use crate::StoreError;

/// What [`claim_named`] took, and whether that was every unleased task of the named
/// executions due within the read-ahead.
#[derive(Debug, Default)]
pub(crate) struct NamedClaim {
    pub claimed: Vec<ClaimedRows>,
    /// False when one was left (keyed, of a priority the claim leaves, past `limit`,
    /// or locked by another claim): only a search takes it in turn.
    pub complete: bool,
}

/// Claims for `owner`, for `lease`, up to `limit` of the unleased tasks of `executions`
/// due within `ahead`: those a search would take (timers whatever their priority, other
/// tasks of priority 1 to `lowest_priority`), keyless ones only, as a fairness key's
/// turn is the search's to give.
pub(crate) async fn claim_named<D: TaskQueue>(
    store: &D,
    executions: &[Uuid],
    owner: &str,
    limit: usize,
    lease: Duration,
    ahead: Duration,
    lowest_priority: u8,
) -> Result<NamedClaim, StoreError> {
    if executions.is_empty() {
        return Ok(NamedClaim {
            claimed: Vec::new(),
            complete: true,
        });
    }
    let kind = <D::Tx as SqlConn>::KIND;
    let ahead = i64::try_from(ahead.as_micros()).unwrap_or(i64::MAX);
    let mut tx = store.begin(Lane::Timekeeping).await?;
    let mut params = vec![Param::from(ahead)];
    params.extend(executions.iter().map(|&id| Param::from(id)));
    let ids = in_list(&mut params, executions.len());
    let now = db_now(kind);
    let sql = format!(
        "SELECT {TASK_COLUMNS}, {now} AS db_now, priority, fairness_key FROM {} \
         WHERE lease_owner IS NULL AND fire_at <= {now} + {} \
         AND process_execution_id IN ({ids})",
        kind.pick(
            "xdb_sys_tasks",
            "xdb_sys_tasks FORCE INDEX (xdb_sys_tasks_by_execution)"
        ),
        micros(kind),
    );
    let rows = tx.query(&sql, &params).await?;
    let mut read = Vec::with_capacity(rows.len());
    for row in &rows {
        let mut columns = D::Tx::columns(row, 0);
        let task = read_task(&mut columns)?;
        let now = columns.time()?;
        let priority = columns.int()?;
        let keyed = !columns.text()?.is_empty();
        read.push((task, now, priority, keyed));
    }
    let found = read.len();
    let Some(&(_, now, ..)) = read.first() else {
        tx.commit().await?;
        return Ok(NamedClaim {
            claimed: Vec::new(),
            complete: true,
        });
    };
    let candidates: Vec<_> = read
        .into_iter()
        .filter(|(task, _, priority, keyed)| {
            !keyed && (is_timekeeping(task.task_type) || *priority <= i32::from(lowest_priority))
        })
        .map(|(task, ..)| task)
        .take(limit)
        .collect();
    let held = lock_still_claimable(&mut tx, &candidates, ahead).await?;
    let complete = held.len() == found;
    if held.is_empty() {
        tx.commit().await?;
        return Ok(NamedClaim {
            claimed: Vec::new(),
            complete,
        });
    }
    let claimed = lease_locked(tx, held, now, owner, lease).await?;
    Ok(NamedClaim { claimed, complete })
}

#[cfg(test)]
#[path = "named_claim_tests.rs"]
mod tests;
