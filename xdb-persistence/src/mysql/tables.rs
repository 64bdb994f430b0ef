//! MySQL/MariaDB's connection for the per-table traits of [`crate::tables`] (written
//! once in `sql_tables/` over its [`crate::sql::SqlConn`]), and the dialect: which of
//! the generic forms it takes (the plan writer of `sql_tables::plan_rows`, the batched
//! transitions and first starts) and the start of a task's transition.
//!
//! One implementation serves a transaction and a plain connection: statements outside a
//! transaction run on a pooled [`Conn`], autocommitted.

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Transaction as MySqlTransaction};
use xdb_engine::{ProcessExecution, StateExecution, StateExecutionId, Task};

use super::MySqlStore;
use crate::continuation::LeaseTo;
use crate::sql::SqlConn;
use crate::sql_tables::process_rows::{self, NewExecutionRow};
use crate::sql_tables::transition_batch::Batches;
use crate::tables::{Dialect, Lane, PlanWriter, TaskRows, Transaction};
use crate::StoreError;

/// Statements on a connection `Q` (a transaction or a plain connection) of `store`.
pub struct MySqlRows<Q> {
    pub(super) conn: Q,
    pub(super) store: MySqlStore,
}

/// What the last statement did: inherent on both connection types, not part of
/// [`Queryable`].
pub trait AffectedRows {
    /// The rows it changed (matched, see `CLIENT_FOUND_ROWS`).
    fn affected(&self) -> u64;
    /// The `AUTO_INCREMENT` id of the first row it inserted.
    fn last_id(&self) -> Option<u64>;
}

impl AffectedRows for Conn {
    fn affected(&self) -> u64 {
        self.affected_rows()
    }

    fn last_id(&self) -> Option<u64> {
        self.last_insert_id()
    }
}

impl AffectedRows for MySqlTransaction<'_> {
    fn affected(&self) -> u64 {
        self.affected_rows()
    }

    fn last_id(&self) -> Option<u64> {
        self.last_insert_id()
    }
}

impl Dialect for MySqlStore {
    type Tx = MySqlRows<MySqlTransaction<'static>>;
    type Session = MySqlRows<Conn>;

    async fn begin(&self, lane: Lane) -> Result<Self::Tx, StoreError> {
        let conn = match lane {
            Lane::Main | Lane::Query => MySqlStore::begin(self).await?,
            Lane::Timekeeping => MySqlStore::begin_timekeeping(self).await?,
        };
        Ok(MySqlRows {
            conn,
            store: self.clone(),
        })
    }

    /// Both lanes' batches on the batch pool, which has a connection for each.
    async fn begin_batch(&self, _lane: Lane) -> Result<Self::Tx, StoreError> {
        Ok(MySqlRows {
            conn: MySqlStore::begin_batch(self).await?,
            store: self.clone(),
        })
    }

    async fn session(&self, lane: Lane) -> Result<Self::Session, StoreError> {
        let conn = match lane {
            Lane::Main | Lane::Query => self.within_pool_wait(self.pool().get_conn()).await?,
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

    fn run_limits(&self) -> &crate::run_limits::RunLimits {
        &self.run_limits
    }

    fn query_syntax(&self) -> &'static dyn crate::query::QuerySyntax {
        if self.mariadb {
            &super::query_syntax::MariaDbSyntax
        } else {
            &super::query_syntax::MySqlSyntax
        }
    }

    fn transitions_as_read(&self) -> bool {
        self.batched_transitions()
    }

    fn batches(&self) -> Option<&Batches<Self>> {
        Some(&self.batches)
    }
}

impl<Q: Queryable + AffectedRows + Sync> NewExecutionRow for MySqlRows<Q> {
    async fn insert_new_execution(
        &mut self,
        execution: &ProcessExecution,
    ) -> Result<(), StoreError> {
        process_rows::insert_executions(self, &[execution]).await
    }
}

/// The generic plan writer.
impl PlanWriter for MySqlRows<MySqlTransaction<'static>> {}

impl Transaction for MySqlRows<MySqlTransaction<'static>> {
    /// The process and state rows locked by one statement, then the task taken.
    async fn lock_for_task(
        &mut self,
        task: &Task,
        owner: &str,
        state: &StateExecutionId,
    ) -> Result<(ProcessExecution, Option<StateExecution>), StoreError> {
        let id = task.process_execution_id;
        let locked = process_rows::process_and_state(self, id, state, true)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("process execution {id} not found")))?;
        self.take_task(task, owner).await?;
        Ok(locked)
    }

    /// MariaDB's `idle_transaction_timeout` is a session setting, so the pooled
    /// connection's own is set back afterwards (`None`). MySQL has no such limit: its
    /// sessions keep `wait_timeout`'s.
    async fn limit_idle(&mut self, limit: Option<std::time::Duration>) -> Result<(), StoreError> {
        if !self.store.is_mariadb() {
            return Ok(());
        }
        let limit = limit.unwrap_or(self.store.idle_in_transaction());
        // Whole seconds, rounded up: a limit is never shortened below what was asked.
        let seconds = limit.as_secs() + u64::from(limit.subsec_nanos() > 0);
        let sql = format!("SET SESSION idle_transaction_timeout = {}", seconds.max(1));
        self.execute(&sql, &[]).await.map(drop)
    }

    async fn commit(self) -> Result<(), StoreError> {
        Ok(self.conn.commit().await?)
    }
}
