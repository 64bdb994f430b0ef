//! The per-table traits of [`crate::tables`] in MySQL/MariaDB statements.
//!
//! One implementation serves a transaction and a plain connection: statements outside a
//! transaction run on a pooled [`Conn`], autocommitted.

use chrono::{DateTime, Utc};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Row, Transaction as MySqlTransaction, Value};
use uuid::Uuid;
use xdb_engine::{ProcessExecution, StateExecution, StateExecutionId, Task, TransitionPlan};
use xdb_protocol::{
    GlobalAttributeConfig, GlobalAttributeValue, LocalAttributeValue, LockType,
    ProcessExecutionSummary, ProcessStatus,
};

use super::rows::{
    execution_values, get, get_opt_time, get_time, get_uuid, joined_process_and_state,
    process_and_state_from_row, process_from_row, time_value, uuid_value, PROCESS_COLUMNS,
};
use super::{apply_plan, locks, MySqlStore};
use crate::continuation::LeaseTo;
use crate::sql_tables::local_attributes;
use crate::tables::{
    Announce, AttributeRows, Dialect, Finish, Lane, ListQuery, PlanWriter, ProcessRows, TaskRows,
    Transaction,
};
use crate::{Applied, StoreError};

/// Statements on a connection `Q` (a transaction or a plain connection) of `store`.
pub struct MySqlRows<Q> {
    pub(super) conn: Q,
    pub(super) store: MySqlStore,
}

/// The rows the last statement changed (matched, see `CLIENT_FOUND_ROWS`): inherent on
/// both connection types, not part of [`Queryable`].
pub trait AffectedRows {
    fn affected(&self) -> u64;
}

impl AffectedRows for Conn {
    fn affected(&self) -> u64 {
        self.affected_rows()
    }
}

impl AffectedRows for MySqlTransaction<'_> {
    fn affected(&self) -> u64 {
        self.affected_rows()
    }
}

impl Dialect for MySqlStore {
    type Tx = MySqlRows<MySqlTransaction<'static>>;
    type Session = MySqlRows<Conn>;

    async fn begin(&self, lane: Lane) -> Result<Self::Tx, StoreError> {
        let conn = match lane {
            Lane::Main => MySqlStore::begin(self).await?,
            Lane::Timekeeping => MySqlStore::begin_timekeeping(self).await?,
        };
        Ok(MySqlRows {
            conn,
            store: self.clone(),
        })
    }

    async fn session(&self, lane: Lane) -> Result<Self::Session, StoreError> {
        let conn = match lane {
            Lane::Main => self.within_pool_wait(self.pool().get_conn()).await?,
            Lane::Timekeeping => self.timekeeping_pool().get_conn().await?,
        };
        Ok(MySqlRows {
            conn,
            store: self.clone(),
        })
    }

    fn lease_to<'a>(&self, owner: &'a str) -> Option<LeaseTo<'a>> {
        MySqlStore::lease_to(self, owner)
    }

    async fn transition_as_read(
        &self,
        lane: Lane,
        task: &Task,
        owner: &str,
        call: &crate::StateCall,
        plan: &TransitionPlan,
        now: DateTime<Utc>,
    ) -> Result<Option<Applied>, StoreError> {
        super::transition_batch::transition_as_read(self, lane, task, owner, call, plan, now).await
    }

    fn transitions_as_read(&self) -> bool {
        self.batched_transitions()
    }

    async fn start_first_execution(
        &self,
        request: &xdb_protocol::ProcessExecutionStartRequest,
        new_id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Option<Uuid>, StoreError> {
        super::first_start::start_first_execution(self, request, new_id, now).await
    }
}

impl<Q: Queryable + AffectedRows + Sync> ProcessRows for MySqlRows<Q> {
    async fn lock_process(&mut self, id: Uuid) -> Result<ProcessExecution, StoreError> {
        locks::lock_process(&mut self.conn, id).await
    }

    async fn latest_execution(&mut self, process_id: &str) -> Result<Option<Uuid>, StoreError> {
        locks::latest_execution(&mut self.conn, process_id).await
    }

    async fn find_execution(
        &mut self,
        process_id: &str,
        execution_id: Option<Uuid>,
    ) -> Result<Option<ProcessExecution>, StoreError> {
        let row: Option<Row> = match execution_id {
            Some(id) => {
                self.conn
                    .exec_first(
                        format!(
                            "SELECT {PROCESS_COLUMNS} FROM xdb_sys_process_executions \
                             WHERE id = ? AND process_id = ?"
                        ),
                        (id.to_string(), process_id),
                    )
                    .await?
            }
            None => {
                self.conn
                    .exec_first(
                        format!(
                            "SELECT {PROCESS_COLUMNS} FROM xdb_sys_process_executions \
                             WHERE id = (SELECT process_execution_id \
                               FROM xdb_sys_latest_process_executions WHERE process_id = ?)"
                        ),
                        (process_id,),
                    )
                    .await?
            }
        };
        row.map(|row| process_from_row(&row)).transpose()
    }

    async fn list_executions(
        &mut self,
        query: &ListQuery<'_>,
    ) -> Result<Vec<(ProcessExecutionSummary, DateTime<Utc>)>, StoreError> {
        // Only the filters asked for go into the SQL (fixed fragments, values bound), so
        // MySQL can pick the index that matches; a handful of distinct statements results.
        let mut conditions = Vec::new();
        let mut params = Vec::new();
        if let Some(status) = query.status {
            conditions.push("status = ?");
            params.push(Value::from(status.as_str()));
        }
        if let Some(process_type) = query.process_type {
            conditions.push("process_type = ?");
            params.push(Value::from(process_type));
        }
        if let Some(process_id) = query.process_id {
            conditions.push("process_id = ?");
            params.push(Value::from(process_id));
        }
        if let Some(min) = query.start_min {
            conditions.push("start_time >= ?");
            params.push(time_value(min));
        }
        if let Some(max) = query.start_max {
            conditions.push("start_time < ?");
            params.push(time_value(max));
        }
        if let Some((start, id)) = query.after {
            conditions.push("(start_time < ? OR (start_time = ? AND id < ?))");
            params.extend([time_value(start), time_value(start), uuid_value(id)]);
        }
        params.push(Value::from(query.limit));
        let where_clause = if conditions.is_empty() {
            String::new()
        } else {
            format!("WHERE {} ", conditions.join(" AND "))
        };
        let sql = format!(
            "SELECT id, process_id, process_type, status, start_time, close_time, \
               status = 'RUNNING' AND paused IS NOT NULL AS paused \
             FROM xdb_sys_process_executions {where_clause}\
             ORDER BY start_time DESC, id DESC LIMIT ?"
        );
        let rows: Vec<Row> = self.conn.exec(sql, params).await?;
        rows.iter()
            .map(|row| {
                let start = get_time(row, "start_time")?;
                let status: String = get(row, "status")?;
                let summary = ProcessExecutionSummary {
                    process_execution_id: get_uuid(row, "id")?.to_string(),
                    process_id: get(row, "process_id")?,
                    process_type: get(row, "process_type")?,
                    status: ProcessStatus::parse(&status)
                        .ok_or_else(|| StoreError::Database(format!("unknown status {status}")))?,
                    start_timestamp_ms: start.timestamp_millis(),
                    close_timestamp_ms: get_opt_time(row, "close_time")?
                        .map(|t| t.timestamp_millis()),
                    paused: get(row, "paused")?,
                };
                Ok((summary, start))
            })
            .collect()
    }

    async fn claim_process_id(
        &mut self,
        process_id: &str,
        new_id: Uuid,
    ) -> Result<Option<ProcessExecution>, StoreError> {
        // The no-op ON DUPLICATE KEY UPDATE takes the row's exclusive lock at once;
        // INSERT IGNORE would take a shared one, and two starters upgrading it would
        // deadlock.
        self.conn
            .exec_drop(
                "INSERT INTO xdb_sys_latest_process_executions \
                   (process_id, process_execution_id) VALUES (?, ?) \
                 ON DUPLICATE KEY UPDATE process_execution_id = process_execution_id",
                (process_id, new_id.to_string()),
            )
            .await?;
        let latest: Option<String> = self
            .conn
            .exec_first(
                "SELECT process_execution_id FROM xdb_sys_latest_process_executions \
                 WHERE process_id = ? FOR UPDATE",
                (process_id,),
            )
            .await?;
        let latest = latest
            .ok_or_else(|| StoreError::Database("the latest-execution row vanished".into()))?;
        let latest = Uuid::parse_str(&latest)
            .map_err(|e| StoreError::Database(format!("corrupt row: {e}")))?;
        if latest == new_id {
            return Ok(None);
        }
        Ok(Some(
            locks::select_process(&mut self.conn, latest, false).await?,
        ))
    }

    async fn repoint_latest(&mut self, process_id: &str, new_id: Uuid) -> Result<(), StoreError> {
        self.conn
            .exec_drop(
                "UPDATE xdb_sys_latest_process_executions SET process_execution_id = ? \
                 WHERE process_id = ?",
                (new_id.to_string(), process_id),
            )
            .await?;
        Ok(())
    }

    async fn insert_execution(&mut self, execution: &ProcessExecution) -> Result<(), StoreError> {
        self.conn
            .exec_drop(
                "INSERT INTO xdb_sys_process_executions (id, process_id, process_type, \
                   worker_url, status, start_time, timeout_seconds, running_state_executions, \
                   state_execution_sequences, global_attribute_config) \
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                execution_values(execution),
            )
            .await?;
        Ok(())
    }

    async fn read_process(&mut self, id: Uuid) -> Result<ProcessExecution, StoreError> {
        locks::select_process(&mut self.conn, id, false).await
    }

    async fn read_process_and_state(
        &mut self,
        id: Uuid,
        state: &StateExecutionId,
    ) -> Result<Option<(ProcessExecution, Option<StateExecution>)>, StoreError> {
        let row: Option<Row> = self
            .conn
            .exec_first(
                joined_process_and_state(false),
                (state.state_id.as_str(), state.number, id.to_string()),
            )
            .await?;
        row.map(|row| process_and_state_from_row(&row)).transpose()
    }
}

impl<Q: Queryable + AffectedRows + Sync> AttributeRows for MySqlRows<Q> {
    async fn read_business_row(
        &mut self,
        config: &GlobalAttributeConfig,
        columns: &[String],
        lock: LockType,
    ) -> Result<Vec<GlobalAttributeValue>, StoreError> {
        crate::sql_tables::business_rows::read(self, config, columns, lock).await
    }

    async fn upsert_business_row(
        &mut self,
        config: &GlobalAttributeConfig,
        writes: &[GlobalAttributeValue],
    ) -> Result<(), StoreError> {
        crate::sql_tables::business_rows::upsert(self, config, writes).await
    }

    async fn read_local_attributes(
        &mut self,
        process: Uuid,
        keys: &[String],
        lock: LockType,
    ) -> Result<Vec<LocalAttributeValue>, StoreError> {
        local_attributes::read_local_attributes(self, process, keys, lock).await
    }

    async fn read_whole_business_row(
        &mut self,
        config: &GlobalAttributeConfig,
    ) -> Result<Option<serde_json::Map<String, serde_json::Value>>, StoreError> {
        crate::sql_tables::business_rows::read_whole_row(self, config).await
    }

    async fn all_local_attributes(
        &mut self,
        process: Uuid,
    ) -> Result<Vec<LocalAttributeValue>, StoreError> {
        local_attributes::all_local_attributes(self, process).await
    }
}

impl PlanWriter for MySqlRows<MySqlTransaction<'static>> {
    async fn apply_plan(
        &mut self,
        process: &ProcessExecution,
        plan: &TransitionPlan,
        now: DateTime<Utc>,
        _announce: Announce,
        lease_to: Option<LeaseTo<'_>>,
        _finish: Finish,
    ) -> Result<(Applied, bool), StoreError> {
        // No LISTEN/NOTIFY to announce with, and COMMIT is a statement of its own.
        let applied =
            apply_plan::apply_plan(&mut self.conn, &self.store, process, plan, now, lease_to)
                .await?;
        Ok((applied, false))
    }
}

impl Transaction for MySqlRows<MySqlTransaction<'static>> {
    /// The process and state rows locked by one statement, then the task taken.
    async fn lock_for_task(
        &mut self,
        task: &Task,
        owner: &str,
        state: &StateExecutionId,
    ) -> Result<(ProcessExecution, Option<StateExecution>), StoreError> {
        let id = task.process_execution_id;
        let row: Option<Row> = self
            .conn
            .exec_first(
                joined_process_and_state(true),
                (state.state_id.as_str(), state.number, id.to_string()),
            )
            .await?;
        let locked = row
            .map(|row| process_and_state_from_row(&row))
            .transpose()?
            .ok_or_else(|| StoreError::NotFound(format!("process execution {id} not found")))?;
        self.take_task(task, owner).await?;
        Ok(locked)
    }

    async fn commit(self) -> Result<(), StoreError> {
        Ok(self.conn.commit().await?)
    }
}
