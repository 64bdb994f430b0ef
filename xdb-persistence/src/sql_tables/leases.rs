//! The task queue's leases taken and given back, written once as steps in a
//! transaction: the claim of due tasks, the claim of tasks by id and the release of
//! dead instances' leases, each a locked read and then an update by id (MySQL has no
//! `UPDATE … RETURNING`). They are [`TaskQueue`]'s defaults: MySQL runs them, and
//! PostgreSQL overrides them with faster forms of its own; the tests run them on both.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use xdb_engine::{ProcessExecution, StateExecution, Task, TaskType};

use super::fair_shares::share_priority;
use super::in_list::in_list;
use super::lease_sql::{
    db_now, due_params, due_tasks, lease_params, locking, silent, still_claimable, take_lease,
    tasks_through, KEYED_PROBE,
};
use super::process_rows::process_and_state_of;
use super::task_queue::{claim_wait, update_unlocked, ClaimedRows, TaskQueue};
use super::task_rows::tasks_by_ids;
use crate::columns::{
    qualified, read_task, ColumnReader, PROCESS_COLUMNS, PROCESS_COLUMN_COUNT, STATE_COLUMNS,
    STATE_COLUMN_COUNT, TASK_COLUMNS,
};
use crate::fair_turns::FairTurns;
use crate::sql::{Param, SqlConn};
use crate::tables::{Lane, Transaction};
use crate::task_claim::{answers_in_order, order_claimed};
use crate::{ReleasedLeases, StoreError, TaskClaim};

/// Claims up to `limit` due tasks for `owner` (see [`crate::TaskSource::lease_due`]) in
/// one transaction on the timekeeping lane: a plain read of due timers and process
/// timeouts and of the other unleased tasks due (see [`due_tasks`]), at most once a
/// second of the leases that ran out (their instance died, see
/// [`crate::task_claim::ExpiredLeaseLook`]); then a locked read by id of those still
/// claimable, one update that leases them, and one plain read of the claimed state
/// tasks' process and state rows (one statement for the claim, not one per task when
/// its call is loaded).
///
/// The first reads lock nothing because a locking range scan on MariaDB also locks the
/// row just past its range until the transaction ends, even under READ COMMITTED: the
/// first leased row of the index, the oldest task in flight, whose transition then
/// waited on the claim to delete it. When another instance's claim holds every task
/// read, the reads run again locking, skipping its rows, so that instances claim side by
/// side under a backlog.
pub(crate) async fn claim_due<D: TaskQueue>(
    store: &D,
    owner: &str,
    limit: i64,
    lease: Duration,
    ahead: f64,
    lowest_priority: u8,
) -> Result<Vec<ClaimedRows>, StoreError> {
    let mut tx = store.begin(Lane::Timekeeping).await?;
    let look = DueLook {
        limit: limit.max(0),
        ahead: (ahead * 1e6) as i64,
        lowest_priority,
        expired: store.expired_lease_look().due(Instant::now()),
        turns: store.fair_turns(),
    };
    let mut due = look.read(&mut tx, false).await?;
    if let Some((candidates, _)) = &mut due {
        let held = look.lock(&mut tx, candidates).await?;
        if held.is_empty() && !candidates.is_empty() {
            due = look.read(&mut tx, true).await?;
        } else {
            *candidates = held;
        }
    }
    let Some((tasks, now)) = due.filter(|(tasks, _)| !tasks.is_empty()) else {
        tx.commit().await?;
        return Ok(Vec::new());
    };
    lease_locked(tx, tasks, now, owner, lease).await
}

/// Leases `tasks`, locked by `tx` and read at the database's `now`, to `owner` for
/// `lease`, reads the state tasks' rows along and commits: the claimed tasks in running
/// order.
pub(super) async fn lease_locked<T: Transaction + SqlConn>(
    mut tx: T,
    mut tasks: Vec<Task>,
    now: DateTime<Utc>,
    owner: &str,
    lease: Duration,
) -> Result<Vec<ClaimedRows>, StoreError> {
    let kind = T::KIND;
    let mut params = lease_params(owner, now, lease.as_micros() as i64);
    params.extend(tasks.iter().map(|task| Param::from(task.id)));
    let ids = in_list(&mut params, tasks.len());
    let set = take_lease(kind);
    tx.execute(
        &format!(
            "UPDATE {} SET {set} WHERE id IN ({ids})",
            tasks_by_ids(kind)
        ),
        &params,
    )
    .await?;
    let mut along = rows_along(&mut tx, &tasks).await?;
    tx.commit().await?;
    for task in &mut tasks {
        task.first_attempt_at.get_or_insert(now);
    }
    let mut claimed: Vec<ClaimedRows> = tasks
        .into_iter()
        .map(|task| {
            let rows = along.remove(&task.id);
            (task, rows)
        })
        .collect();
    order_claimed(&mut claimed);
    Ok(claimed)
}

/// What one claim looks for: up to `limit` tasks due within `ahead` microseconds, and
/// leases run out when `expired`; `turns` shares a priority between fairness keys.
struct DueLook<'a> {
    limit: i64,
    ahead: i64,
    /// Unleased tasks of a priority past it are left (timers and expired leases not).
    lowest_priority: u8,
    expired: bool,
    turns: &'a FairTurns,
}

impl DueLook<'_> {
    /// The tasks due, in the order they are claimed, with the database's now; `None`
    /// when none is. With `lock`, each locked, skipping those locked already.
    async fn read<C: SqlConn>(
        &self,
        tx: &mut C,
        lock: bool,
    ) -> Result<Option<(Vec<Task>, DateTime<Utc>)>, StoreError> {
        let kind = C::KIND;
        let (limit, ahead) = (self.limit, self.ahead);
        let rows = tx
            .query(
                due_tasks(kind, lock),
                &due_params(ahead, limit, self.lowest_priority),
            )
            .await?;
        // Each task with the database's now and its part: timers' first, then by priority.
        let mut read = read_claimable::<C>(&rows, true)?;
        let keyed = read
            .iter()
            .filter(|(_, _, part)| *part > KEYED_PROBE)
            .map(|(_, _, part)| part - KEYED_PROBE)
            .min();
        self.turns.set_keyed_waiting(keyed.is_some());
        let probe_now = read.first().map(|(_, now, _)| *now);
        read.retain(|(_, _, part)| *part < KEYED_PROBE);
        // The probe names the first priority with keyed tasks: past the lowest claimed,
        // none is claimed.
        let keyed_claimed = keyed.filter(|p| *p <= i32::from(self.lowest_priority));
        if let (Some(priority), Some(now)) = (keyed_claimed, probe_now) {
            // The priority's keyless tasks become one key among those waiting.
            let keyless = read
                .iter()
                .filter(|(_, _, part)| *part == priority)
                .map(|(task, ..)| task.clone())
                .collect();
            read.retain(|(_, _, part)| *part != priority);
            let shared = share_priority(
                tx,
                self.turns,
                u8::try_from(priority).expect("a priority"),
                keyless,
                limit,
                ahead,
                lock,
            )
            .await?;
            read.extend(shared.into_iter().map(|task| (task, now, priority)));
        }
        // Stable: the shared priority's tasks keep the order of their turns.
        read.sort_by_key(|(_, _, part)| *part);
        if self.expired {
            let now = db_now(kind);
            let table = tasks_through(kind, "xdb_sys_tasks_by_lease_expiry");
            let expired = tx
                .query(
                    &format!(
                        "SELECT {TASK_COLUMNS}, {now} AS db_now FROM {table} \
                         WHERE lease_expires_at < {now} \
                         ORDER BY lease_expires_at LIMIT ?{}",
                        locking(lock)
                    ),
                    &[limit.into()],
                )
                .await?;
            read.extend(read_claimable::<C>(&expired, false)?);
        }
        let Some(&(_, now, _)) = read.first() else {
            return Ok(None);
        };
        let mut tasks: Vec<Task> = read.into_iter().map(|(task, ..)| task).collect();
        // The timers read first come again among the unleased tasks. Tasks due now go
        // ahead of those read ahead (stable: timers still first among each).
        let mut seen = HashSet::new();
        tasks.retain(|task| seen.insert(task.id));
        tasks.sort_by_key(|task| task.fire_at > now);
        tasks.truncate(limit as usize);
        Ok(Some((tasks, now)))
    }

    /// Of `candidates`, read unlocked, those still claimable, locked by their key (which
    /// locks no other row), as they are now, in the same order; those locked by another
    /// claim are skipped.
    async fn lock<C: SqlConn>(
        &self,
        tx: &mut C,
        candidates: &[Task],
    ) -> Result<Vec<Task>, StoreError> {
        lock_still_claimable(tx, candidates, self.ahead).await
    }
}

/// Of `candidates`, read unlocked, those still claimable within `ahead` microseconds,
/// locked by their key (which locks no other row), as they are now, in the same order;
/// those locked by another claim are skipped.
pub(super) async fn lock_still_claimable<C: SqlConn>(
    tx: &mut C,
    candidates: &[Task],
    ahead: i64,
) -> Result<Vec<Task>, StoreError> {
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    let mut params = vec![Param::from(ahead)];
    params.extend(candidates.iter().map(|task| Param::from(task.id)));
    let ids = in_list(&mut params, candidates.len());
    let sql = still_claimable(C::KIND, &ids);
    let rows = tx.query(&sql, &params).await?;
    let mut held = HashMap::with_capacity(rows.len());
    for row in &rows {
        let task = read_task(&mut C::columns(row, 0))?;
        held.insert(task.id, task);
    }
    Ok(candidates
        .iter()
        .filter_map(|task| held.remove(&task.id))
        .collect())
}

/// The process and state rows of the state tasks among `tasks`, by task id; a task
/// whose execution is gone is left out, one whose state is gone has none.
async fn rows_along<C: SqlConn>(
    tx: &mut C,
    tasks: &[Task],
) -> Result<HashMap<i64, (ProcessExecution, Option<StateExecution>)>, StoreError> {
    let state_tasks: Vec<i64> = tasks
        .iter()
        .filter(|task| matches!(task.task_type, TaskType::Execute | TaskType::WaitUntil))
        .map(|task| task.id)
        .collect();
    if state_tasks.is_empty() {
        return Ok(HashMap::new());
    }
    let mut params: Vec<Param> = state_tasks.iter().map(|&id| id.into()).collect();
    let ids = in_list(&mut params, state_tasks.len());
    let sql = format!(
        "SELECT {process_columns}, {state_columns}, xdb_sys_tasks.id \
         FROM {tasks} \
         JOIN xdb_sys_process_executions p ON p.id = xdb_sys_tasks.process_execution_id \
         LEFT JOIN xdb_sys_async_state_executions s \
           ON s.process_execution_id = xdb_sys_tasks.process_execution_id \
           AND s.state_id = xdb_sys_tasks.state_id \
           AND s.state_execution_number = xdb_sys_tasks.state_execution_number \
         WHERE xdb_sys_tasks.id IN ({ids})",
        process_columns = qualified(PROCESS_COLUMNS, "p"),
        state_columns = qualified(STATE_COLUMNS, "s"),
        tasks = tasks_by_ids(C::KIND),
    );
    let rows = tx.query(&sql, &params).await?;
    let mut along = HashMap::with_capacity(rows.len());
    for row in &rows {
        let task_id = C::columns(row, PROCESS_COLUMN_COUNT + STATE_COLUMN_COUNT).bigint()?;
        along.insert(task_id, process_and_state_of::<C>(row)?);
    }
    Ok(along)
}

/// Claims tasks `task_ids` for `owner` (see [`crate::TaskSource::claim_tasks`]) in one
/// transaction: reads them locked and decides in Rust, so tasks not due yet cost one
/// statement, then leases the claimable ones with one update.
pub(crate) async fn claim_by_ids<D: TaskQueue>(
    store: &D,
    task_ids: &[i64],
    owner: &str,
    lease: Duration,
) -> Result<Vec<TaskClaim>, StoreError> {
    if task_ids.is_empty() {
        return Ok(Vec::new());
    }
    let kind = <D::Tx as SqlConn>::KIND;
    let mut tx = store.begin(Lane::Main).await?;
    let mut params: Vec<Param> = task_ids.iter().map(|id| (*id).into()).collect();
    let ids = in_list(&mut params, task_ids.len());
    // SKIP LOCKED: a locked row is being completed, rescheduled or claimed right now; it
    // is then reported as leased for a moment, and looked at again after that.
    let rows = tx
        .query(
            &format!(
                "SELECT {TASK_COLUMNS}, lease_expires_at, {} \
                 FROM xdb_sys_tasks WHERE id IN ({ids}) FOR UPDATE SKIP LOCKED",
                db_now(kind)
            ),
            &params,
        )
        .await?;
    let mut waits = HashMap::new();
    let mut claimable = HashMap::new();
    let mut read_at = None;
    for row in &rows {
        let mut columns = D::Tx::columns(row, 0);
        let task = read_task(&mut columns)?;
        let (lease_expires_at, now) = (columns.optional_time()?, columns.time()?);
        match claim_wait(task.fire_at, lease_expires_at, now) {
            Some(wait) => {
                waits.insert(task.id, wait);
            }
            None => {
                read_at = Some(now);
                claimable.insert(task.id, task);
            }
        }
    }
    let unread: HashSet<i64> = task_ids
        .iter()
        .copied()
        .filter(|id| !waits.contains_key(id) && !claimable.contains_key(id))
        .collect();
    if !unread.is_empty() {
        // Locked by someone else (look again shortly), or gone.
        let mut params: Vec<Param> = unread.iter().map(|id| (*id).into()).collect();
        let ids = in_list(&mut params, unread.len());
        let exist = tx
            .query(
                &format!("SELECT id FROM xdb_sys_tasks WHERE id IN ({ids})"),
                &params,
            )
            .await?;
        for row in &exist {
            waits.insert(
                D::Tx::columns(row, 0).bigint()?,
                TaskClaim::from_wait(0.0, None),
            );
        }
    }
    if let Some(now) = read_at {
        let micros = i64::try_from(lease.as_micros()).unwrap_or(i64::MAX);
        let mut params = lease_params(owner, now, micros);
        params.extend(claimable.keys().map(|id| Param::from(*id)));
        let ids = in_list(&mut params, claimable.len());
        let set = take_lease(kind);
        tx.execute(
            &format!("UPDATE xdb_sys_tasks SET {set} WHERE id IN ({ids})"),
            &params,
        )
        .await?;
        for task in claimable.values_mut() {
            task.first_attempt_at.get_or_insert(now);
        }
    }
    tx.commit().await?;
    Ok(answers_in_order(task_ids, claimable, &waits, lease))
}

/// Frees the leases of async instances other than `me` silent for longer than
/// `timeout` (see [`crate::TaskSource::release_dead_leases`]), in one transaction on the
/// timekeeping lane, and removes each such instance's registration once it holds no
/// lease, so a task skipped now is never left behind an instance nobody looks at any
/// more.
pub(crate) async fn release_dead<D: TaskQueue>(
    store: &D,
    me: &str,
    timeout: Duration,
) -> Result<ReleasedLeases, StoreError> {
    let kind = <D::Tx as SqlConn>::KIND;
    let mut tx = store.begin(Lane::Timekeeping).await?;
    let micros = i64::try_from(timeout.as_micros()).unwrap_or(i64::MAX);
    let silent = silent(kind);
    // PostgreSQL reads the registry in key order so that its primary key serves the scan
    // (see `RELEASE_DEAD` in `postgres/task_queue.rs`).
    let order = kind.pick(" ORDER BY instance_id", "");
    let dead = tx
        .query(
            &format!("SELECT instance_id FROM xdb_sys_service_instances WHERE {silent}{order}"),
            &[me.into(), micros.into()],
        )
        .await?
        .iter()
        .map(|row| D::Tx::columns(row, 0).text())
        .collect::<Result<Vec<String>, StoreError>>()?;
    if dead.is_empty() {
        tx.commit().await?;
        return Ok(ReleasedLeases::default());
    }
    // SKIP LOCKED: a locked task is being completed (its instance was slow, not dead) or
    // claimed, and one skipped now is freed by the next call.
    let mut owners: Vec<Param> = dead.iter().map(|id| id.as_str().into()).collect();
    let owner_list = in_list(&mut owners, dead.len());
    let freed = update_unlocked(
        &mut tx,
        "lease_owner = NULL, lease_expires_at = NULL",
        Vec::new(),
        "xdb_sys_tasks",
        &format!("lease_owner IN ({owner_list})"),
        owners,
        ", process_execution_id",
    )
    .await?;
    let tasks = freed
        .iter()
        .map(|row| {
            let mut columns = D::Tx::columns(row, 0);
            Ok((columns.bigint()?, columns.uuid()?))
        })
        .collect::<Result<_, StoreError>>()?;
    // The heartbeat is checked again, as one may have landed meanwhile.
    let mut removed = Vec::new();
    for instance in dead {
        let deleted = tx
            .execute(
                &format!(
                    "DELETE FROM xdb_sys_service_instances WHERE instance_id = ? AND {silent} \
                     AND NOT EXISTS (SELECT 1 FROM xdb_sys_tasks WHERE lease_owner = ?)"
                ),
                &[
                    instance.as_str().into(),
                    me.into(),
                    micros.into(),
                    instance.as_str().into(),
                ],
            )
            .await?;
        if deleted > 0 {
            removed.push(instance);
        }
    }
    tx.commit().await?;
    Ok(ReleasedLeases { tasks, removed })
}

/// The tasks of `rows` (their [`TASK_COLUMNS`], then the database's now, then when
/// `parted` the part of the statement that read them), each with its now and part
/// (after the others' when not `parted`).
pub(super) fn read_claimable<C: SqlConn>(
    rows: &[C::Row],
    parted: bool,
) -> Result<Vec<(Task, DateTime<Utc>, i32)>, StoreError> {
    rows.iter()
        .map(|row| {
            let mut columns = C::columns(row, 0);
            let task = read_task(&mut columns)?;
            let now = columns.time()?;
            let part = if parted { columns.int()? } else { i32::MAX };
            Ok((task, now, part))
        })
        .collect()
}

#[cfg(test)]
#[path = "leases_tests.rs"]
mod tests;
