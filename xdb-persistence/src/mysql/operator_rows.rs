//! [`OperatorRows`] in MySQL/MariaDB statements: an execution's tasks, states and queues
//! as operators see them, and the moves of tasks in and out of `xdb_sys_parked_tasks`.

use chrono::{DateTime, Utc};
use mysql_async::prelude::Queryable;
use mysql_async::{Row, Value};
use uuid::Uuid;
use xdb_engine::StateExecution;
use xdb_protocol::PauseInfo;

use super::rows::{
    get, json_text, state_from_row, task_from_row, time_value, STATE_COLUMNS, TASK_COLUMNS,
};
use super::tables::{AffectedRows, MySqlRows};
use crate::tables::{OperatorRows, ParkReason, TaskView};
use crate::StoreError;

/// The columns a task has in both tables.
const MOVED_COLUMNS: &str = "id, task_type, fire_at, process_execution_id, state_id, \
    state_execution_number, timer_index, attempt, first_attempt_at, info";

fn task_view(row: &Row) -> Result<TaskView, StoreError> {
    TaskView::decode(
        task_from_row(row)?,
        get(row, "lease_owner")?,
        get(row, "reason")?,
        get(row, "error")?,
    )
}

impl<Q: Queryable + AffectedRows + Sync> OperatorRows for MySqlRows<Q> {
    async fn tasks_of(&mut self, process: Uuid, lock: bool) -> Result<Vec<TaskView>, StoreError> {
        let lock = if lock { " FOR UPDATE" } else { "" };
        let id = process.to_string();
        let mut tasks: Vec<Row> = self
            .conn
            .exec(
                format!(
                    "SELECT {TASK_COLUMNS}, lease_owner, NULL AS reason, NULL AS error \
                     FROM xdb_sys_tasks WHERE process_execution_id = ?{lock}"
                ),
                (id.as_str(),),
            )
            .await?;
        let parked: Vec<Row> = self
            .conn
            .exec(
                format!(
                    "SELECT {TASK_COLUMNS}, NULL AS lease_owner, reason, error \
                     FROM xdb_sys_parked_tasks WHERE process_execution_id = ?{lock}"
                ),
                (id.as_str(),),
            )
            .await?;
        tasks.extend(parked);
        let mut views = tasks.iter().map(task_view).collect::<Result<Vec<_>, _>>()?;
        views.sort_by_key(|view| view.task.id);
        Ok(views)
    }

    async fn states_of(&mut self, process: Uuid) -> Result<Vec<StateExecution>, StoreError> {
        let rows: Vec<Row> = self
            .conn
            .exec(
                format!(
                    "SELECT {STATE_COLUMNS} FROM xdb_sys_async_state_executions \
                     WHERE process_execution_id = ? \
                     ORDER BY created_at, state_id, state_execution_number"
                ),
                (process.to_string(),),
            )
            .await?;
        rows.iter().map(state_from_row).collect()
    }

    async fn queued_counts(&mut self, process: Uuid) -> Result<Vec<(String, u64)>, StoreError> {
        let rows: Vec<(String, u64)> = self
            .conn
            .exec(
                "SELECT queue_name, count(*) FROM xdb_sys_local_queue_messages \
                 WHERE process_execution_id = ? AND consumed_by IS NULL \
                 GROUP BY queue_name ORDER BY queue_name",
                (process.to_string(),),
            )
            .await?;
        Ok(rows)
    }

    async fn set_paused(
        &mut self,
        process: Uuid,
        paused: Option<&PauseInfo>,
    ) -> Result<(), StoreError> {
        self.conn
            .exec_drop(
                "UPDATE xdb_sys_process_executions SET paused = ? WHERE id = ?",
                (paused.map(json_text), process.to_string()),
            )
            .await?;
        Ok(())
    }

    async fn make_due(&mut self, id: i64, at: DateTime<Utc>) -> Result<bool, StoreError> {
        self.conn
            .exec_drop(
                "UPDATE xdb_sys_tasks SET fire_at = ? WHERE id = ? AND lease_owner IS NULL",
                vec![time_value(at), Value::from(id)],
            )
            .await?;
        Ok(self.conn.affected() == 1)
    }

    async fn park(
        &mut self,
        id: i64,
        owner: Option<&str>,
        reason: ParkReason,
        error: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        // The copy reads the row with a lock, so no claim moves it before it is deleted.
        self.conn
            .exec_drop(
                format!(
                    "INSERT INTO xdb_sys_parked_tasks ({MOVED_COLUMNS}, reason, error, parked_at) \
                     SELECT {MOVED_COLUMNS}, ?, ?, ? FROM xdb_sys_tasks \
                     WHERE id = ? AND lease_owner <=> ?"
                ),
                vec![
                    Value::from(reason.as_str()),
                    Value::from(error),
                    time_value(now),
                    Value::from(id),
                    Value::from(owner),
                ],
            )
            .await?;
        if self.conn.affected() != 1 {
            return Ok(false);
        }
        self.conn
            .exec_drop(
                "DELETE FROM xdb_sys_tasks WHERE id = ? AND lease_owner <=> ?",
                (id, owner),
            )
            .await?;
        if self.conn.affected() != 1 {
            return Err(StoreError::Stale(format!(
                "task {id} moved while being set aside"
            )));
        }
        Ok(true)
    }

    async fn unpark(&mut self, id: i64, due: Option<DateTime<Utc>>) -> Result<bool, StoreError> {
        self.conn
            .exec_drop(
                format!(
                    "INSERT INTO xdb_sys_tasks ({MOVED_COLUMNS}) \
                     SELECT id, task_type, COALESCE(?, fire_at), process_execution_id, state_id, \
                       state_execution_number, timer_index, attempt, first_attempt_at, info \
                     FROM xdb_sys_parked_tasks WHERE id = ?"
                ),
                vec![due.map(time_value).unwrap_or(Value::NULL), Value::from(id)],
            )
            .await?;
        if self.conn.affected() != 1 {
            return Ok(false);
        }
        self.conn
            .exec_drop("DELETE FROM xdb_sys_parked_tasks WHERE id = ?", (id,))
            .await?;
        Ok(true)
    }

    async fn delete_unheld_task(&mut self, id: i64) -> Result<(), StoreError> {
        self.conn
            .exec_drop(
                "DELETE FROM xdb_sys_tasks WHERE id = ? AND lease_owner IS NULL",
                (id,),
            )
            .await?;
        self.conn
            .exec_drop("DELETE FROM xdb_sys_parked_tasks WHERE id = ?", (id,))
            .await?;
        Ok(())
    }

    async fn delete_parked(&mut self, process: Uuid) -> Result<(), StoreError> {
        self.conn
            .exec_drop(
                "DELETE FROM xdb_sys_parked_tasks WHERE process_execution_id = ?",
                (process.to_string(),),
            )
            .await?;
        Ok(())
    }

    async fn count_refused(&mut self, process: Uuid) -> Result<u64, StoreError> {
        let count: Option<u64> = self
            .conn
            .exec_first(
                "SELECT count(*) FROM xdb_sys_parked_tasks \
                 WHERE process_execution_id = ? AND reason = 'REFUSED'",
                (process.to_string(),),
            )
            .await?;
        Ok(count.unwrap_or(0))
    }
}
