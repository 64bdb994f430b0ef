//! The database queue on MySQL/MariaDB: leasing due tasks, claiming one task by id and
//! freeing dead instances' leases; the rest is written once in `sql_tables::task_queue`.

use std::time::Duration;

use chrono::NaiveDateTime;
use mysql_async::prelude::Queryable;
use mysql_async::{Row, TxOpts, Value};

use super::rows::{get, in_list, task_from_row, TASK_COLUMNS};
use super::tables::MySqlRows;
use super::MySqlStore;
use crate::columns::{read_task, ColumnReader};
use crate::sql::{Param, SqlConn};
use crate::sql_tables::task_queue::{claim_wait, update_unlocked, ClaimedRows, TaskQueue};
use crate::tables::{Dialect, Lane};
use crate::{ReleasedLeases, StoreError, TaskClaim};

/// A transaction of the store's, run through [`SqlConn`].
type Tx = MySqlRows<mysql_async::Transaction<'static>>;

/// The main pool without its wait bound, as the queue's upkeep always took it. No
/// LISTEN/NOTIFY: `listen` keeps the trait's `None`, consumers poll (and are woken by the
/// services' own notifications).
impl TaskQueue for MySqlStore {
    type Locking = Tx;

    async fn upkeep(&self) -> Result<Self::Session, StoreError> {
        Ok(MySqlRows {
            conn: self.pool().get_conn().await?,
            store: self.clone(),
        })
    }

    async fn upkeep_locking(&self) -> Result<Tx, StoreError> {
        Ok(MySqlRows {
            conn: self.pool().start_transaction(TxOpts::default()).await?,
            store: self.clone(),
        })
    }

    async fn unlock(locking: Tx) -> Result<(), StoreError> {
        Ok(locking.conn.commit().await?)
    }

    async fn claim_due(
        &self,
        owner: &str,
        limit: i64,
        lease: Duration,
        ahead: f64,
    ) -> Result<Vec<ClaimedRows>, StoreError> {
        let mut tx = self.begin_timekeeping().await?;
        // Three sources, each read through its own index so that tasks in flight are never
        // walked: due timers and process timeouts (the (NULL, type) prefixes of the
        // unleased-by-type index), other unleased tasks that are due (the `lease_owner IS
        // NULL` prefix of the unleased index), and leases that ran out (their instance
        // died). Due timers go first: the other tasks' fire_at is when they were created,
        // so under a backlog they all sort before a timer that just came due. SKIP LOCKED
        // lets instances claim side by side; fire_at is compared with the database clock,
        // so a timer never fires early. MySQL has no UPDATE … RETURNING: the rows are read
        // here, leased by the UPDATE below.
        let limit = limit.max(0);
        let ahead_micros = (ahead * 1e6) as i64;
        // One statement, two parts: each part locks its own rows (SKIP LOCKED applies to
        // each), and the timers' part comes first.
        let mut rows: Vec<Row> = tx
            .exec(
                format!(
                    "(SELECT {TASK_COLUMNS}, UTC_TIMESTAMP(6) AS db_now, 0 AS part FROM xdb_sys_tasks \
                      WHERE lease_owner IS NULL AND task_type IN ('TIMER', 'PROCESS_TIMEOUT') \
                        AND fire_at <= UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND \
                      ORDER BY fire_at LIMIT ? FOR UPDATE SKIP LOCKED) \
                     UNION ALL \
                     (SELECT {TASK_COLUMNS}, UTC_TIMESTAMP(6) AS db_now, 1 AS part FROM xdb_sys_tasks \
                      WHERE lease_owner IS NULL \
                        AND fire_at <= UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND \
                      ORDER BY lease_owner, fire_at LIMIT ? FOR UPDATE SKIP LOCKED)"
                ),
                (ahead_micros, limit, ahead_micros, limit),
            )
            .await?;
        rows.sort_by_key(|row| row.get::<i64, _>("part").unwrap_or(1));
        // Leases that ran out, at most once a second (see `ExpiredLeaseLook`).
        if self.expired_lease_look().due(std::time::Instant::now()) {
            let expired: Vec<Row> = tx
                .exec(
                    format!(
                        "SELECT {TASK_COLUMNS}, UTC_TIMESTAMP(6) AS db_now FROM xdb_sys_tasks \
                         WHERE lease_expires_at < UTC_TIMESTAMP(6) \
                         ORDER BY lease_expires_at LIMIT ? FOR UPDATE SKIP LOCKED"
                    ),
                    (limit,),
                )
                .await?;
            rows.extend(expired);
        }
        if rows.is_empty() {
            tx.commit().await?;
            return Ok(Vec::new());
        }
        let now: NaiveDateTime = get(&rows[0], "db_now")?;
        let mut tasks = rows
            .iter()
            .map(task_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        // The timers read first come again among the unleased tasks. Tasks due now go
        // ahead of those read ahead (stable: timers still first among each).
        let mut seen = std::collections::HashSet::new();
        tasks.retain(|task| seen.insert(task.id));
        let db_now = now.and_utc();
        tasks.sort_by_key(|task| task.fire_at > db_now);
        tasks.truncate(limit as usize);
        let mut params = vec![
            Value::from(owner),
            Value::from(now),
            Value::from(lease.as_micros() as i64),
            Value::from(now),
        ];
        params.extend(tasks.iter().map(|t| Value::from(t.id)));
        let placeholders = in_list(&mut params, tasks.len());
        tx.exec_drop(
            format!(
                "UPDATE xdb_sys_tasks SET lease_owner = ?, \
                   lease_expires_at = ? + INTERVAL ? MICROSECOND, \
                   first_attempt_at = COALESCE(first_attempt_at, ?) \
                 WHERE id IN ({placeholders})"
            ),
            params,
        )
        .await?;
        tx.commit().await?;
        for task in &mut tasks {
            task.first_attempt_at.get_or_insert(now.and_utc());
        }
        crate::task_claim::order_claimed(&mut tasks);
        // The claim reads no rows along: every call is loaded.
        Ok(tasks.into_iter().map(|task| (task, None)).collect())
    }

    async fn claim_by_id(
        &self,
        task_id: i64,
        owner: &str,
        lease: Duration,
    ) -> Result<TaskClaim, StoreError> {
        let mut tx = Dialect::begin(self, Lane::Main).await?;
        // SKIP LOCKED: a locked row is being completed, rescheduled or claimed right now;
        // it is then reported as leased for a moment, and looked at again after that.
        let rows = tx
            .query(
                &format!(
                    "SELECT {TASK_COLUMNS}, lease_expires_at, UTC_TIMESTAMP(6) \
                     FROM xdb_sys_tasks WHERE id = ? FOR UPDATE SKIP LOCKED"
                ),
                &[task_id.into()],
            )
            .await?;
        let Some(row) = rows.first() else {
            let exists = tx
                .query(
                    "SELECT id FROM xdb_sys_tasks WHERE id = ?",
                    &[task_id.into()],
                )
                .await?;
            tx.conn.commit().await?;
            return Ok(match exists.first() {
                Some(_) => TaskClaim::from_wait(0.0, None),
                None => TaskClaim::Gone,
            });
        };
        let mut columns = Tx::columns(row, 0);
        let mut task = read_task(&mut columns)?;
        let lease_expires_at = columns.optional_time()?;
        let now = columns.time()?;
        if let Some(wait) = claim_wait(task.fire_at, lease_expires_at, now) {
            tx.conn.commit().await?;
            return Ok(wait);
        }
        let micros = i64::try_from(lease.as_micros()).unwrap_or(i64::MAX);
        tx.execute(
            "UPDATE xdb_sys_tasks SET lease_owner = ?, \
               lease_expires_at = ? + INTERVAL ? MICROSECOND, \
               first_attempt_at = COALESCE(first_attempt_at, ?) \
             WHERE id = ?",
            &[
                owner.into(),
                now.into(),
                micros.into(),
                now.into(),
                task_id.into(),
            ],
        )
        .await?;
        tx.conn.commit().await?;
        task.first_attempt_at.get_or_insert(now);
        Ok(TaskClaim::Claimed(task))
    }

    async fn release_dead(
        &self,
        me: &str,
        timeout: Duration,
    ) -> Result<ReleasedLeases, StoreError> {
        let mut tx = Dialect::begin(self, Lane::Timekeeping).await?;
        let micros = i64::try_from(timeout.as_micros()).unwrap_or(i64::MAX);
        let dead = tx
            .query(
                &format!("SELECT instance_id FROM xdb_sys_service_instances WHERE {SILENT}"),
                &[me.into(), micros.into()],
            )
            .await?
            .iter()
            .map(|row| Tx::columns(row, 0).text())
            .collect::<Result<Vec<String>, StoreError>>()?;
        if dead.is_empty() {
            tx.conn.commit().await?;
            return Ok(ReleasedLeases::default());
        }
        // Through the (lease_owner, fire_at) index; SKIP LOCKED: a locked task is being
        // completed (its instance was slow, not dead) or claimed, and one skipped now is
        // freed by the next call.
        let mut owners: Vec<Param> = dead.iter().map(|id| id.as_str().into()).collect();
        let owner_list = in_list(&mut owners, dead.len());
        let freed = update_unlocked(
            &mut tx,
            "lease_owner = NULL, lease_expires_at = NULL",
            Vec::new(),
            &format!("lease_owner IN ({owner_list})"),
            owners,
            ", process_execution_id",
        )
        .await?;
        let tasks = freed
            .iter()
            .map(|row| {
                let mut columns = Tx::columns(row, 0);
                Ok((columns.bigint()?, columns.uuid()?))
            })
            .collect::<Result<_, StoreError>>()?;
        // A dead instance's registration goes once it holds no lease, so a task skipped
        // above is never left behind an instance nobody looks at any more. The heartbeat
        // is checked again, as one may have landed meanwhile.
        let mut removed = Vec::new();
        for instance in dead {
            let deleted = tx
                .execute(
                    &format!(
                        "DELETE FROM xdb_sys_service_instances WHERE instance_id = ? AND {SILENT} \
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
        tx.conn.commit().await?;
        Ok(ReleasedLeases { tasks, removed })
    }
}

/// Registered async instances other than `?` silent for longer than both `?`
/// microseconds and the timeout they stated, by the database clock (an instance that
/// stated none is never judged).
const SILENT: &str = "service = 'ASYNC' AND instance_id <> ? \
    AND liveness_timeout_ms IS NOT NULL \
    AND heartbeat_at < UTC_TIMESTAMP(6) - INTERVAL GREATEST(?, liveness_timeout_ms * 1000) MICROSECOND";
