//! [`OperatorRows`] in PostgreSQL statements: an execution's tasks, states and queues as
//! operators see them, and the moves of tasks in and out of `xdb_sys_parked_tasks`.

use chrono::{DateTime, Utc};
use tokio_postgres::Row;
use uuid::Uuid;
use xdb_engine::StateExecution;
use xdb_protocol::PauseInfo;

use super::rows::{state_from_row, task_at, to_json};
use super::tables::PgRows;
use crate::columns::{STATE_COLUMNS, TASK_COLUMNS};
use crate::tables::{OperatorRows, ParkReason, TaskView};
use crate::StoreError;

/// One table's tasks of an execution: [`TASK_COLUMNS`], the lease owner, and for a
/// set-aside task its reason and error. (Two statements: PostgreSQL locks no rows of a
/// UNION.)
fn tasks_of_statements(lock: bool) -> [String; 2] {
    let lock = if lock { " FOR UPDATE" } else { "" };
    [
        format!(
            "SELECT {TASK_COLUMNS}, lease_owner, NULL::varchar AS reason, NULL::text AS error \
             FROM xdb_sys_tasks WHERE process_execution_id = $1{lock}"
        ),
        format!(
            "SELECT {TASK_COLUMNS}, NULL::varchar, reason, error \
             FROM xdb_sys_parked_tasks WHERE process_execution_id = $1{lock}"
        ),
    ]
}

fn task_view(row: &Row) -> Result<TaskView, StoreError> {
    let at = crate::columns::TASK_COLUMN_COUNT;
    TaskView::decode(
        task_at(row, 0)?,
        row.get(at),
        row.get(at + 1),
        row.get(at + 2),
    )
}

/// Moves a task from `xdb_sys_tasks` into `xdb_sys_parked_tasks` in one statement.
const PARK: &str = "WITH moved AS (\
       DELETE FROM xdb_sys_tasks WHERE id = $1 AND lease_owner IS NOT DISTINCT FROM $2 \
       RETURNING id, task_type, fire_at, process_execution_id, state_id, \
         state_execution_number, timer_index, attempt, first_attempt_at, info) \
     INSERT INTO xdb_sys_parked_tasks (id, task_type, fire_at, process_execution_id, \
       state_id, state_execution_number, timer_index, attempt, first_attempt_at, info, \
       reason, error, parked_at) \
     SELECT id, task_type, fire_at, process_execution_id, state_id, state_execution_number, \
       timer_index, attempt, first_attempt_at, info, $3, $4, $5 FROM moved";

/// And back, unleased.
const UNPARK: &str = "WITH moved AS (\
       DELETE FROM xdb_sys_parked_tasks WHERE id = $1 \
       RETURNING id, task_type, fire_at, process_execution_id, state_id, \
         state_execution_number, timer_index, attempt, first_attempt_at, info) \
     INSERT INTO xdb_sys_tasks (id, task_type, fire_at, process_execution_id, state_id, \
       state_execution_number, timer_index, attempt, first_attempt_at, info) \
     SELECT id, task_type, COALESCE($2, fire_at), process_execution_id, state_id, \
       state_execution_number, timer_index, attempt, first_attempt_at, info FROM moved";

impl OperatorRows for PgRows {
    async fn tasks_of(&mut self, process: Uuid, lock: bool) -> Result<Vec<TaskView>, StoreError> {
        self.on_client(|client| async move {
            let mut views = Vec::new();
            for sql in tasks_of_statements(lock) {
                let statement = client.prepare_cached(&sql).await?;
                for row in client.query(&statement, &[&process]).await? {
                    views.push(task_view(&row)?);
                }
            }
            views.sort_by_key(|view: &TaskView| view.task.id);
            Ok(views)
        })
        .await
    }

    async fn states_of(&mut self, process: Uuid) -> Result<Vec<StateExecution>, StoreError> {
        self.on_client(|client| async move {
            let statement = client
                .prepare_cached(&format!(
                    "SELECT {STATE_COLUMNS} FROM xdb_sys_async_state_executions \
                     WHERE process_execution_id = $1 \
                     ORDER BY created_at, state_id, state_execution_number"
                ))
                .await?;
            let rows = client.query(&statement, &[&process]).await?;
            rows.iter().map(state_from_row).collect()
        })
        .await
    }

    async fn queued_counts(&mut self, process: Uuid) -> Result<Vec<(String, u64)>, StoreError> {
        self.on_client(|client| async move {
            let statement = client
                .prepare_cached(
                    "SELECT queue_name, count(*) FROM xdb_sys_local_queue_messages \
                     WHERE process_execution_id = $1 AND consumed_by IS NULL \
                     GROUP BY queue_name ORDER BY queue_name",
                )
                .await?;
            let rows = client.query(&statement, &[&process]).await?;
            Ok(rows
                .iter()
                .map(|row| (row.get(0), row.get::<_, i64>(1).max(0) as u64))
                .collect())
        })
        .await
    }

    async fn set_paused(
        &mut self,
        process: Uuid,
        paused: Option<&PauseInfo>,
    ) -> Result<(), StoreError> {
        self.on_client(|client| async move {
            let statement = client
                .prepare_cached("UPDATE xdb_sys_process_executions SET paused = $2 WHERE id = $1")
                .await?;
            client
                .execute(&statement, &[&process, &paused.map(to_json)])
                .await?;
            Ok(())
        })
        .await
    }

    async fn make_due(&mut self, id: i64, at: DateTime<Utc>) -> Result<bool, StoreError> {
        self.on_client(|client| async move {
            let statement = client
                .prepare_cached(
                    "UPDATE xdb_sys_tasks SET fire_at = $2 \
                     WHERE id = $1 AND lease_owner IS NULL",
                )
                .await?;
            Ok(client.execute(&statement, &[&id, &at]).await? == 1)
        })
        .await
    }

    async fn park(
        &mut self,
        id: i64,
        owner: Option<&str>,
        reason: ParkReason,
        error: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        self.on_client(|client| async move {
            let statement = client.prepare_cached(PARK).await?;
            let moved = client
                .execute(&statement, &[&id, &owner, &reason.as_str(), &error, &now])
                .await?;
            Ok(moved == 1)
        })
        .await
    }

    async fn unpark(&mut self, id: i64, due: Option<DateTime<Utc>>) -> Result<bool, StoreError> {
        self.on_client(|client| async move {
            let statement = client.prepare_cached(UNPARK).await?;
            Ok(client.execute(&statement, &[&id, &due]).await? == 1)
        })
        .await
    }

    async fn delete_unheld_task(&mut self, id: i64) -> Result<(), StoreError> {
        self.on_client(|client| async move {
            let statement = client
                .prepare_cached(
                    "WITH t AS (DELETE FROM xdb_sys_tasks WHERE id = $1 AND lease_owner IS NULL) \
                     DELETE FROM xdb_sys_parked_tasks WHERE id = $1",
                )
                .await?;
            client.execute(&statement, &[&id]).await?;
            Ok(())
        })
        .await
    }

    async fn delete_parked(&mut self, process: Uuid) -> Result<(), StoreError> {
        self.on_client(|client| async move {
            let statement = client
                .prepare_cached("DELETE FROM xdb_sys_parked_tasks WHERE process_execution_id = $1")
                .await?;
            client.execute(&statement, &[&process]).await?;
            Ok(())
        })
        .await
    }

    async fn count_refused(&mut self, process: Uuid) -> Result<u64, StoreError> {
        self.on_client(|client| async move {
            let statement = client
                .prepare_cached(
                    "SELECT count(*) FROM xdb_sys_parked_tasks \
                     WHERE process_execution_id = $1 AND reason = 'REFUSED'",
                )
                .await?;
            let row = client.query_one(&statement, &[&process]).await?;
            Ok(row.get::<_, i64>(0).max(0) as u64)
        })
        .await
    }
}
