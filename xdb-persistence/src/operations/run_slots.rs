//! Running-execution limits (`maxRunningExecutions`): a start of a limited type takes a
//! slot of its concurrency key or waits, `PENDING`, in start order; the async service
//! admits waiting executions as slots free.
//!
//! A slot is a running execution whose `xdb_sys_run_slots` row is admitted: counting
//! them joins the execution's status, so closing an execution frees its slot in the
//! transaction that closes it, and nothing an instance holds can leak one. Every start
//! and admission of a key first locks the key's row in `xdb_sys_run_slot_keys`, so the
//! count and the taking are one step; the row goes once no execution of the key holds or
//! waits for a slot. A held execution is paused with
//! `pendingOnKey` set and its first tasks set aside, as an operator's pause would;
//! admitting it resumes it. The statements are the same in both dialects.

use chrono::{DateTime, Utc};
use uuid::Uuid;
use xdb_engine::{HistoryEntry, ProcessExecution, TransitionPlan};
use xdb_protocol::{ControlDetails, HistoryEventType, PauseInfo};

use crate::columns::ColumnReader;
use crate::conflict_retry::retrying_conflicts;
use crate::controls;
use crate::run_limits::read_limits;
use crate::sql::{count, Param, SqlConn};
use crate::sql_tables::in_list::in_list;
use crate::tables::{Announce, Dialect, Finish, Lane, ParkReason, ProcessRows, Transaction};
use crate::StoreError;

/// The identity admissions are recorded under in history.
pub(crate) const ADMITTED_BY: &str = "maxRunningExecutions";

/// Keys with waiting executions looked at in one round of [`admit_pending`].
const KEYS_PER_ROUND: i64 = 100;

/// Rows of closed executions [`forget_closed`] sets apart in one statement.
const FORGOTTEN_PER_BATCH: i64 = 500;
/// Statements of [`forget_closed`] in one round: up to 5,000 rows, 500 a second at its
/// pace of a round every 10 s.
const FORGOTTEN_BATCHES: usize = 10;

/// Times [`lock_key`] creates a key's row that [`forget_closed`] deleted meanwhile.
const LOCK_KEY_ATTEMPTS: usize = 5;

/// Locks the key's row, creating it first if need be. The row may go between the two
/// statements (its key held no slot, see [`forget_idle_keys`]): then it is created again.
async fn lock_key<C: SqlConn>(
    conn: &mut C,
    process_type: &str,
    key: &str,
) -> Result<(), StoreError> {
    let insert = C::KIND.pick(
        "INSERT INTO xdb_sys_run_slot_keys (process_type, slot_key) VALUES (?, ?) \
         ON CONFLICT (process_type, slot_key) DO NOTHING",
        "INSERT IGNORE INTO xdb_sys_run_slot_keys (process_type, slot_key) VALUES (?, ?)",
    );
    for _ in 0..LOCK_KEY_ATTEMPTS {
        conn.execute(insert, &[process_type.into(), key.into()])
            .await?;
        let locked = conn
            .query(
                "SELECT slot_key FROM xdb_sys_run_slot_keys \
                 WHERE process_type = ? AND slot_key = ? FOR UPDATE",
                &[process_type.into(), key.into()],
            )
            .await?;
        if !locked.is_empty() {
            return Ok(());
        }
    }
    Err(StoreError::Database(format!(
        "the row of concurrency key '{key}' of {process_type} was deleted {LOCK_KEY_ATTEMPTS} \
         times while being locked"
    )))
}

/// The key's running executions with `admitted` as given: 1 the slots taken, 0 the
/// executions waiting for one.
async fn running(
    conn: &mut impl SqlConn,
    process_type: &str,
    key: &str,
    admitted: i32,
) -> Result<i64, StoreError> {
    count(
        conn,
        "SELECT COUNT(*) FROM xdb_sys_run_slots s \
         JOIN xdb_sys_process_executions p ON p.id = s.process_execution_id \
         WHERE s.process_type = ? AND s.slot_key = ? AND s.admitted = ? \
           AND p.status = 'RUNNING'",
        &[process_type.into(), key.into(), admitted.into()],
    )
    .await
}

/// The pause that holds an execution waiting for a slot of `key`.
fn pending_pause(key: &str, limit: u32, now: DateTime<Utc>) -> PauseInfo {
    let shown = if key.is_empty() { "no key" } else { key };
    PauseInfo {
        since_timestamp_ms: now.timestamp_millis(),
        reason: Some(format!(
            "PENDING: waiting for a running slot ({shown}: at most {limit} running at once)"
        )),
        identity: Some(ADMITTED_BY.into()),
        pending_on_key: Some(key.to_string()),
    }
}

/// In a start's transaction, after its writes: takes a slot of the execution's key for
/// it, or holds it (`PENDING`) behind those already waiting. Returns whether it runs.
pub(crate) async fn take_or_queue<T: Transaction>(
    tx: &mut T,
    execution: &ProcessExecution,
    key: &str,
    limit: u32,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let process_type = execution.process_type.as_str();
    lock_key(tx, process_type, key).await?;
    let taken = running(tx, process_type, key, 1).await?;
    // First in, first out: a start never passes one already waiting.
    let runs = taken < i64::from(limit) && running(tx, process_type, key, 0).await? == 0;
    tx.execute(
        "INSERT INTO xdb_sys_run_slots \
           (process_execution_id, process_type, slot_key, admitted, queued_at) \
         VALUES (?, ?, ?, ?, ?)",
        &[
            execution.id.into(),
            process_type.into(),
            key.into(),
            i32::from(runs).into(),
            now.into(),
        ],
    )
    .await?;
    if !runs {
        tx.set_paused(execution.id, Some(&pending_pause(key, limit, now)))
            .await?;
        let tasks = tx.tasks_of(execution.id, true).await?;
        for view in controls::to_hold(&tasks) {
            tx.park(view.task.id, None, ParkReason::Paused, None, now)
                .await?;
        }
    }
    Ok(runs)
}

/// The key the execution was counted under, if its type was limited when it started.
pub(crate) async fn counted_key<C: SqlConn>(
    conn: &mut C,
    execution: Uuid,
) -> Result<Option<String>, StoreError> {
    let rows = conn
        .query(
            "SELECT slot_key FROM xdb_sys_run_slots WHERE process_execution_id = ?",
            &[execution.into()],
        )
        .await?;
    rows.first()
        .map(|row| C::columns(row, 0).text())
        .transpose()
}

/// A (type, key) with executions waiting for a slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WaitingKey {
    pub process_type: String,
    pub key: String,
}

/// Admits waiting executions where slots are free, oldest first, each in a
/// transaction of its key, under each type's limit as read at the start of the round (a
/// type no longer limited admits every waiting one). The limits are read afresh, not
/// taken from the store's cache: an admission on a limit this instance has not yet seen
/// set (the API that set it is another process) would run every waiting execution.
/// Returns how many were admitted.
pub(crate) async fn admit_pending<D: Dialect>(store: &D) -> Result<usize, StoreError> {
    let keys = waiting_keys(store).await?;
    if keys.is_empty() {
        return Ok(0);
    }
    let limits = read_limits(store).await?.run_limits;
    let mut admitted = 0;
    for waiting in keys {
        let limit = limits.get(&waiting.process_type).map(|limit| limit.max);
        admitted += retrying_conflicts(|| admit_key(store, &waiting, limit)).await?;
    }
    Ok(admitted)
}

/// Sets apart (`admitted` = 2) the rows of closed executions, up to
/// [`FORGOTTEN_PER_BATCH`] at a time while there are more, at most
/// [`FORGOTTEN_BATCHES`] times: counting a key's slots then reads no row of an execution
/// that closed (a key with executions waiting does the same for its own rows on each
/// admission). The rows stay, as the record of the key each execution was counted
/// under, which a reset of it takes again. Returns how many it set apart.
pub(crate) async fn forget_closed<D: Dialect>(store: &D) -> Result<usize, StoreError> {
    let mut forgotten = 0;
    for _ in 0..FORGOTTEN_BATCHES {
        let closed = forget_closed_batch(store).await?;
        forgotten += closed;
        if closed < FORGOTTEN_PER_BATCH as usize {
            break;
        }
    }
    Ok(forgotten)
}

async fn forget_closed_batch<D: Dialect>(store: &D) -> Result<usize, StoreError> {
    let mut session = store.session(Lane::Main).await?;
    let rows = session
        .query(
            "SELECT s.process_execution_id, s.process_type, s.slot_key \
             FROM xdb_sys_run_slots s \
             JOIN xdb_sys_process_executions p ON p.id = s.process_execution_id \
             WHERE s.admitted IN (0, 1) AND p.status <> 'RUNNING' LIMIT ?",
            &[FORGOTTEN_PER_BATCH.into()],
        )
        .await?;
    let mut ids: Vec<Param<'_>> = Vec::with_capacity(rows.len());
    let mut keys = std::collections::BTreeSet::new();
    for row in &rows {
        let mut columns = D::Session::columns(row, 0);
        ids.push(columns.uuid()?.into());
        keys.insert((columns.text()?, columns.text()?));
    }
    let closed = ids.len();
    if closed == 0 {
        return Ok(0);
    }
    let placeholders = in_list(&mut ids, closed);
    // A closed execution never runs again: its row may change outside any key's lock.
    session
        .execute(
            &format!(
                "UPDATE xdb_sys_run_slots SET admitted = 2 \
                 WHERE process_execution_id IN ({placeholders})"
            ),
            &ids,
        )
        .await?;
    forget_idle_keys(&mut session, &keys).await?;
    Ok(closed)
}

/// Deletes the rows of `keys` (type, key) where no execution holds or waits for a slot
/// any more, so that keys used once (a customer id, say) leave no row behind. A key's
/// row is only the lock of its starts and admissions, which [`lock_key`] creates again;
/// its counts are the slots' rows.
async fn forget_idle_keys<C: SqlConn>(
    conn: &mut C,
    keys: &std::collections::BTreeSet<(String, String)>,
) -> Result<(), StoreError> {
    if keys.is_empty() {
        return Ok(());
    }
    let pairs = vec!["(?, ?)"; keys.len()].join(", ");
    let params: Vec<Param<'_>> = keys
        .iter()
        .flat_map(|(process_type, key)| [process_type.as_str().into(), key.as_str().into()])
        .collect();
    conn.execute(
        &format!(
            "DELETE FROM xdb_sys_run_slot_keys \
             WHERE (process_type, slot_key) IN ({pairs}) \
               AND NOT EXISTS (SELECT 1 FROM xdb_sys_run_slots s \
                 WHERE s.process_type = xdb_sys_run_slot_keys.process_type \
                   AND s.slot_key = xdb_sys_run_slot_keys.slot_key AND s.admitted IN (0, 1))"
        ),
        &params,
    )
    .await?;
    Ok(())
}

async fn waiting_keys<D: Dialect>(store: &D) -> Result<Vec<WaitingKey>, StoreError> {
    let mut session = store.session(Lane::Main).await?;
    let rows = session
        .query(
            "SELECT DISTINCT process_type, slot_key FROM xdb_sys_run_slots \
             WHERE admitted = 0 ORDER BY process_type, slot_key LIMIT ?",
            &[KEYS_PER_ROUND.into()],
        )
        .await?;
    rows.iter()
        .map(|row| {
            let mut columns = D::Session::columns(row, 0);
            Ok(WaitingKey {
                process_type: columns.text()?,
                key: columns.text()?,
            })
        })
        .collect()
}

async fn admit_key<D: Dialect>(
    store: &D,
    waiting: &WaitingKey,
    limit: Option<u32>,
) -> Result<usize, StoreError> {
    let (process_type, key) = (waiting.process_type.as_str(), waiting.key.as_str());
    let mut tx = store.begin(Lane::Main).await?;
    lock_key(&mut tx, process_type, key).await?;
    // Rows of closed executions, admitted or not, hold nothing: set them apart.
    tx.execute(
        "UPDATE xdb_sys_run_slots SET admitted = 2 \
         WHERE process_type = ? AND slot_key = ? AND admitted IN (0, 1) \
           AND NOT EXISTS (SELECT 1 FROM xdb_sys_process_executions p \
             WHERE p.id = xdb_sys_run_slots.process_execution_id AND p.status = 'RUNNING')",
        &[process_type.into(), key.into()],
    )
    .await?;
    let free = match limit {
        Some(limit) => (i64::from(limit) - running(&mut tx, process_type, key, 1).await?).max(0),
        None => i64::MAX,
    };
    if free == 0 {
        tx.commit().await?;
        return Ok(0);
    }
    let rows = tx
        .query(
            "SELECT process_execution_id FROM xdb_sys_run_slots \
             WHERE process_type = ? AND slot_key = ? AND admitted = 0 \
             ORDER BY queued_at, process_execution_id LIMIT ?",
            &[process_type.into(), key.into(), free.min(1_000).into()],
        )
        .await?;
    let ids = rows
        .iter()
        .map(|row| D::Tx::columns(row, 0).uuid())
        .collect::<Result<Vec<Uuid>, _>>()?;
    let now = store.database_clock().now();
    for id in &ids {
        let process = tx.lock_process(*id).await?;
        tx.execute(
            "UPDATE xdb_sys_run_slots SET admitted = 1 WHERE process_execution_id = ?",
            &[(*id).into()],
        )
        .await?;
        resume(&mut tx, &process, now).await?;
    }
    tx.commit().await?;
    Ok(ids.len())
}

/// Lets an admitted execution run: its pause lifted and its tasks put back, recorded
/// in its history as a resume by the limit.
async fn resume<T: Transaction>(
    tx: &mut T,
    process: &ProcessExecution,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let held = process.paused.as_ref().map(|p| p.pending_on_key.is_some());
    if held != Some(true) {
        return Ok(());
    }
    tx.set_paused(process.id, None).await?;
    let tasks = tx.tasks_of(process.id, true).await?;
    let released = controls::to_release(&tasks);
    for view in &released {
        tx.unpark(view.task.id, None).await?;
    }
    let details = ControlDetails {
        reason: Some("a running slot of its concurrency key freed".into()),
        identity: Some(ADMITTED_BY.into()),
        state_execution_ids: controls::state_ids(&released),
    };
    let plan = TransitionPlan {
        history: vec![HistoryEntry::new(
            HistoryEventType::Resumed.as_str(),
            serde_json::to_value(details).expect("control details serialize"),
        )],
        ..Default::default()
    };
    tx.apply_plan(process, &plan, now, Announce::TasksDue, None, Finish::Later)
        .await?;
    Ok(())
}
