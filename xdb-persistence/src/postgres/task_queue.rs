//! The database queue on PostgreSQL: faster forms of leasing due tasks (with their rows,
//! read by the same statement), claiming tasks by id and freeing dead instances'
//! leases than the generic ones of `sql_tables::leases` (which stay tested on it too),
//! and wake-ups by LISTEN/NOTIFY; the rest is written once in `sql_tables::task_queue`.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;
use std::time::Duration;

use super::notifications::CHANNEL_TASKS;
use super::rows::{
    optional_state_at, process_at, qualified, task_at, task_from_row, PROCESS_COLUMNS,
    PROCESS_COLUMN_COUNT, STATE_COLUMNS, STATE_COLUMN_COUNT, TASK_COLUMNS, TASK_COLUMN_COUNT,
};
use super::tables::PgRows;
use super::PostgresStore;
use crate::columns::ColumnReader;
use crate::sql::{Param, SqlConn, SqlKind};
use crate::sql_tables::in_list::in_list;
use crate::sql_tables::task_queue::{
    claim_from_wait, lease_from_now, union_all, update_unlocked, ClaimedRows, TaskQueue, PRIORITIES,
};
use crate::tables::{Dialect, Lane};
use crate::task_claim::answers_in_order;
use crate::{ReleasedLeases, StoreError, TaskClaim};

/// One statement locks and updates (see `task_queue::update_unlocked`): no transaction.
impl TaskQueue for PostgresStore {
    type Locking = PgRows;

    async fn upkeep(&self) -> Result<Self::Session, StoreError> {
        self.session(Lane::Main).await
    }

    async fn upkeep_locking(&self) -> Result<Self::Locking, StoreError> {
        self.session(Lane::Main).await
    }

    async fn unlock(_locking: Self::Locking) -> Result<(), StoreError> {
        Ok(())
    }

    fn expired_lease_look(&self) -> &crate::task_claim::ExpiredLeaseLook {
        PostgresStore::expired_lease_look(self)
    }

    fn fair_turns(&self) -> &crate::fair_turns::FairTurns {
        &self.fair_turns
    }

    fn listen(&self, what: crate::Listen) -> Option<crate::Notifications> {
        Some(PostgresStore::listen(self, what))
    }

    async fn claim_due(
        &self,
        owner: &str,
        limit: i64,
        lease: Duration,
        ahead: f64,
        lowest_priority: u8,
    ) -> Result<Vec<ClaimedRows>, StoreError> {
        let turns = self.fair_turns();
        let generic = |limit| {
            crate::sql_tables::leases::claim_due(self, owner, limit, lease, ahead, lowest_priority)
        };
        if turns.keyed_waiting() {
            // The generic claim shares priorities between keys, and says when none wait.
            return generic(limit).await;
        }
        let client = self.timekeeping_pool().get().await?;
        let statement = client.prepare_cached(&CLAIM).await?;
        let expired = self.expired_lease_look().due(std::time::Instant::now());
        let rows = client
            .query(
                &statement,
                &[
                    &limit,
                    &owner,
                    &lease.as_secs_f64(),
                    &ahead,
                    &expired,
                    &i32::from(lowest_priority),
                ],
            )
            .await?;
        drop(client);
        let waiting_at = TASK_COLUMN_COUNT + PROCESS_COLUMN_COUNT + STATE_COLUMN_COUNT;
        let keyed_waiting = rows.iter().any(|row| row.get::<_, bool>(waiting_at));
        let mut claimed = rows
            .iter()
            // The row that only says keyed tasks wait, when none was claimed.
            .filter(|row| row.get::<_, Option<i64>>(0).is_some())
            .map(|row| {
                let task = task_at(row, 0)?;
                let process_at_column = TASK_COLUMN_COUNT;
                let state_at_column = TASK_COLUMN_COUNT + PROCESS_COLUMN_COUNT;
                let rows = match row.get::<_, Option<uuid::Uuid>>(process_at_column) {
                    Some(_) => Some((
                        process_at(row, process_at_column)?,
                        optional_state_at(row, state_at_column)?,
                    )),
                    None => None,
                };
                Ok((task, rows))
            })
            .collect::<Result<Vec<ClaimedRows>, StoreError>>()?;
        crate::task_claim::order_claimed(&mut claimed);
        if keyed_waiting {
            turns.set_keyed_waiting(true);
            let more = limit - claimed.len() as i64;
            if more > 0 {
                claimed.extend(generic(more).await?);
            }
        }
        Ok(claimed)
    }

    async fn claim_by_ids(
        &self,
        task_ids: &[i64],
        owner: &str,
        lease: Duration,
    ) -> Result<Vec<TaskClaim>, StoreError> {
        if task_ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut session = self.session(Lane::Main).await?;
        let micros = i64::try_from(lease.as_micros()).unwrap_or(i64::MAX);
        let mut ids: Vec<Param> = task_ids.iter().map(|id| (*id).into()).collect();
        let list = in_list(&mut ids, task_ids.len());
        // Only due, unleased tasks are taken; SKIP LOCKED: a locked row is being completed,
        // rescheduled or claimed by someone else right now, which the status query reports.
        let rows = update_unlocked(
            &mut session,
            &format!(
                "lease_owner = ?, {}, \
                 first_attempt_at = COALESCE(first_attempt_at, clock_timestamp())",
                lease_from_now(SqlKind::Postgres)
            ),
            vec![owner.into(), micros.into()],
            "xdb_sys_tasks",
            &format!(
                "id IN ({list}) AND fire_at <= clock_timestamp() \
                 AND (lease_expires_at IS NULL OR lease_expires_at < clock_timestamp())"
            ),
            ids,
            // The rows come back with `id` first: the task's columns in their order.
            TASK_COLUMNS
                .strip_prefix("id")
                .expect("a task's columns begin with its id"),
        )
        .await?;
        let mut claimed = HashMap::new();
        for row in &rows {
            let task = task_from_row(row)?;
            claimed.insert(task.id, task);
        }
        let mut waits = HashMap::new();
        let unclaimed: HashSet<i64> = task_ids
            .iter()
            .copied()
            .filter(|id| !claimed.contains_key(id))
            .collect();
        if !unclaimed.is_empty() {
            let mut ids: Vec<Param> = unclaimed.iter().map(|id| (*id).into()).collect();
            let list = in_list(&mut ids, unclaimed.len());
            let status = session
                .query(
                    &format!(
                        "SELECT id, fire_at, lease_expires_at, clock_timestamp() \
                         FROM xdb_sys_tasks WHERE id IN ({list})"
                    ),
                    &ids,
                )
                .await?;
            for row in &status {
                let mut columns = PgRows::columns(row, 0);
                let id = columns.bigint()?;
                let wait =
                    claim_from_wait(columns.time()?, columns.optional_time()?, columns.time()?);
                waits.insert(id, wait);
            }
        }
        Ok(answers_in_order(task_ids, claimed, &waits, lease))
    }

    async fn release_dead(
        &self,
        me: &str,
        timeout: Duration,
    ) -> Result<ReleasedLeases, StoreError> {
        let client = self.timekeeping_pool().get().await?;
        let statement = client.prepare_cached(RELEASE_DEAD).await?;
        let rows = client
            .query(&statement, &[&me, &timeout.as_secs_f64()])
            .await?;
        let mut released = ReleasedLeases::default();
        for row in &rows {
            match row.get::<_, Option<String>>(2) {
                Some(instance) => released.removed.push(instance),
                None => released.tasks.push((row.get(0), row.get(1))),
            }
        }
        if !released.tasks.is_empty() {
            // Every instance claims what was freed at once, not at its next poll.
            let notify = client.prepare_cached("SELECT pg_notify($1, '')").await?;
            client.execute(&notify, &[&CHANNEL_TASKS]).await?;
        }
        Ok(released)
    }
}

// Leases of async instances whose heartbeat is older than both $2 seconds and the
// timeout they stated (by the database clock; one that stated none is never judged) go
// back to the queue, through the partial index of leased tasks; SKIP LOCKED:
// a locked task is being completed (its instance was slow, not dead) or claimed, and a
// task skipped now is freed by the next call. A dead instance's registration goes once
// it holds no lease (as of this statement's snapshot: the round after its last release),
// so a skipped task is never left behind an instance nobody looks at any more. The
// deletion checks the heartbeat again, as a heartbeat may land meanwhile. The registry
// is read in key order so that its primary key serves the scan: the store's sessions
// disable sequential scans, and the cost of a disabled one set off JIT compilation,
// which took over a second per call. With no instance dead (nearly every call) the task
// table is not read at all (`EXISTS`, a one-time filter): the planner's hash join
// fetched its first task by primary key before it looked at the empty owner list, and
// in a busy queue the low end of that index is dead entries, 38-52 ms a call in bench
// runs of both queue modes.
pub(super) const RELEASE_DEAD: &str = "\
    WITH dead AS ( \
      SELECT instance_id FROM xdb_sys_service_instances \
      WHERE service = 'ASYNC' AND instance_id <> $1 AND liveness_timeout_ms IS NOT NULL \
        AND heartbeat_at < clock_timestamp() \
          - make_interval(secs => GREATEST($2::float8, liveness_timeout_ms / 1000.0::float8)) \
      ORDER BY instance_id), \
    freed AS ( \
      UPDATE xdb_sys_tasks t SET lease_owner = NULL, lease_expires_at = NULL \
      WHERE EXISTS (SELECT 1 FROM dead) \
        AND t.id IN (SELECT id FROM xdb_sys_tasks \
                     WHERE lease_owner IN (SELECT instance_id FROM dead) FOR UPDATE SKIP LOCKED) \
      RETURNING t.id, t.process_execution_id), \
    removed AS ( \
      DELETE FROM xdb_sys_service_instances s \
      WHERE s.instance_id IN (SELECT instance_id FROM dead) \
        AND s.heartbeat_at < clock_timestamp() \
          - make_interval(secs => GREATEST($2::float8, s.liveness_timeout_ms / 1000.0::float8)) \
        AND NOT EXISTS (SELECT 1 FROM xdb_sys_tasks t WHERE t.lease_owner = s.instance_id) \
      RETURNING s.instance_id) \
    SELECT id, process_execution_id, NULL::text FROM freed \
    UNION ALL SELECT NULL, NULL, instance_id FROM removed";

// Three sources, each read through its own partial index so that tasks in flight are
// never walked: due timers (and process timeouts), other unleased tasks that are due
// (one range a priority, each written with its literal so that the planner matches
// the partial index holding it, see schema v014; no priority's backlog is walked on the
// way to the next), and leases that ran out (their instance died), the last only
// when $5 says so (see `ExpiredLeaseLook`; a false $5 skips that scan altogether). Due
// timers go first: the other tasks' fire_at is when they were created, so under a
// backlog they are all older than a timer that just came due, which would then wait for
// the whole backlog to be claimed before it fires. Then priority 1 before 2, and so on;
// a priority past $6 reads nothing (LIMIT 0), so that its tasks wait for the instance.
// At most `limit` ($1) are taken, in that order, tasks due now ahead of those read ahead
// (due within $4 seconds). SKIP LOCKED lets instances claim side by side;
// fire_at is compared with the database clock. The bound is `now()` (the statement's
// start), not `clock_timestamp()`: a volatile bound cannot stop an index scan, which
// then walks every task due later (100,000 waiting timers made each claim take 24 ms).
// Each claimed task comes with its process and state rows, so that a state task whose
// call needs nothing else skips loading them. While keyed tasks wait (one probe of their
// empty index otherwise) it claims nothing and answers one row saying so: the generic
// fair claim then orders keyed and keyless tasks together, so that a keyed task of a
// higher priority is not passed over by this claim's keyless ones.
pub(super) static CLAIM: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH timers AS ( \
           SELECT id, fire_at FROM xdb_sys_tasks \
           WHERE lease_owner IS NULL AND task_type IN ('TIMER', 'PROCESS_TIMEOUT') \
             AND fire_at <= now() + make_interval(secs => $4) \
           ORDER BY fire_at LIMIT $1 FOR UPDATE SKIP LOCKED), \
         unleased AS ({}), \
         expired AS ( \
           SELECT id, lease_expires_at FROM xdb_sys_tasks \
           WHERE $5 AND lease_owner IS NOT NULL AND lease_expires_at < now() \
           ORDER BY lease_expires_at LIMIT $1 FOR UPDATE SKIP LOCKED), \
         keyed AS ( \
           SELECT EXISTS (SELECT 1 FROM xdb_sys_tasks \
             WHERE lease_owner IS NULL AND fairness_key <> '' \
               AND fire_at <= now() + make_interval(secs => $4)) AS waiting), \
         chosen AS ( \
           SELECT id FROM ( \
             SELECT id, 0 AS source, 0 AS priority, fire_at AS due FROM timers \
             UNION ALL SELECT id, 1, priority, fire_at FROM unleased \
             UNION ALL SELECT id, 2, 0, lease_expires_at FROM expired) c \
           WHERE NOT (SELECT waiting FROM keyed) \
           GROUP BY id \
           ORDER BY bool_or(due > now()), min(source), min(priority), min(due) LIMIT $1), \
         claimed AS ( \
           UPDATE xdb_sys_tasks t SET lease_owner = $2, \
             lease_expires_at = clock_timestamp() + make_interval(secs => $3), \
             first_attempt_at = COALESCE(t.first_attempt_at, clock_timestamp()) \
           WHERE t.id IN (SELECT id FROM chosen) \
           RETURNING {}) \
         SELECT c.*, {}, {}, k.waiting FROM claimed c CROSS JOIN keyed k \
         LEFT JOIN xdb_sys_process_executions p ON p.id = c.process_execution_id \
         LEFT JOIN xdb_sys_async_state_executions s \
           ON s.process_execution_id = c.process_execution_id AND s.state_id = c.state_id \
          AND s.state_execution_number = c.state_execution_number \
         UNION ALL SELECT {}, TRUE FROM keyed k \
         WHERE k.waiting AND NOT EXISTS (SELECT 1 FROM claimed)",
        union_all(
            SqlKind::Postgres,
            PRIORITIES.map(|priority| format!(
                "SELECT id, fire_at, priority FROM xdb_sys_tasks \
                 WHERE lease_owner IS NULL AND priority = {priority} AND fairness_key = '' \
                   AND fire_at <= now() + make_interval(secs => $4) \
                 ORDER BY fire_at LIMIT CASE WHEN {priority} <= $6 THEN $1 ELSE 0 END \
                 FOR UPDATE SKIP LOCKED"
            ))
        ),
        qualified(TASK_COLUMNS, "t"),
        qualified(PROCESS_COLUMNS, "p"),
        qualified(STATE_COLUMNS, "s"),
        vec!["NULL"; TASK_COLUMN_COUNT + PROCESS_COLUMN_COUNT + STATE_COLUMN_COUNT].join(", "),
    )
});
