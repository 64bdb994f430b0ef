//! The SQL text of the task queue's leases (see [`super::leases`]): the due tasks'
//! search, the locked read by id, the lease taken and the silent instances, built from
//! the dialect alone, so they are pure and tested apart from any database.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};

use super::task_queue::{union_all, PRIORITIES, UNLEASED_BY_PRIORITY};
use super::task_rows::tasks_by_ids;
use crate::columns::TASK_COLUMNS;
use crate::sql::{Param, SqlKind};

/// The database's time: MySQL's at the statement's start, PostgreSQL's at the
/// transaction's (its first statement in the generic forms). A stable bound, unlike
/// `clock_timestamp()`, lets an index scan stop at the tasks due now.
pub(super) fn db_now(kind: SqlKind) -> &'static str {
    kind.pick("now()", "UTC_TIMESTAMP(6)")
}

/// An interval of the parameter's microseconds.
pub(super) fn micros(kind: SqlKind) -> &'static str {
    kind.pick(
        "CAST(? AS BIGINT) * interval '1 microsecond'",
        "INTERVAL ? MICROSECOND",
    )
}

/// Unleased tasks due within the first parameter's microseconds, up to the second
/// parameter, then again with the next two for each priority: due timers and process
/// timeouts first, then any task of priority 1, then 2, and so on (the timers come again),
/// each part through its own index range (MySQL is told which index, see
/// [`tasks_through`]) so that tasks in flight are never walked, nor a priority's backlog
/// on the way to the next. With `lock`, each part locks its own rows (SKIP LOCKED lets
/// instances claim side by side). Timers go first because the other tasks' fire_at is
/// when they were created: under a backlog they all sort before a timer that just came
/// due. fire_at is compared with the database clock, so a timer never fires early.
/// Columns: [`TASK_COLUMNS`], `db_now`, `part` (0 for timers, else the priority). MariaDB
/// sorts each part's due rows (two ranges of the type index; `IS NULL` is not an
/// equality to its ORDER BY), reading all of them: a form that reads only the rows it
/// returns fired the bench's timers later (ebcb2b0, reverted in 494a0f0). Built once for
/// each dialect and locking: every claim runs it.
pub(super) fn due_tasks(kind: SqlKind, lock: bool) -> &'static str {
    static BUILT: LazyLock<[String; 4]> = LazyLock::new(|| {
        [
            (SqlKind::Postgres, false),
            (SqlKind::Postgres, true),
            (SqlKind::MySql, false),
            (SqlKind::MySql, true),
        ]
        .map(|(kind, lock)| build_due_tasks(kind, lock))
    });
    &BUILT[usize::from(kind == SqlKind::MySql) * 2 + usize::from(lock)]
}

fn build_due_tasks(kind: SqlKind, lock: bool) -> String {
    let (now, ahead) = (db_now(kind), micros(kind));
    let locking = locking(lock);
    let part = |part: u8, index: &str, only: &str, order: &str| {
        let table = tasks_through(kind, index);
        format!(
            "SELECT {TASK_COLUMNS}, {now} AS db_now, {part} AS part FROM {table} \
             WHERE lease_owner IS NULL{only} AND fire_at <= {now} + {ahead} \
             ORDER BY {order} LIMIT ?{locking}"
        )
    };
    let timers = part(
        0,
        "xdb_sys_tasks_unleased_by_type",
        " AND task_type IN ('TIMER', 'PROCESS_TIMEOUT')",
        "fire_at",
    );
    let by_priority = PRIORITIES.map(|priority| {
        part(
            priority,
            UNLEASED_BY_PRIORITY,
            &format!(" AND priority = {priority} AND fairness_key = ''"),
            "fire_at",
        )
    });
    // Whether keyed tasks wait, and the first priority with any: one row at most, its
    // part KEYED_PROBE + that priority. It is not claimed: `share_priority` reads them.
    // PostgreSQL's `<>` matches the keyed tasks' partial index; MySQL's `> ''` (the
    // same rows: '' is the least key) is one index range a priority where `<>` is two,
    // each estimated by the optimizer at every claim (a whole-claim cost measured on
    // MariaDB, see BENCHMARKS.md).
    let keyed = format!(
        "SELECT {TASK_COLUMNS}, {now} AS db_now, {KEYED_PROBE} + priority AS part FROM {} \
         WHERE lease_owner IS NULL AND {} AND {} \
           AND fire_at <= {now} + {ahead} ORDER BY priority, fairness_key, fire_at LIMIT 1",
        tasks_through(kind, UNLEASED_BY_PRIORITY),
        kind.pick("TRUE", "priority IN (1, 2, 3, 4, 5)"),
        kind.pick("fairness_key <> ''", "fairness_key > ''"),
    );
    union_all(
        kind,
        std::iter::once(timers)
            .chain(by_priority)
            .chain(std::iter::once(keyed)),
    )
}

/// The part of [`due_tasks`] that tells whether keyed tasks wait, plus their priority.
pub(super) const KEYED_PROBE: i32 = 10;

/// [`due_tasks`]' parameters: the bound (`ahead` microseconds) and `limit` for the
/// timers' part and for each priority's (0 past `lowest_priority`: its part reads
/// nothing), then the bound for the keyed tasks' probe.
pub(super) fn due_params(ahead: i64, limit: i64, lowest_priority: u8) -> Vec<Param<'static>> {
    let per_priority = PRIORITIES.map(|p| if p <= lowest_priority { limit } else { 0 });
    std::iter::once(limit)
        .chain(per_priority)
        .flat_map(|limit| [ahead, limit])
        .chain(std::iter::once(ahead))
        .map(Param::from)
        .collect()
}

/// The tasks of the id list `ids` still claimable, locked by their key (which locks no
/// other row), skipping those locked already. Parameters: the microseconds ahead of
/// now a task may be due, then the ids. Columns: [`TASK_COLUMNS`].
pub(super) fn still_claimable(kind: SqlKind, ids: &str) -> String {
    let (now, ahead) = (db_now(kind), micros(kind));
    format!(
        "SELECT {TASK_COLUMNS} FROM {} \
         WHERE ((lease_owner IS NULL AND fire_at <= {now} + {ahead}) \
                OR lease_expires_at < {now}) \
         AND id IN ({ids}) FOR UPDATE SKIP LOCKED",
        tasks_by_ids(kind)
    )
}

/// The clause of a locking read that skips rows others hold, when `lock`.
pub(super) fn locking(lock: bool) -> &'static str {
    if lock {
        " FOR UPDATE SKIP LOCKED"
    } else {
        ""
    }
}

/// The task table read through `index` (MySQL is told so): while the table is small,
/// MariaDB scans it whole instead (EXPLAIN: `type: ALL`), and a locking read's scan
/// locks, one after the other, the rows in flight that its condition then leaves out.
pub(super) fn tasks_through(kind: SqlKind, index: &str) -> String {
    kind.pick(
        "xdb_sys_tasks".to_string(),
        format!("xdb_sys_tasks FORCE INDEX ({index})"),
    )
}

/// The lease taken by a claim; parameters: [`lease_params`].
pub(super) fn take_lease(kind: SqlKind) -> String {
    format!(
        "lease_owner = ?, lease_expires_at = {} + {}, \
         first_attempt_at = COALESCE(first_attempt_at, ?)",
        kind.pick("CAST(? AS TIMESTAMPTZ)", "?"),
        micros(kind)
    )
}

/// [`take_lease`]'s parameters: `owner`'s lease of `micros` from `now`, the first
/// attempt's time if none was set.
pub(super) fn lease_params(owner: &str, now: DateTime<Utc>, micros: i64) -> Vec<Param<'_>> {
    vec![owner.into(), now.into(), micros.into(), now.into()]
}

/// Registered async instances other than `?` silent for longer than both `?`
/// microseconds and the timeout they stated, by the database clock (an instance that
/// stated none is never judged).
pub(super) fn silent(kind: SqlKind) -> String {
    let older = kind.pick(
        "now() - GREATEST(CAST(? AS BIGINT), liveness_timeout_ms * CAST(1000 AS BIGINT)) \
         * interval '1 microsecond'",
        "UTC_TIMESTAMP(6) - INTERVAL GREATEST(?, liveness_timeout_ms * 1000) MICROSECOND",
    );
    format!(
        "service = 'ASYNC' AND instance_id <> ? AND liveness_timeout_ms IS NOT NULL \
         AND heartbeat_at < {older}"
    )
}
