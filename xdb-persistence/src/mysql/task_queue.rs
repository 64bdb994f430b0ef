//! The database queue: leasing due tasks, claiming one task by id, renewing and releasing
//! leases, and the counts behind the gauges (backlog, what needs an operator).

use std::time::Duration;

use async_trait::async_trait;
use chrono::NaiveDateTime;
use mysql_async::prelude::Queryable;
use mysql_async::{Row, TxOpts, Value};
use xdb_engine::Task;

use super::rows::{get, in_list, task_from_row, TASK_COLUMNS};
use super::MySqlStore;
use crate::{OperatorGauges, ReleasedLeases, StateCall, StoreError, TaskClaim, TaskSource};

/// No LISTEN/NOTIFY: `listen` keeps the trait's `None`, consumers poll (and are woken by
/// the services' own notifications).
#[async_trait]
impl TaskSource for MySqlStore {
    async fn lease_due(
        &self,
        owner: &str,
        limit: i64,
        lease: Duration,
        ahead: f64,
    ) -> Result<Vec<(Task, Option<StateCall>)>, StoreError> {
        // The claim reads no rows along: every call is loaded.
        let tasks = claim_due_by(self, owner, limit, lease, ahead).await?;
        Ok(tasks.into_iter().map(|task| (task, None)).collect())
    }

    async fn count_backlog(&self, cap: i64) -> Result<i64, StoreError> {
        let mut conn = self.pool().get_conn().await?;
        let count: Option<i64> = conn
            .exec_first(
                "SELECT COUNT(*) FROM (SELECT 1 FROM xdb_sys_tasks \
               WHERE fire_at <= UTC_TIMESTAMP(6) \
                 AND (lease_expires_at IS NULL OR lease_expires_at < UTC_TIMESTAMP(6)) \
               LIMIT ?) due",
                (cap,),
            )
            .await?;
        Ok(count.unwrap_or(0))
    }

    async fn operator_gauges(
        &self,
        attempts_threshold: i32,
        cap: i64,
    ) -> Result<OperatorGauges, StoreError> {
        let mut conn = self.pool().get_conn().await?;
        // Paused running executions are read from the index on the generated `is_paused`
        // (no partial indexes here); an execution keeps its pause when it closes, hence
        // the status.
        let counts: Option<(i64, i64, i64)> = conn
            .exec_first(
                "SELECT \
                 (SELECT COUNT(*) FROM (SELECT 1 FROM xdb_sys_process_executions \
                    WHERE is_paused = 1 AND status = 'RUNNING' LIMIT ?) paused), \
                 (SELECT COUNT(*) FROM (SELECT 1 FROM xdb_sys_parked_tasks \
                    WHERE reason = 'REFUSED' LIMIT ?) refused), \
                 (SELECT COUNT(*) FROM (SELECT 1 FROM xdb_sys_tasks \
                    WHERE task_type IN ('WAIT_UNTIL', 'EXECUTE') AND attempt >= ? \
                    LIMIT ?) failing)",
                (cap, cap, attempts_threshold, cap),
            )
            .await?;
        Ok(OperatorGauges::from_counts(counts.unwrap_or_default()))
    }

    async fn claim_task(
        &self,
        task_id: i64,
        owner: &str,
        lease: Duration,
    ) -> Result<TaskClaim, StoreError> {
        let mut tx = self.begin().await?;
        // SKIP LOCKED: a locked row is being completed, rescheduled or claimed right now;
        // it is then reported as leased for a moment, and looked at again after that.
        let row: Option<Row> = tx
            .exec_first(
                format!(
                    "SELECT {TASK_COLUMNS}, UTC_TIMESTAMP(6) AS db_now, \
                   TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), fire_at) AS due_in, \
                   TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), lease_expires_at) AS lease_left \
                 FROM xdb_sys_tasks WHERE id = ? FOR UPDATE SKIP LOCKED"
                ),
                (task_id,),
            )
            .await?;
        let Some(row) = row else {
            let exists: Option<i64> = tx
                .exec_first("SELECT id FROM xdb_sys_tasks WHERE id = ?", (task_id,))
                .await?;
            tx.commit().await?;
            return Ok(match exists {
                Some(_) => TaskClaim::from_wait(0.0, None),
                None => TaskClaim::Gone,
            });
        };
        let due_in: i64 = get(&row, "due_in")?;
        let lease_left: Option<i64> = get(&row, "lease_left")?;
        if let Some(wait) = TaskClaim::wait(
            due_in as f64 / 1e6,
            lease_left.map(|micros| micros as f64 / 1e6),
        ) {
            tx.commit().await?;
            return Ok(wait);
        }
        let now: NaiveDateTime = get(&row, "db_now")?;
        let mut task = task_from_row(&row)?;
        tx.exec_drop(
            "UPDATE xdb_sys_tasks SET lease_owner = ?, \
           lease_expires_at = ? + INTERVAL ? MICROSECOND, \
           first_attempt_at = COALESCE(first_attempt_at, ?) \
         WHERE id = ?",
            (owner, now, lease.as_micros() as i64, now, task_id),
        )
        .await?;
        tx.commit().await?;
        task.first_attempt_at.get_or_insert(now.and_utc());
        Ok(TaskClaim::Claimed(task))
    }

    async fn next_task_due_in(&self) -> Result<Option<Duration>, StoreError> {
        let mut conn = self.timekeeping_pool().get_conn().await?;
        let micros: Option<i64> = conn
            .query_first(
                "SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), fire_at) FROM xdb_sys_tasks \
             WHERE lease_owner IS NULL ORDER BY lease_owner, fire_at LIMIT 1",
            )
            .await?;
        Ok(micros.map(|m| Duration::from_micros(m.max(0) as u64)))
    }

    async fn renew_leases(
        &self,
        owner: &str,
        task_ids: &[i64],
        lease: Duration,
    ) -> Result<u64, StoreError> {
        let micros = lease.as_micros() as i64;
        update_own_leases(
            self,
            owner,
            Some(task_ids),
            "SET lease_expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND",
            vec![micros.into()],
        )
        .await
    }

    async fn release_leases(&self, owner: &str) -> Result<u64, StoreError> {
        update_own_leases(
            self,
            owner,
            None,
            "SET lease_owner = NULL, lease_expires_at = NULL",
            Vec::new(),
        )
        .await
    }

    async fn release_dead_leases(
        &self,
        me: &str,
        timeout: Duration,
    ) -> Result<ReleasedLeases, StoreError> {
        // The timekeeping lane: a backlog of transitions must not delay a takeover.
        let mut tx = self.begin_timekeeping().await?;
        let micros = i64::try_from(timeout.as_micros()).unwrap_or(i64::MAX);
        let dead: Vec<String> = tx
            .exec(
                format!("SELECT instance_id FROM xdb_sys_service_instances WHERE {SILENT}"),
                (me, micros),
            )
            .await?;
        if dead.is_empty() {
            tx.commit().await?;
            return Ok(ReleasedLeases::default());
        }
        // Through the (lease_owner, fire_at) index; SKIP LOCKED: a locked task is being
        // completed (its instance was slow, not dead) or claimed, and one skipped now is
        // freed by the next call.
        let mut params: Vec<Value> = dead.iter().map(|id| Value::from(id.as_str())).collect();
        let owners = in_list(&mut params, dead.len());
        let tasks: Vec<(i64, String)> = tx
            .exec(
                format!(
                    "SELECT id, process_execution_id FROM xdb_sys_tasks \
                     WHERE lease_owner IN ({owners}) FOR UPDATE SKIP LOCKED"
                ),
                params,
            )
            .await?;
        if !tasks.is_empty() {
            let mut ids: Vec<Value> = tasks.iter().map(|(id, _)| Value::from(*id)).collect();
            let placeholders = in_list(&mut ids, tasks.len());
            tx.exec_drop(
                format!(
                    "UPDATE xdb_sys_tasks SET lease_owner = NULL, lease_expires_at = NULL \
                     WHERE id IN ({placeholders})"
                ),
                ids,
            )
            .await?;
        }
        // A dead instance's registration goes once it holds no lease, so a task skipped
        // above is never left behind an instance nobody looks at any more. The heartbeat
        // is checked again, as one may have landed meanwhile.
        let mut removed = Vec::new();
        for instance in dead {
            tx.exec_drop(
                format!(
                    "DELETE FROM xdb_sys_service_instances WHERE instance_id = ? AND {SILENT} \
                     AND NOT EXISTS (SELECT 1 FROM xdb_sys_tasks WHERE lease_owner = ?)"
                ),
                (&instance, me, micros, &instance),
            )
            .await?;
            if tx.affected_rows() > 0 {
                removed.push(instance);
            }
        }
        tx.commit().await?;
        let tasks = tasks
            .into_iter()
            .map(|(id, execution)| Ok((id, crate::parse_execution_id(&execution)?)))
            .collect::<Result<_, StoreError>>()?;
        Ok(ReleasedLeases { tasks, removed })
    }
}

/// Registered async instances other than `?` silent for longer than both `?`
/// microseconds and the timeout they stated, by the database clock (an instance that
/// stated none is never judged).
const SILENT: &str = "service = 'ASYNC' AND instance_id <> ? \
    AND liveness_timeout_ms IS NOT NULL \
    AND heartbeat_at < UTC_TIMESTAMP(6) - INTERVAL GREATEST(?, liveness_timeout_ms * 1000) MICROSECOND";

/// Leases tasks due `ahead` seconds from now (negative: due for at least that long).
async fn claim_due_by(
    store: &MySqlStore,
    owner: &str,
    limit: i64,
    lease: Duration,
    ahead: f64,
) -> Result<Vec<Task>, StoreError> {
    let mut tx = store.begin_timekeeping().await?;
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
    if store.expired_lease_look().due(std::time::Instant::now()) {
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
    Ok(tasks)
}

/// Applies `assignments` to the tasks `owner` leases (of `only`, when given), skipping
/// locked ones: a locked task is being completed or deleted (a stop), and waiting on it
/// could deadlock with that transaction, which takes the same execution's task rows in
/// another order.
async fn update_own_leases(
    store: &MySqlStore,
    owner: &str,
    only: Option<&[i64]>,
    assignments: &str,
    mut params: Vec<Value>,
) -> Result<u64, StoreError> {
    let mut conn = store.pool().get_conn().await?;
    let mut tx = conn.start_transaction(TxOpts::default()).await?;
    let mut select_params = vec![Value::from(owner)];
    let id_filter = match only {
        Some(ids) => {
            select_params.extend(ids.iter().map(|id| Value::from(*id)));
            format!(" AND id IN ({})", in_list(&mut select_params, ids.len()))
        }
        None => String::new(),
    };
    let ids: Vec<i64> = tx
        .exec(
            format!(
                "SELECT id FROM xdb_sys_tasks WHERE lease_owner = ?{id_filter} \
                 FOR UPDATE SKIP LOCKED"
            ),
            select_params,
        )
        .await?;
    if ids.is_empty() {
        tx.commit().await?;
        return Ok(0);
    }
    let count = ids.len();
    let mut id_values: Vec<Value> = ids.into_iter().map(Value::from).collect();
    let placeholders = in_list(&mut id_values, count);
    params.extend(id_values);
    tx.exec_drop(
        format!("UPDATE xdb_sys_tasks {assignments} WHERE id IN ({placeholders})"),
        params,
    )
    .await?;
    tx.commit().await?;
    Ok(count as u64)
}
