//! The database queue, written once: [`TaskSource`] for every dialect's [`TaskQueue`],
//! with the statements whose logic is the same on every dialect over [`SqlConn`] (the
//! counts behind the gauges, when the next task is due, the renewal and release of
//! one's own leases) and the turning of rows a claim read along into worker calls.
//! The claim of due tasks, the claim of one task by id and the release of dead
//! instances' leases default to their generic forms in [`leases`]; PostgreSQL overrides
//! each with a faster one of its own (one statement that also reads the process and
//! state rows along; a claim by id that asks why not only when it took nothing; one
//! statement with the removal of registrations), deciding why not with
//! [`claim_from_wait`] as the generic claim does with [`claim_wait`]. Wake-ups are
//! LISTEN/NOTIFY on PostgreSQL.

use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;
use xdb_engine::{ProcessExecution, StateExecution, Task};

use super::{leases, named_claim};
use crate::claimed_call::ready_call;
use crate::columns::ColumnReader;
use crate::sql::{Param, SqlConn, SqlKind};
use crate::sql_tables::in_list::in_list;
use crate::sql_tables::task_rows::tasks_by_ids;
use crate::tables::{Answer, Dialect, Lane};
use crate::task_claim::ExpiredLeaseLook;
use crate::{
    Claimed, Listen, NamedClaimed, Notifications, OperatorGauges, ReleasedLeases, StoreError,
    TaskClaim, TaskSource,
};

/// A claimed task with its process and state rows, when the claim read them along.
pub(crate) type ClaimedRows = (Task, Option<(ProcessExecution, Option<StateExecution>)>);

/// What a dialect's task queue supplies where it differs; [`TaskSource`] is written
/// once over it. The claims and the release of dead leases default to the generic
/// forms of [`leases`], which a dialect may override with faster ones of its own.
pub(crate) trait TaskQueue: Dialect<Session: SqlConn, Tx: SqlConn> {
    /// Where [`update_unlocked`] runs: a transaction on MySQL, whose locked read and
    /// update are two statements; a plain connection on PostgreSQL, whose one statement
    /// does both (a transaction would only add COMMIT's round trip).
    type Locking: SqlConn;
    /// A main-pool connection for the queue's upkeep (backlog and operator counts,
    /// renewals and releases of one's leases), taken as the queue always took it:
    /// without MySQL's pool wait bound (`MySqlStore::within_pool_wait`), so these wait
    /// for a connection rather than fail as overloaded.
    fn upkeep(&self) -> impl Answer<Self::Session>;
    /// [`Self::upkeep`]'s connection for [`update_unlocked`].
    fn upkeep_locking(&self) -> impl Answer<Self::Locking>;
    /// Ends what [`Self::upkeep_locking`] began (MySQL commits; nothing on PostgreSQL).
    fn unlock(locking: Self::Locking) -> impl Answer<()>;
    /// When the claim of due tasks looks for leases that ran out.
    fn expired_lease_look(&self) -> &ExpiredLeaseLook;
    /// Where this instance's claims stand in sharing priorities between fairness keys.
    fn fair_turns(&self) -> &crate::fair_turns::FairTurns;
    /// See [`TaskSource::listen`]: `None` where the database cannot push wake-ups.
    fn listen(&self, _what: Listen) -> Option<Notifications> {
        None
    }
    /// See [`TaskSource::lease_due`]: the tasks in running order, each with the rows the
    /// claim read along (`None` where it read none); [`leases::claim_due`] by default.
    fn claim_due(
        &self,
        owner: &str,
        limit: i64,
        lease: Duration,
        ahead: f64,
        lowest_priority: u8,
    ) -> impl Answer<Vec<ClaimedRows>> {
        leases::claim_due(self, owner, limit, lease, ahead, lowest_priority)
    }
    /// See [`TaskSource::claim_tasks`]; [`leases::claim_by_ids`] by default.
    fn claim_by_ids(
        &self,
        task_ids: &[i64],
        owner: &str,
        lease: Duration,
    ) -> impl Answer<Vec<TaskClaim>> {
        leases::claim_by_ids(self, task_ids, owner, lease)
    }
    /// See [`TaskSource::release_dead_leases`]; on the timekeeping lane, as a backlog of
    /// transitions must not delay a takeover; [`leases::release_dead`] by default.
    fn release_dead(&self, me: &str, timeout: Duration) -> impl Answer<ReleasedLeases> {
        leases::release_dead(self, me, timeout)
    }
}

#[async_trait]
impl<D: TaskQueue> TaskSource for D {
    fn listen(&self, what: Listen) -> Option<Notifications> {
        TaskQueue::listen(self, what)
    }

    async fn lease_due(
        &self,
        owner: &str,
        limit: i64,
        lease: Duration,
        ahead: f64,
        lowest_priority: u8,
    ) -> Result<Vec<Claimed>, StoreError> {
        let claimed = self
            .claim_due(owner, limit, lease, ahead, lowest_priority)
            .await?;
        Ok(with_calls(claimed))
    }

    async fn lease_named(
        &self,
        executions: &[Uuid],
        owner: &str,
        limit: usize,
        lease: Duration,
        ahead: Duration,
        lowest_priority: u8,
    ) -> Result<NamedClaimed, StoreError> {
        let named = named_claim::claim_named(
            self,
            executions,
            owner,
            limit,
            lease,
            ahead,
            lowest_priority,
        )
        .await?;
        Ok(NamedClaimed {
            claimed: with_calls(named.claimed),
            complete: named.complete,
        })
    }

    async fn count_backlog(&self, cap: i64) -> Result<i64, StoreError> {
        let mut session = self.upkeep().await?;
        let rows = session
            .query(backlog(D::Session::KIND), &[cap.into()])
            .await?;
        let count = D::Session::columns(only_row(&rows)?, 0).bigint();
        count
    }

    async fn operator_gauges(
        &self,
        attempts_threshold: i32,
        cap: i64,
    ) -> Result<OperatorGauges, StoreError> {
        let mut session = self.upkeep().await?;
        let params = [
            cap.into(),
            cap.into(),
            cap.into(),
            attempts_threshold.into(),
            cap.into(),
        ];
        let rows = session
            .query(&operator_counts(D::Session::KIND), &params)
            .await?;
        let mut counts = D::Session::columns(only_row(&rows)?, 0);
        Ok(OperatorGauges::from_counts((
            counts.bigint()?,
            counts.bigint()?,
            counts.bigint()?,
            counts.bigint()?,
        )))
    }

    async fn claim_tasks(
        &self,
        task_ids: &[i64],
        owner: &str,
        lease: Duration,
    ) -> Result<Vec<TaskClaim>, StoreError> {
        self.claim_by_ids(task_ids, owner, lease).await
    }

    async fn next_task_due_in(&self) -> Result<Option<Duration>, StoreError> {
        // The timekeeping lane, as the answer times the next claim.
        let mut session = self.session(Lane::Timekeeping).await?;
        let rows = session.query(next_due(D::Session::KIND), &[]).await?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let micros = D::Session::columns(row, 0).bigint()?;
        Ok(Some(Duration::from_micros(micros.max(0) as u64)))
    }

    async fn renew_leases(
        &self,
        owner: &str,
        task_ids: &[i64],
        lease: Duration,
    ) -> Result<u64, StoreError> {
        if task_ids.is_empty() {
            return Ok(0);
        }
        let micros = i64::try_from(lease.as_micros()).unwrap_or(i64::MAX);
        let mut conn = self.upkeep_locking().await?;
        let mut renewed = 0;
        for chunk in task_ids.chunks(IDS_PER_RENEWAL) {
            renewed += renew(&mut conn, owner, chunk, micros).await?;
        }
        D::unlock(conn).await?;
        Ok(renewed)
    }

    async fn release_leases(&self, owner: &str) -> Result<u64, StoreError> {
        let mut conn = self.upkeep_locking().await?;
        let released = update_unlocked(
            &mut conn,
            "lease_owner = NULL, lease_expires_at = NULL",
            Vec::new(),
            "xdb_sys_tasks",
            "lease_owner = ?",
            vec![owner.into()],
            "",
        )
        .await?;
        D::unlock(conn).await?;
        Ok(released.len() as u64)
    }

    async fn release_dead_leases(
        &self,
        me: &str,
        timeout: Duration,
    ) -> Result<ReleasedLeases, StoreError> {
        self.release_dead(me, timeout).await
    }
}

/// Renews `owner`'s leases of `ids` (at most [`IDS_PER_RENEWAL`]) for `micros` from now;
/// how many it renewed. The tasks are found by their key: found by their owner (the
/// index MariaDB otherwise picks), the locked read would hold every task of the
/// instance, listed or not, until the renewal commits.
/// `claimed` with each state task's worker call, where the rows read along make one.
fn with_calls(claimed: Vec<ClaimedRows>) -> Vec<Claimed> {
    claimed
        .into_iter()
        .map(|(task, rows)| {
            let priority = rows.as_ref().map(|(process, _)| process.priority);
            let call = rows.and_then(|(process, state)| ready_call(&task, process, state?));
            Claimed {
                task,
                call,
                priority,
            }
        })
        .collect()
}

pub(super) async fn renew<C: SqlConn>(
    conn: &mut C,
    owner: &str,
    ids: &[i64],
    micros: i64,
) -> Result<u64, StoreError> {
    let mut filter_params: Vec<Param> = ids.iter().map(|&id| id.into()).collect();
    let list = in_list(&mut filter_params, ids.len());
    filter_params.push(owner.into());
    let rows = update_unlocked(
        conn,
        lease_from_now(C::KIND),
        vec![micros.into()],
        tasks_by_ids(C::KIND),
        &format!("id IN ({list}) AND lease_owner = ?"),
        filter_params,
        "",
    )
    .await?;
    Ok(rows.len() as u64)
}

/// Task ids per renewal statement: both databases take at most 65,535 parameters, which
/// the padded id list (see [`in_list`]) of a larger one could pass.
const IDS_PER_RENEWAL: usize = 16_384;

/// Due tasks nobody holds, up to the parameter. `now()`, not `clock_timestamp()`, on
/// PostgreSQL: only a stable bound stops the index scan at the tasks due now instead of
/// walking every waiting timer.
fn backlog(kind: SqlKind) -> &'static str {
    kind.pick(
        "SELECT COUNT(*) FROM (SELECT 1 FROM xdb_sys_tasks \
         WHERE fire_at <= now() AND (lease_expires_at IS NULL OR lease_expires_at < now()) \
         LIMIT ?) due",
        "SELECT COUNT(*) FROM (SELECT 1 FROM xdb_sys_tasks \
         WHERE fire_at <= UTC_TIMESTAMP(6) \
           AND (lease_expires_at IS NULL OR lease_expires_at < UTC_TIMESTAMP(6)) \
         LIMIT ?) due",
    )
}

/// Paused running executions, tasks parked for an operator (refused, non-retryable) and state tasks at or past an
/// attempt, each up to a cap. Parameters: cap, cap, attempt, cap. Paused executions are
/// read from PostgreSQL's partial index of paused ones, and from MySQL's index on the
/// generated `is_paused` (it has no partial indexes); an execution keeps its pause when
/// it closes, hence the status.
fn operator_counts(kind: SqlKind) -> String {
    let paused = kind.pick("paused IS NOT NULL", "is_paused = 1");
    format!(
        "SELECT \
         (SELECT COUNT(*) FROM (SELECT 1 FROM xdb_sys_process_executions p \
            WHERE {paused} AND status = 'RUNNING' AND NOT EXISTS (SELECT 1 \
              FROM xdb_sys_run_slots r WHERE r.process_execution_id = p.id \
                AND r.admitted = 0) LIMIT ?) paused), \
         (SELECT COUNT(*) FROM (SELECT 1 FROM xdb_sys_run_slots r \
            JOIN xdb_sys_process_executions p ON p.id = r.process_execution_id \
            WHERE r.admitted = 0 AND p.status = 'RUNNING' LIMIT ?) pending), \
         (SELECT COUNT(*) FROM (SELECT 1 FROM xdb_sys_parked_tasks \
            WHERE reason <> 'PAUSED' LIMIT ?) refused), \
         (SELECT COUNT(*) FROM (SELECT 1 FROM xdb_sys_tasks \
            WHERE task_type IN ('WAIT_UNTIL', 'EXECUTE') AND attempt >= ? LIMIT ?) failing)"
    )
}

/// Every priority, first claimed to last.
pub(crate) const PRIORITIES: std::ops::RangeInclusive<u8> =
    xdb_protocol::priority::HIGHEST..=xdb_protocol::priority::LOWEST;

/// MySQL's index of unleased tasks by priority and due time (the `lease_owner IS NULL`
/// prefix of one), named as before priorities, since older services name it in their
/// index hints. PostgreSQL's are two partial indexes that each part's literal priority
/// picks (see schema v014).
pub(crate) const UNLEASED_BY_PRIORITY: &str = "xdb_sys_tasks_unleased_by_fire_at";

/// `parts` as one `UNION ALL`, each part keeping its own ORDER BY, LIMIT and locking
/// (PostgreSQL takes those in a part only within a subquery).
pub(crate) fn union_all(kind: SqlKind, parts: impl IntoIterator<Item = String>) -> String {
    parts
        .into_iter()
        .enumerate()
        .map(|(at, part)| {
            kind.pick(
                format!("SELECT * FROM ({part}) part{at}"),
                format!("({part})"),
            )
        })
        .collect::<Vec<_>>()
        .join(" UNION ALL ")
}

/// Microseconds until the first unleased task is due, by the database clock: the first
/// of each priority's (see [`UNLEASED_BY_PRIORITY`]; MySQL orders by the index's leading
/// columns so that it serves the order). Built once for each dialect.
fn next_due(kind: SqlKind) -> &'static str {
    static BUILT: LazyLock<[String; 2]> =
        LazyLock::new(|| [SqlKind::Postgres, SqlKind::MySql].map(build_next_due));
    &BUILT[usize::from(kind == SqlKind::MySql)]
}

fn build_next_due(kind: SqlKind) -> String {
    let keyless = PRIORITIES.map(|priority| {
        format!(
            "SELECT fire_at FROM xdb_sys_tasks WHERE lease_owner IS NULL \
             AND priority = {priority} AND fairness_key = '' ORDER BY fire_at LIMIT 1"
        )
    });
    // Keyed tasks have no index by due time alone: their range is read whole, which only
    // a poll interval longer than the read-ahead asks for (see `needs_next_due`).
    let keyed = format!(
        "SELECT fire_at FROM xdb_sys_tasks WHERE lease_owner IS NULL AND {} \
         AND {} ORDER BY fire_at LIMIT 1",
        kind.pick("TRUE", "priority IN (1, 2, 3, 4, 5)"),
        // One range a priority on MySQL (see `lease_sql::build_due_tasks`).
        kind.pick("fairness_key <> ''", "fairness_key > ''")
    );
    let firsts = union_all(kind, keyless.into_iter().chain(std::iter::once(keyed)));
    let until = kind.pick(
        "CAST(EXTRACT(EPOCH FROM (fire_at - clock_timestamp())) * 1000000 AS BIGINT)",
        "TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), fire_at)",
    );
    format!("SELECT {until} FROM ({firsts}) firsts ORDER BY fire_at LIMIT 1")
}

/// A lease of the parameter's microseconds from now, by the database clock.
pub(crate) fn lease_from_now(kind: SqlKind) -> &'static str {
    kind.pick(
        "lease_expires_at = clock_timestamp() + CAST(? AS BIGINT) * interval '1 microsecond'",
        "lease_expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND",
    )
}

/// Applies `set` (with `set_params`) to the tasks `filter` (with `filter_params`) picks
/// from `tasks` (the task table, with MySQL's index hint where the filter needs one:
/// [`tasks_by_ids`] for a list of ids), skipping those locked; the rows updated, each
/// its `id` and then `returning` (a column list starting with a comma, or empty). The
/// four are statement text, never values. SKIP LOCKED: a task locked right now is being
/// completed or deleted (a stop), so it needs no renewal or release, and waiting on it
/// could deadlock with that transaction, which takes the same execution's task rows in
/// another order.
/// PostgreSQL updates in one statement; MySQL has no `UPDATE … RETURNING` and refuses a
/// subquery on the table it updates, so it reads the rows locked and then updates them
/// by id, in a transaction ([`TaskQueue::Locking`]).
pub(crate) async fn update_unlocked<C: SqlConn>(
    conn: &mut C,
    set: &str,
    set_params: Vec<Param<'_>>,
    tasks: &str,
    filter: &str,
    filter_params: Vec<Param<'_>>,
    returning: &str,
) -> Result<Vec<C::Row>, StoreError> {
    if C::KIND == SqlKind::Postgres {
        let mut params = set_params;
        params.extend(filter_params);
        let sql = format!(
            "UPDATE xdb_sys_tasks SET {set} WHERE id IN (SELECT id FROM {tasks} \
             WHERE {filter} FOR UPDATE SKIP LOCKED) RETURNING id{returning}"
        );
        return conn.query(&sql, &params).await;
    }
    let locked = format!("SELECT id{returning} FROM {tasks} WHERE {filter} FOR UPDATE SKIP LOCKED");
    let rows = conn.query(&locked, &filter_params).await?;
    if rows.is_empty() {
        return Ok(rows);
    }
    let mut params = set_params;
    for row in &rows {
        params.push(C::columns(row, 0).bigint()?.into());
    }
    let ids = in_list(&mut params, rows.len());
    conn.execute(
        &format!(
            "UPDATE {} SET {set} WHERE id IN ({ids})",
            tasks_by_ids(C::KIND)
        ),
        &params,
    )
    .await?;
    Ok(rows)
}

/// Why a task due at `fire_at` and leased until `lease_expires_at` cannot be claimed at
/// `now` (all by the database clock); `None` when nothing stops it.
pub(super) fn claim_wait(
    fire_at: DateTime<Utc>,
    lease_expires_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Option<TaskClaim> {
    TaskClaim::wait(
        seconds(fire_at - now),
        lease_expires_at.map(|at| seconds(at - now)),
    )
}

/// [`TaskClaim::from_wait`] from the same times as [`claim_wait`].
pub(crate) fn claim_from_wait(
    fire_at: DateTime<Utc>,
    lease_expires_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> TaskClaim {
    TaskClaim::from_wait(
        seconds(fire_at - now),
        lease_expires_at.map(|at| seconds(at - now)),
    )
}

fn seconds(delta: chrono::TimeDelta) -> f64 {
    delta.num_microseconds().unwrap_or(i64::MAX) as f64 / 1e6
}

/// The one row of an aggregate without GROUP BY (always there).
fn only_row<R>(rows: &[R]) -> Result<&R, StoreError> {
    rows.first()
        .ok_or_else(|| StoreError::Database("an aggregate returned no row".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeDelta;

    #[test]
    fn a_claim_waits_for_the_due_time_then_for_the_lease() {
        let now = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let (due_later, lease) = (now + TimeDelta::seconds(5), now + TimeDelta::seconds(30));
        let past = now - TimeDelta::milliseconds(1);
        assert_eq!(
            claim_wait(due_later, Some(lease), now),
            Some(TaskClaim::NotDue(Duration::from_secs(5)))
        );
        assert_eq!(
            claim_wait(past, Some(lease), now),
            Some(TaskClaim::Leased(Duration::from_secs(30)))
        );
        assert_eq!(claim_wait(past, Some(past), now), None);
        assert_eq!(claim_wait(now, None, now), None);
        // Nothing taken although nothing stops it: the row was locked; look again soon.
        assert!(matches!(
            claim_from_wait(now, None, now),
            TaskClaim::Leased(wait) if wait < Duration::from_secs(1)
        ));
    }
}
