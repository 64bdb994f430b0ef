//! PostgreSQL's form of a task transition's first step: the execution, its task and
//! its state in the lock order every transaction keeps (the user's global-attribute
//! row, then the process execution row, then its task and state rows), in one
//! statement.

use std::sync::LazyLock;

use deadpool_postgres::GenericClient;
use xdb_engine::{ProcessExecution, StateExecution, StateExecutionId, Task};

use super::rows::{
    optional_state_at, process_at, PROCESS_COLUMNS, PROCESS_COLUMN_COUNT, STATE_COLUMNS,
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

/// The process row and one of its state rows, as read with a bare client (for tests
/// of statements sent without a `PgRows`).
#[cfg(test)]
pub(crate) async fn select_process_and_state(
    client: &impl GenericClient,
    id: uuid::Uuid,
    state: &StateExecutionId,
) -> Result<Option<(ProcessExecution, Option<StateExecution>)>, StoreError> {
    use crate::sql_tables::process_rows::{process_and_state_of, process_and_state_sql};
    let row = client
        .query_opt(
            &process_and_state_sql(),
            &[&state.state_id, &state.number, &id],
        )
        .await?;
    row.map(|row| process_and_state_of::<super::tables::PgRows>(&row))
        .transpose()
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
