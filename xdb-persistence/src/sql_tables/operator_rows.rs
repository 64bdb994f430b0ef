//! [`OperatorRows`]: an execution's tasks, states and queues as operators see them, and
//! the moves of tasks in and out of `xdb_sys_parked_tasks`.

use chrono::{DateTime, Utc};
use uuid::Uuid;
use xdb_engine::StateExecution;
use xdb_protocol::PauseInfo;

use crate::columns::{
    read_state, read_task, read_task_with_info, ColumnReader, STATE_COLUMNS, TASK_COLUMNS,
};
use crate::sql::{Param, SqlConn, SqlKind};
use crate::tables::{OperatorRows, ParkReason, TaskView};
use crate::StoreError;

/// A task's lease owner, matched also when both are NULL.
fn lease_owner_is(kind: SqlKind) -> &'static str {
    kind.pick("lease_owner IS NOT DISTINCT FROM ?", "lease_owner <=> ?")
}

/// Moves a task into `xdb_sys_parked_tasks`: PostgreSQL in one statement; MySQL copies
/// (reading the row with a lock, so that no claim moves it) and then deletes.
/// Parameters: id, owner, reason, error, time.
fn park_statements(kind: SqlKind) -> Vec<String> {
    let owner = lease_owner_is(kind);
    let parked = "INSERT INTO xdb_sys_parked_tasks (id, task_type, fire_at, \
        process_execution_id, state_id, state_execution_number, timer_index, attempt, \
        first_attempt_at, info, reason, error, parked_at)";
    match kind {
        SqlKind::Postgres => vec![format!(
            "WITH moved AS (DELETE FROM xdb_sys_tasks WHERE id = ? AND {owner} \
               RETURNING {TASK_COLUMNS}) \
             {parked} SELECT {TASK_COLUMNS}, ?, ?, ? FROM moved"
        )],
        SqlKind::MySql => vec![
            format!(
                "{parked} SELECT {TASK_COLUMNS}, ?, ?, ? FROM xdb_sys_tasks \
                 WHERE id = ? AND {owner}"
            ),
            format!("DELETE FROM xdb_sys_tasks WHERE id = ? AND {owner}"),
        ],
    }
}

/// And back, unleased, due at the parameter's time or when it was due. Parameters: id,
/// due.
/// The task takes its execution's priority and fairness key again.
fn unpark_statements(kind: SqlKind) -> Vec<String> {
    let restored = format!(
        "INSERT INTO xdb_sys_tasks ({TASK_COLUMNS}, priority, fairness_key, fairness_weight)"
    );
    let due_columns = |from: &str| {
        let of_execution = |column: &str, default: &str| {
            format!(
                "COALESCE((SELECT p.{column} FROM xdb_sys_process_executions p \
                           WHERE p.id = {from}.process_execution_id), {default})"
            )
        };
        let priority = of_execution("priority", &xdb_protocol::priority::DEFAULT.to_string());
        // Only state tasks are shared by key (see `columns::task_fairness`).
        let key = of_execution("fairness_key", "''");
        let weight = of_execution(
            "fairness_weight",
            &xdb_protocol::fairness::DEFAULT_WEIGHT.to_string(),
        );
        format!(
            "id, task_type, COALESCE(?, fire_at), process_execution_id, state_id, \
             state_execution_number, timer_index, attempt, first_attempt_at, info, {priority}, \
             CASE WHEN {from}.task_type IN ('WAIT_UNTIL', 'EXECUTE') THEN {key} ELSE '' END, \
             {weight}"
        )
    };
    match kind {
        SqlKind::Postgres => vec![format!(
            "WITH moved AS (DELETE FROM xdb_sys_parked_tasks WHERE id = ? \
               RETURNING {TASK_COLUMNS}) \
             {restored} SELECT {} FROM moved",
            due_columns("moved")
        )],
        SqlKind::MySql => vec![
            format!(
                "{restored} SELECT {} FROM xdb_sys_parked_tasks WHERE id = ?",
                due_columns("xdb_sys_parked_tasks")
            ),
            "DELETE FROM xdb_sys_parked_tasks WHERE id = ?".to_owned(),
        ],
    }
}

fn task_view(row: &mut impl ColumnReader) -> Result<TaskView, StoreError> {
    TaskView::decode(
        read_task_with_info(row)?,
        row.optional_text()?,
        row.optional_text()?,
        row.optional_text()?,
    )
}

fn count(row: &mut impl ColumnReader) -> Result<u64, StoreError> {
    Ok(row.bigint()?.max(0) as u64)
}

impl<C: SqlConn> OperatorRows for C {
    async fn backing_off_of(
        &mut self,
        processes: &[Uuid],
        now: DateTime<Utc>,
    ) -> Result<Vec<xdb_engine::Task>, StoreError> {
        if processes.is_empty() {
            return Ok(Vec::new());
        }
        let mut params: Vec<Param<'_>> = processes.iter().map(|id| Param::Uuid(*id)).collect();
        let list = crate::sql_tables::in_list::in_list(&mut params, processes.len());
        params.push(now.into());
        let sql = format!(
            "SELECT {TASK_COLUMNS} FROM xdb_sys_tasks \
             WHERE process_execution_id IN ({list}) AND task_type IN ('WAIT_UNTIL', 'EXECUTE') \
               AND attempt > 1 AND lease_owner IS NULL AND fire_at > ? ORDER BY fire_at"
        );
        let rows = self.query(&sql, &params).await?;
        rows.iter()
            .map(|row| read_task(&mut C::columns(row, 0)))
            .collect()
    }

    async fn tasks_of(&mut self, process: Uuid, lock: bool) -> Result<Vec<TaskView>, StoreError> {
        let lock = if lock { " FOR UPDATE" } else { "" };
        // Two statements: PostgreSQL locks no rows of a UNION.
        let tables = [
            "lease_owner, CAST(NULL AS CHAR), CAST(NULL AS CHAR) FROM xdb_sys_tasks",
            "CAST(NULL AS CHAR), reason, error FROM xdb_sys_parked_tasks",
        ];
        let mut views = Vec::new();
        for table in tables {
            let sql =
                format!("SELECT {TASK_COLUMNS}, {table} WHERE process_execution_id = ?{lock}");
            for row in self.query(&sql, &[process.into()]).await? {
                views.push(task_view(&mut C::columns(&row, 0))?);
            }
        }
        views.sort_by_key(|view| view.task.id);
        Ok(views)
    }

    async fn states_of(&mut self, process: Uuid) -> Result<Vec<StateExecution>, StoreError> {
        let sql = format!(
            "SELECT {STATE_COLUMNS} FROM xdb_sys_async_state_executions \
             WHERE process_execution_id = ? \
             ORDER BY created_at, state_id, state_execution_number"
        );
        let rows = self.query(&sql, &[process.into()]).await?;
        rows.iter()
            .map(|row| read_state(&mut C::columns(row, 0)))
            .collect()
    }

    async fn queued_counts(&mut self, process: Uuid) -> Result<Vec<(String, u64)>, StoreError> {
        let rows = self
            .query(
                "SELECT queue_name, count(*) FROM xdb_sys_local_queue_messages \
                 WHERE process_execution_id = ? AND consumed_by IS NULL \
                 GROUP BY queue_name ORDER BY queue_name",
                &[process.into()],
            )
            .await?;
        rows.iter()
            .map(|row| {
                let mut columns = C::columns(row, 0);
                Ok((columns.text()?, count(&mut columns)?))
            })
            .collect()
    }

    async fn set_paused(
        &mut self,
        process: Uuid,
        paused: Option<&PauseInfo>,
    ) -> Result<(), StoreError> {
        let paused = paused.map(|p| serde_json::to_value(p).expect("model types serialize"));
        self.execute(
            "UPDATE xdb_sys_process_executions SET paused = ? WHERE id = ?",
            &[Param::Json(paused), process.into()],
        )
        .await?;
        Ok(())
    }

    async fn reorder(
        &mut self,
        process: Uuid,
        priority: u8,
        fairness: Option<&xdb_engine::Fairness>,
    ) -> Result<(), StoreError> {
        let priority = i32::from(priority);
        let (key, weight) = crate::columns::fairness_columns(fairness);
        self.execute(
            "UPDATE xdb_sys_process_executions \
             SET priority = ?, fairness_key = ?, fairness_weight = ? WHERE id = ?",
            &[priority.into(), key.into(), weight.into(), process.into()],
        )
        .await?;
        // The literal default types the CASE as an integer for PostgreSQL.
        let sql = format!(
            "UPDATE xdb_sys_tasks SET priority = ?, \
               fairness_key = CASE WHEN task_type IN ('WAIT_UNTIL', 'EXECUTE') \
                 THEN ? ELSE '' END, \
               fairness_weight = CASE WHEN task_type IN ('WAIT_UNTIL', 'EXECUTE') \
                 THEN ? ELSE {} END \
             WHERE process_execution_id = ?",
            xdb_protocol::fairness::DEFAULT_WEIGHT
        );
        self.execute(
            &sql,
            &[priority.into(), key.into(), weight.into(), process.into()],
        )
        .await?;
        Ok(())
    }

    async fn make_due(&mut self, id: i64, at: DateTime<Utc>) -> Result<bool, StoreError> {
        let made = self
            .execute(
                "UPDATE xdb_sys_tasks SET fire_at = ? WHERE id = ? AND lease_owner IS NULL",
                &[at.into(), id.into()],
            )
            .await?;
        Ok(made == 1)
    }

    async fn park(
        &mut self,
        id: i64,
        owner: Option<&str>,
        reason: ParkReason,
        error: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let (task, owner) = (Param::from(id), Param::Text(owner));
        let details = [reason.as_str().into(), Param::Text(error), now.into()];
        let statements = park_statements(C::KIND);
        let (copy, deletes) = statements.split_first().expect("at least one statement");
        let copy_params: Vec<Param<'_>> = match C::KIND {
            SqlKind::Postgres => [task.clone(), owner.clone()]
                .into_iter()
                .chain(details)
                .collect(),
            SqlKind::MySql => details
                .into_iter()
                .chain([task.clone(), owner.clone()])
                .collect(),
        };
        if self.execute(copy, &copy_params).await? != 1 {
            return Ok(false);
        }
        for delete in deletes {
            if self.execute(delete, &[task.clone(), owner.clone()]).await? != 1 {
                return Err(StoreError::Stale(format!(
                    "task {id} moved while being set aside"
                )));
            }
        }
        Ok(true)
    }

    async fn unpark(&mut self, id: i64, due: Option<DateTime<Utc>>) -> Result<bool, StoreError> {
        let statements = unpark_statements(C::KIND);
        let (copy, deletes) = statements.split_first().expect("at least one statement");
        let copy_params =
            C::KIND.pick([id.into(), Param::Time(due)], [Param::Time(due), id.into()]);
        if self.execute(copy, &copy_params).await? != 1 {
            return Ok(false);
        }
        for delete in deletes {
            self.execute(delete, &[id.into()]).await?;
        }
        Ok(true)
    }

    async fn delete_unheld_task(&mut self, id: i64) -> Result<(), StoreError> {
        for sql in [
            "DELETE FROM xdb_sys_tasks WHERE id = ? AND lease_owner IS NULL",
            "DELETE FROM xdb_sys_parked_tasks WHERE id = ?",
        ] {
            self.execute(sql, &[id.into()]).await?;
        }
        Ok(())
    }

    async fn delete_task(&mut self, id: i64) -> Result<(), StoreError> {
        for sql in [
            "DELETE FROM xdb_sys_tasks WHERE id = ?",
            "DELETE FROM xdb_sys_parked_tasks WHERE id = ?",
        ] {
            self.execute(sql, &[id.into()]).await?;
        }
        Ok(())
    }

    async fn count_refused(&mut self, process: Uuid) -> Result<u64, StoreError> {
        let rows = self
            .query(
                "SELECT count(*) FROM xdb_sys_parked_tasks \
                 WHERE process_execution_id = ? AND reason <> 'PAUSED'",
                &[process.into()],
            )
            .await?;
        match rows.first() {
            Some(row) => count(&mut C::columns(row, 0)),
            None => Ok(0),
        }
    }
}
