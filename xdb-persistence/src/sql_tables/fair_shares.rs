//! The reads a claim makes when tasks with fairness keys wait: which keys have tasks
//! due at a priority, in the rotation's order, and each one's oldest. The keys are
//! walked one index probe a key (PostgreSQL: a recursive skip scan; MySQL: a loose index
//! scan of its GROUP BY), so no key's backlog is read whole; which tasks are taken is
//! decided by [`crate::fair_turns`].

use std::sync::LazyLock;

use xdb_engine::Task;

use super::task_queue::{union_all, UNLEASED_BY_PRIORITY};
use crate::columns::{read_task, ColumnReader, TASK_COLUMNS};
use crate::fair_turns::{take_turns, FairTurns, KeyTasks, Start, KEYLESS};
use crate::sql::{Param, SqlConn, SqlKind};
use crate::StoreError;

/// The tasks of `priority` to claim, up to `limit`, shared between the keyless tasks
/// read already (`keyless`, oldest first) and the keys with tasks due within `ahead`
/// microseconds, each key in turn (see [`take_turns`]); records where the rotation
/// stands in `turns`. With `lock`, the keys' tasks are read locked, skipping those
/// locked already.
pub(crate) async fn share_priority<C: SqlConn>(
    tx: &mut C,
    turns: &FairTurns,
    priority: u8,
    keyless: Vec<Task>,
    limit: i64,
    ahead: i64,
    lock: bool,
) -> Result<Vec<Task>, StoreError> {
    let start = Start::after(turns.turn().as_ref(), priority);
    let (from, inclusive) = start.scan_from();
    let mut keys = due_keys(tx, priority, from, inclusive, limit, ahead).await?;
    let first_round = keys.len();
    if (first_round as i64) < limit && start != Start::First {
        // Round again from the first key, up to where this round began.
        for key in due_keys(tx, priority, KEYLESS, false, limit, ahead).await? {
            if keys.contains(&key) {
                break;
            }
            keys.push(key);
        }
    }
    let mut tasks = key_tasks(tx, priority, &keys, limit, ahead, lock).await?;
    // The keyless key is the first in the database's order: where the rotation wraps,
    // unless the rotation starts with it.
    let keyless_at = match &start {
        Start::First => 0,
        Start::Within { key, .. } if key == KEYLESS => 0,
        _ => first_round,
    };
    tasks.insert(
        keyless_at,
        KeyTasks {
            key: KEYLESS.to_string(),
            weight: xdb_protocol::fairness::DEFAULT_WEIGHT,
            tasks: keyless,
        },
    );
    tasks.retain(|key| !key.tasks.is_empty());
    let first_left = match &start {
        Start::Within { key, left } if tasks.first().is_some_and(|k| &k.key == key) => Some(*left),
        _ => None,
    };
    let (taken, turn) = take_turns(tasks, first_left, limit.max(0) as usize, priority);
    if let Some(turn) = turn {
        turns.set_turn(turn);
    }
    Ok(taken)
}

/// Up to `limit` keys (not the keyless one) with tasks of `priority` due within `ahead`
/// microseconds, from `from` on (itself too when `inclusive`), in the database's order.
async fn due_keys<C: SqlConn>(
    tx: &mut C,
    priority: u8,
    from: &str,
    inclusive: bool,
    limit: i64,
    ahead: i64,
) -> Result<Vec<String>, StoreError> {
    let sql = &DUE_KEYS[usize::from(C::KIND == SqlKind::MySql) * 2 + usize::from(inclusive)];
    let priority = i32::from(priority);
    let params: Vec<Param> = match C::KIND {
        SqlKind::Postgres => vec![
            priority.into(),
            from.into(),
            ahead.into(),
            priority.into(),
            ahead.into(),
            limit.into(),
        ],
        SqlKind::MySql => vec![priority.into(), from.into(), ahead.into(), limit.into()],
    };
    tx.query(sql, &params)
        .await?
        .iter()
        .map(|row| C::columns(row, 0).text())
        .collect()
}

/// [`due_keys`]' statements: PostgreSQL's exclusive and inclusive, then MySQL's.
/// PostgreSQL walks the keys by a recursive skip scan, one probe of the keyed tasks'
/// partial index a key (schema v015); MySQL's GROUP BY takes the first of each key
/// from its index (MariaDB: "Using index for group-by", a loose index scan, which it
/// takes only when the GROUP BY names the index's leading columns and the due time is
/// the argument of MIN). A key none of whose tasks is due is walked over.
static DUE_KEYS: LazyLock<[String; 4]> = LazyLock::new(|| {
    let postgres = |op: &str| {
        let due = "fire_at <= now() + CAST(? AS BIGINT) * interval '1 microsecond'";
        format!(
            "WITH RECURSIVE keys(fairness_key) AS ( \
               (SELECT fairness_key FROM xdb_sys_tasks \
                WHERE lease_owner IS NULL AND fairness_key <> '' AND priority = ? \
                  AND fairness_key {op} ? AND {due} \
                ORDER BY fairness_key LIMIT 1) \
               UNION ALL \
               SELECT (SELECT t.fairness_key FROM xdb_sys_tasks t \
                       WHERE t.lease_owner IS NULL AND t.fairness_key <> '' \
                         AND t.priority = ? AND t.fairness_key > k.fairness_key \
                         AND t.{due} \
                       ORDER BY t.fairness_key LIMIT 1) \
               FROM keys k WHERE k.fairness_key IS NOT NULL) \
             SELECT fairness_key FROM keys WHERE fairness_key IS NOT NULL LIMIT ?"
        )
    };
    let mysql = |op: &str| {
        format!(
            "SELECT fairness_key, MIN(fire_at) FROM xdb_sys_tasks \
               FORCE INDEX ({UNLEASED_BY_PRIORITY}) \
             WHERE lease_owner IS NULL AND priority = ? AND fairness_key > '' \
               AND fairness_key {op} ? \
               AND fire_at <= UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND \
             GROUP BY lease_owner, priority, fairness_key ORDER BY fairness_key LIMIT ?"
        )
    };
    [postgres(">"), postgres(">="), mysql(">"), mysql(">=")]
});

/// The oldest tasks due within `ahead` microseconds of each of `keys` at `priority`, up
/// to `limit` a key, with each key's weight (that of its oldest task), in `keys`' order.
async fn key_tasks<C: SqlConn>(
    tx: &mut C,
    priority: u8,
    keys: &[String],
    limit: i64,
    ahead: i64,
    lock: bool,
) -> Result<Vec<KeyTasks>, StoreError> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let kind = C::KIND;
    let (now, table) = match kind {
        SqlKind::Postgres => ("now()", "xdb_sys_tasks".to_string()),
        SqlKind::MySql => (
            "UTC_TIMESTAMP(6)",
            format!("xdb_sys_tasks FORCE INDEX ({UNLEASED_BY_PRIORITY})"),
        ),
    };
    let ahead_sql = kind.pick(
        "CAST(? AS BIGINT) * interval '1 microsecond'",
        "INTERVAL ? MICROSECOND",
    );
    let locking = if lock { " FOR UPDATE SKIP LOCKED" } else { "" };
    let part = format!(
        "SELECT {TASK_COLUMNS}, fairness_key, fairness_weight FROM {table} \
         WHERE lease_owner IS NULL AND priority = {priority} AND fairness_key = ? \
           AND fire_at <= {now} + {ahead_sql} ORDER BY fire_at LIMIT ?{locking}"
    );
    let sql = union_all(kind, std::iter::repeat_n(part, keys.len()));
    let mut params = Vec::with_capacity(keys.len() * 3);
    for key in keys {
        params.extend([Param::from(key.as_str()), ahead.into(), limit.into()]);
    }
    let rows = tx.query(&sql, &params).await?;
    let mut by_key: Vec<KeyTasks> = keys
        .iter()
        .map(|key| KeyTasks {
            key: key.clone(),
            weight: xdb_protocol::fairness::DEFAULT_WEIGHT,
            tasks: Vec::new(),
        })
        .collect();
    for row in &rows {
        let mut columns = C::columns(row, 0);
        let task = read_task(&mut columns)?;
        let key = columns.text()?;
        let weight = columns.int()?;
        let Some(at) = by_key.iter().position(|k| k.key == key) else {
            continue;
        };
        let of_key = &mut by_key[at];
        if of_key.tasks.is_empty() {
            of_key.weight = u32::try_from(weight).unwrap_or(1).max(1);
        }
        of_key.tasks.push(task);
    }
    for key in &mut by_key {
        key.tasks.sort_by_key(|task| (task.fire_at, task.id));
    }
    Ok(by_key)
}

#[cfg(test)]
#[path = "fair_shares_tests.rs"]
mod tests;
