//! PostgreSQL's connection for the per-table traits of [`crate::tables`] (written once
//! in `sql_tables/` over its [`crate::sql::SqlConn`]), and what stays its own: the
//! dialect, the plan writer, a new execution's row held for the next writes, and the
//! one-statement start of a task's transition.
//!
//! A transaction's BEGIN goes out with its first statement, in one round trip (see
//! `transaction`), and COMMIT with its last writes where nothing follows them.

use std::future::Future;
use std::time::Duration;

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;
use tokio_postgres::Row;
use uuid::Uuid;
use xdb_engine::{ProcessExecution, StateExecution, StateExecutionId, Task, TransitionPlan};
use xdb_protocol::ProcessExecutionStartRequest;

use super::apply_plan::{announcements, apply_plan_then, NOTIFY};
use super::pipeline::Pipeline;
use super::sql_conn::{once_form, run_once};
use super::transaction::Tx;
use super::{first_start, locks, task_transition, PostgresStore};
use crate::continuation::LeaseTo;
use crate::receipts::Receipt;
use crate::sql::{Param, SqlConn};
use crate::sql_tables::plan_rows;
use crate::sql_tables::process_rows::{self, NewExecutionRow};
use crate::tables::{
    lock_for_task_in_order, Announce, Dialect, Finish, Lane, PlanWriter, Transaction,
};
use crate::{Applied, StateCall, StoreError};

/// Statements on one pooled connection, in a transaction or outside one.
pub struct PgRows {
    pub(super) tx: Tx,
    /// BEGIN is still to be sent, with the next statement.
    pub(super) begin_pending: bool,
    /// COMMIT went out with the plan's writes.
    committed: bool,
    /// Writes that go out with the next plan's (or with COMMIT).
    pending: Pipeline,
    /// Plans, a task's lock and a new execution's row take the generic forms of
    /// `sql_tables` (see [`PostgresStore::without_one_statement_forms`]).
    generic: bool,
}

/// Runs `statement`, with BEGIN written right before it when still pending.
pub(super) async fn with_begin<T>(
    client: &Client,
    begin_pending: &mut bool,
    statement: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    if !std::mem::take(begin_pending) {
        return statement.await;
    }
    // `join!` polls in order: BEGIN is written before the statement.
    let (begun, answer) = futures::join!(client.batch_execute("BEGIN"), statement);
    begun?;
    answer
}

impl PgRows {
    /// Runs the statement `run` sends on this connection, with BEGIN right before it
    /// when still pending.
    pub(super) async fn on_client<'a, T, F>(
        &'a mut self,
        run: impl FnOnce(&'a Client) -> F,
    ) -> Result<T, StoreError>
    where
        F: Future<Output = Result<T, StoreError>> + 'a,
    {
        let client = self.tx.client();
        with_begin(client, &mut self.begin_pending, run(client)).await
    }
}

impl PostgresStore {
    fn lane(&self, lane: Lane) -> &deadpool_postgres::Pool {
        match lane {
            Lane::Main => self.pool(),
            Lane::Timekeeping => self.timekeeping_pool(),
            Lane::Query => self.query_pool(),
        }
    }
}

impl Dialect for PostgresStore {
    type Tx = PgRows;
    type Session = PgRows;

    async fn begin(&self, lane: Lane) -> Result<PgRows, StoreError> {
        Ok(PgRows {
            tx: Tx::on(self.lane(lane)).await?,
            begin_pending: true,
            committed: false,
            pending: Pipeline::default(),
            generic: !self.one_statement_forms(),
        })
    }

    async fn session(&self, lane: Lane) -> Result<PgRows, StoreError> {
        Ok(PgRows {
            tx: Tx::outside(self.lane(lane)).await?,
            begin_pending: false,
            committed: false,
            pending: Pipeline::default(),
            generic: !self.one_statement_forms(),
        })
    }

    /// The statement alone on a pooled connection, timed by the service: no transaction
    /// and no setting to send with it. Past `limit` the server is asked to cancel it and
    /// the connection is closed, never reused: a cancel request names the session, not
    /// the statement, so one that arrived late would cancel the next user's statement.
    async fn read_bounded(
        &self,
        lane: Lane,
        sql: &str,
        params: &[Param<'_>],
        limit: Duration,
    ) -> Result<Vec<Row>, StoreError> {
        let tx = Tx::outside(self.lane(lane)).await?;
        let client = tx.client();
        let read = async {
            let form = once_form(client, sql, params).await?;
            run_once(client, &form, params).await
        };
        if let Ok(rows) = tokio::time::timeout(limit, read).await {
            return rows;
        }
        let token = client.cancel_token();
        if let Err(error) = token.cancel_query(self.target.tls()).await {
            tracing::warn!(%error, "could not cancel a query past its time limit");
        }
        tx.close();
        Err(StoreError::TimedOut(format!(
            "the statement ran longer than {} ms and was cancelled",
            limit.as_millis()
        )))
    }

    fn lease_to<'a>(&self, owner: &'a str) -> Option<LeaseTo<'a>> {
        PostgresStore::lease_to(self, owner)
    }

    fn query_syntax(&self) -> &'static dyn crate::query::QuerySyntax {
        &super::query_syntax::PostgresSyntax
    }

    fn batch_wake_up(&self) -> Option<&'static str> {
        Some(super::notifications::NOTIFY_BATCHES)
    }

    fn run_limits(&self) -> &crate::run_limits::RunLimits {
        &self.run_limits
    }

    async fn transition_as_read(
        &self,
        lane: Lane,
        task: &Task,
        owner: &str,
        call: &StateCall,
        plan: &TransitionPlan,
        now: DateTime<Utc>,
    ) -> Result<Option<Applied>, StoreError> {
        let batches = match lane {
            Lane::Main | Lane::Query => self.batches(),
            Lane::Timekeeping => self.timekeeping_batches(),
        };
        task_transition::one_statement_transition(batches, self, task, owner, call, plan, now).await
    }

    async fn start_first_execution(
        &self,
        request: &ProcessExecutionStartRequest,
        new_id: Uuid,
        now: DateTime<Utc>,
        receipt: Option<&Receipt>,
    ) -> Result<Option<Uuid>, StoreError> {
        first_start::start_first_execution(self, request, new_id, now, receipt).await
    }

    fn transitions_as_read(&self) -> bool {
        self.one_statement_forms()
    }
}

/// Sent with the plan's writes that follow, in their statement.
impl NewExecutionRow for PgRows {
    async fn insert_new_execution(
        &mut self,
        execution: &ProcessExecution,
    ) -> Result<(), StoreError> {
        if self.generic {
            return process_rows::insert_executions(self, &[execution]).await;
        }
        self.pending = first_start::insert_execution(std::mem::take(&mut self.pending), execution);
        Ok(())
    }
}

impl PlanWriter for PgRows {
    async fn apply_plan(
        &mut self,
        process: &ProcessExecution,
        plan: &TransitionPlan,
        now: DateTime<Utc>,
        announce: Announce,
        lease_to: Option<LeaseTo<'_>>,
        finish: Finish,
    ) -> Result<(Applied, bool), StoreError> {
        if self.generic {
            let applied = plan_rows::apply_plan(self, process, plan, now, lease_to).await?;
            let closed = applied.closed_outcome.as_deref();
            for (channel, payload) in announcements(plan, announce, closed) {
                self.execute(NOTIFY, &[channel.into(), payload.as_str().into()])
                    .await?;
            }
            return Ok((applied, false));
        }
        let client = self.tx.client();
        let apply = apply_plan_then(
            client,
            std::mem::take(&mut self.pending),
            process,
            plan,
            now,
            announce,
            lease_to,
            finish,
        );
        let (applied, committed) = with_begin(client, &mut self.begin_pending, apply).await?;
        self.committed |= committed;
        plan_rows::write_attributes(self, process, &plan.attribute_writes).await?;
        Ok((applied, committed))
    }
}

impl Transaction for PgRows {
    /// The process row, the task and the state row in one statement.
    async fn lock_for_task(
        &mut self,
        task: &Task,
        owner: &str,
        state: &StateExecutionId,
    ) -> Result<(ProcessExecution, Option<StateExecution>), StoreError> {
        if self.generic {
            return lock_for_task_in_order(self, task, owner, state).await;
        }
        self.on_client(|client| locks::lock_for_task(client, task, owner, state))
            .await
    }

    /// `SET LOCAL`: the limit ends with the transaction, whichever way it ends.
    async fn limit_idle(&mut self, limit: Option<std::time::Duration>) -> Result<(), StoreError> {
        let Some(limit) = limit else {
            return Ok(());
        };
        let sql = format!(
            "SET LOCAL idle_in_transaction_session_timeout = {}",
            limit.as_millis().max(1)
        );
        self.execute(&sql, &[]).await.map(drop)
    }

    async fn commit(mut self) -> Result<(), StoreError> {
        if !self.pending.is_empty() {
            let client = self.tx.client();
            let writes = std::mem::take(&mut self.pending);
            let run = writes.run(client, true);
            with_begin(client, &mut self.begin_pending, run).await?;
            self.tx.committed();
            return Ok(());
        }
        if self.committed {
            self.tx.committed();
            Ok(())
        } else if self.begin_pending {
            // Nothing was sent: nothing to commit. The connection holds no transaction.
            self.tx.committed();
            Ok(())
        } else {
            self.tx.commit().await
        }
    }
}
