//! Reads that lock, and the lock order every transaction keeps to avoid deadlocks:
//! the user's global-attribute row, then the process execution row, then its task and
//! state rows.

use std::sync::LazyLock;

use deadpool_postgres::GenericClient;
use uuid::Uuid;
use xdb_engine::{ProcessExecution, StateExecution, StateExecutionId, Task};

use super::rows::{
    optional_state_at, process_at, process_from_row, qualified, PROCESS_COLUMNS,
    PROCESS_COLUMN_COUNT, STATE_COLUMNS,
};
use crate::StoreError;

/// Deletes a task its owner holds: [`crate::sql_tables::task_rows::take_task_sql`]
/// (which says why the owner is compared so) as PostgreSQL numbers it, for the
/// statements that carry it along.
pub(crate) const TAKE_TASK: &str =
    "DELETE FROM xdb_sys_tasks WHERE id = $1 AND lease_owner IS NOT DISTINCT FROM $2";

/// The process row, then the state row, locked, and `task` taken (as [`TAKE_TASK`]),
/// in one statement. The nested loop reads the process first, so its lock is taken
/// first, as in every transaction that touches an execution; nobody else waits on a
/// task row while holding a lock (claims and renewals skip locked tasks).
pub(crate) async fn lock_for_task(
    tx: &impl GenericClient,
    task: &Task,
    owner: &str,
    state: &StateExecutionId,
) -> Result<(ProcessExecution, Option<StateExecution>), StoreError> {
    let statement = tx.prepare_cached(&LOCK_FOR_TASK).await?;
    let row = tx
        .query_opt(
            &statement,
            &[
                &task.process_execution_id,
                &task.id,
                &owner,
                &state.state_id,
                &state.number,
            ],
        )
        .await?
        .ok_or_else(|| {
            StoreError::NotFound(format!(
                "process execution {} not found",
                task.process_execution_id
            ))
        })?;
    if row.get::<_, i64>(PROCESS_COLUMN_COUNT) != 1 {
        return Err(StoreError::Stale(format!(
            "task {} is no longer leased to us",
            task.id
        )));
    }
    let process = process_at(&row, 0)?;
    let state = optional_state_at(&row, PROCESS_COLUMN_COUNT + 1)?;
    Ok((process, state))
}

static LOCK_FOR_TASK: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH p AS (SELECT {PROCESS_COLUMNS} FROM xdb_sys_process_executions \
                    WHERE id = $1 FOR UPDATE), \
              s AS (SELECT {STATE_COLUMNS} FROM xdb_sys_async_state_executions \
                    WHERE process_execution_id = $1 AND state_id = $4 \
                      AND state_execution_number = $5 FOR UPDATE), \
              t AS (DELETE FROM xdb_sys_tasks WHERE id = $2 AND lease_owner IS NOT DISTINCT FROM $3 RETURNING 1) \
         SELECT p.*, (SELECT count(*) FROM t), s.* FROM p LEFT JOIN s ON true"
    )
});

/// The process row and one of its state rows, read (not locked) in one statement:
/// `None` when the process is not there, and no state when that one is not.
pub(crate) async fn select_process_and_state(
    client: &impl GenericClient,
    process_execution_id: Uuid,
    state: &StateExecutionId,
) -> Result<Option<(ProcessExecution, Option<StateExecution>)>, StoreError> {
    let statement = client.prepare_cached(&PROCESS_AND_STATE_SQL).await?;
    client
        .query_opt(
            &statement,
            &[&process_execution_id, &state.state_id, &state.number],
        )
        .await?
        .map(|row| {
            Ok((
                process_at(&row, 0)?,
                optional_state_at(&row, PROCESS_COLUMN_COUNT)?,
            ))
        })
        .transpose()
}

static PROCESS_AND_STATE_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {}, {} FROM xdb_sys_process_executions p \
         LEFT JOIN xdb_sys_async_state_executions s ON s.process_execution_id = p.id \
           AND s.state_id = $2 AND s.state_execution_number = $3 \
         WHERE p.id = $1",
        qualified(PROCESS_COLUMNS, "p"),
        qualified(STATE_COLUMNS, "s"),
    )
});

/// The process row by id: plain, and locked.
static PROCESS_SQL: LazyLock<[String; 2]> = LazyLock::new(|| {
    let sql = format!("SELECT {PROCESS_COLUMNS} FROM xdb_sys_process_executions WHERE id = $1");
    [sql.clone(), sql + " FOR UPDATE"]
});

pub(crate) async fn lock_process(
    tx: &impl GenericClient,
    id: Uuid,
) -> Result<ProcessExecution, StoreError> {
    select_process(tx, id, true).await
}

pub(crate) async fn select_process(
    tx: &impl GenericClient,
    id: Uuid,
    for_update: bool,
) -> Result<ProcessExecution, StoreError> {
    let statement = tx
        .prepare_cached(&PROCESS_SQL[usize::from(for_update)])
        .await?;
    let row = tx
        .query_opt(&statement, &[&id])
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("process execution {id} not found")))?;
    process_from_row(&row)
}

/// The latest execution of `process_id`, if any.
pub(crate) async fn latest_execution(
    tx: &impl GenericClient,
    process_id: &str,
) -> Result<Option<Uuid>, StoreError> {
    let statement = tx
        .prepare_cached(
            "SELECT process_execution_id FROM xdb_sys_latest_process_executions WHERE process_id = $1",
        )
        .await?;
    Ok(tx
        .query_opt(&statement, &[&process_id])
        .await?
        .map(|row| row.get(0)))
}

/// The execution row of `process_id`, the one `execution_id` names or else its latest.
pub(crate) async fn find_execution(
    client: &impl GenericClient,
    process_id: &str,
    execution_id: Option<Uuid>,
) -> Result<Option<ProcessExecution>, StoreError> {
    let row = match execution_id {
        Some(id) => {
            let statement = client.prepare_cached(&EXECUTION_BY_ID_SQL).await?;
            client.query_opt(&statement, &[&id, &process_id]).await?
        }
        None => {
            let statement = client.prepare_cached(&LATEST_EXECUTION_SQL).await?;
            client.query_opt(&statement, &[&process_id]).await?
        }
    };
    row.map(|row| process_from_row(&row)).transpose()
}

static EXECUTION_BY_ID_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {PROCESS_COLUMNS} FROM xdb_sys_process_executions \
         WHERE id = $1 AND process_id = $2"
    )
});

static LATEST_EXECUTION_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {PROCESS_COLUMNS} FROM xdb_sys_process_executions \
         WHERE id = (SELECT process_execution_id FROM xdb_sys_latest_process_executions \
                     WHERE process_id = $1)"
    )
});

/// Executions matching `query`, newest first, each with its start time.
pub(crate) async fn list_executions(
    client: &impl GenericClient,
    query: &crate::tables::ListQuery<'_>,
) -> Result<
    Vec<(
        xdb_protocol::ProcessExecutionSummary,
        chrono::DateTime<chrono::Utc>,
    )>,
    StoreError,
> {
    // Null parameters switch their filter off, so one prepared statement serves all.
    let sql = "SELECT id, process_id, process_type, status, start_time, close_time, \
                 status = 'RUNNING' AND paused IS NOT NULL \
               FROM xdb_sys_process_executions \
               WHERE ($1::varchar IS NULL OR status = $1) \
                 AND ($2::varchar IS NULL OR process_type = $2) \
                 AND ($3::varchar IS NULL OR process_id = $3) \
                 AND ($4::timestamptz IS NULL OR start_time >= $4) \
                 AND ($5::timestamptz IS NULL OR start_time < $5) \
                 AND ($6::timestamptz IS NULL OR (start_time, id) < ($6, $7::uuid)) \
               ORDER BY start_time DESC, id DESC LIMIT $8";
    let statement = client.prepare_cached(sql).await?;
    let status = query.status.map(xdb_protocol::ProcessStatus::as_str);
    let (after_start, after_id) = (query.after.map(|a| a.0), query.after.map(|a| a.1));
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 8] = [
        &status,
        &query.process_type,
        &query.process_id,
        &query.start_min,
        &query.start_max,
        &after_start,
        &after_id,
        &query.limit,
    ];
    let rows = client.query(&statement, &params).await?;
    rows.iter()
        .map(|row| {
            let id: Uuid = row.get(0);
            let start: chrono::DateTime<chrono::Utc> = row.get(4);
            let status: String = row.get(3);
            let summary = xdb_protocol::ProcessExecutionSummary {
                process_execution_id: id.to_string(),
                process_id: row.get(1),
                process_type: row.get(2),
                status: xdb_protocol::ProcessStatus::parse(&status)
                    .ok_or_else(|| StoreError::Database(format!("unknown status {status}")))?,
                start_timestamp_ms: start.timestamp_millis(),
                close_timestamp_ms: row
                    .get::<_, Option<chrono::DateTime<chrono::Utc>>>(5)
                    .map(|t| t.timestamp_millis()),
                paused: row.get(6),
            };
            Ok((summary, start))
        })
        .collect()
}

/// Claims `process_id` for `new_id` (see `crate::tables::ProcessRows::claim_process_id`).
pub(crate) async fn claim_process_id(
    client: &impl GenericClient,
    process_id: &str,
    new_id: Uuid,
) -> Result<Option<ProcessExecution>, StoreError> {
    let claim = client
        .prepare_cached(
            "INSERT INTO xdb_sys_latest_process_executions (process_id, process_execution_id) \
             VALUES ($1, $2) ON CONFLICT (process_id) DO NOTHING",
        )
        .await?;
    if client.execute(&claim, &[&process_id, &new_id]).await? == 1 {
        return Ok(None);
    }
    let select = client.prepare_cached(&PREVIOUS_EXECUTION_SQL).await?;
    let row = client.query_one(&select, &[&process_id]).await?;
    Ok(Some(process_from_row(&row)?))
}

static PREVIOUS_EXECUTION_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {PROCESS_COLUMNS} FROM xdb_sys_process_executions WHERE id = \
         (SELECT process_execution_id FROM xdb_sys_latest_process_executions \
          WHERE process_id = $1 FOR UPDATE)"
    )
});

/// Points the latest-execution row of `process_id` at `new_id`.
pub(crate) async fn repoint_latest(
    client: &impl GenericClient,
    process_id: &str,
    new_id: Uuid,
) -> Result<(), StoreError> {
    let repoint = client
        .prepare_cached(
            "UPDATE xdb_sys_latest_process_executions SET process_execution_id = $2 \
             WHERE process_id = $1",
        )
        .await?;
    client.execute(&repoint, &[&process_id, &new_id]).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use xdb_test_util::TestDatabase;

    use super::*;
    use crate::postgres::PostgresStore;
    use crate::sql::{numbered_placeholders, SqlKind};
    use crate::sql_tables::task_rows::take_task_sql;

    /// One statement text, so one prepared statement and one plan (tested below).
    #[test]
    fn the_carried_take_is_the_shared_one() {
        assert_eq!(
            numbered_placeholders(take_task_sql(SqlKind::Postgres)),
            TAKE_TASK
        );
    }

    /// The generic plan a store session makes of `sql` on the freshly installed, empty
    /// schema: the plan its prepared statement keeps while the table is near empty.
    async fn generic_plan(store: &PostgresStore, sql: &str, types: &str, args: &str) -> String {
        let client = store.pool().get().await.unwrap();
        client
            .batch_execute(&format!(
                "SET plan_cache_mode = force_generic_plan; PREPARE probe({types}) AS {sql}"
            ))
            .await
            .unwrap();
        let rows = client
            .query(&format!("EXPLAIN EXECUTE probe({args})"), &[])
            .await
            .unwrap();
        client
            .batch_execute("DEALLOCATE probe; RESET plan_cache_mode")
            .await
            .unwrap();
        rows.iter()
            .map(|row| row.get::<_, String>(0))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// With `lease_owner = $2`, PostgreSQL 15 plans this through the owner index
    /// (`Index Cond: lease_owner = $2, Filter: id = $1`), which walked every entry of
    /// the owner's on each transition (see [`TAKE_TASK`]).
    #[tokio::test]
    async fn a_task_is_taken_through_its_primary_key_even_on_an_empty_table() {
        let db = TestDatabase::create_postgres().await;
        let store = PostgresStore::connect(db.url(), 1).await.unwrap();
        let plan = generic_plan(&store, TAKE_TASK, "bigint, text", "1, 'w'").await;
        assert!(
            plan.contains("Index Scan using xdb_sys_tasks_pkey"),
            "{plan}"
        );
        assert!(plan.contains("Index Cond: (id = $1)"), "{plan}");
        assert!(!plan.contains("lease_owner IS NOT NULL"), "{plan}");
        assert!(!plan.contains("by_lease_owner"), "{plan}");
    }
}
