//! XDB persistence: the services' transactional operations, split by who uses them
//! ([`ProcessApi`] for the API service, [`TaskSource`] for task sources, [`Transitions`]
//! for the handlers, [`InstanceRegistry`] for the cluster; [`ProcessStore`] is all four).
//!
//! Each operation loads and locks the rows it needs, asks `xdb-engine` for a plan and
//! applies the plan in the same transaction, together with the user's business-row
//! writes. Operations are written once over narrow per-table traits; a dialect supplies
//! statements, conversions and locking. This crate owns SQL; it must never decide
//! process semantics itself.
//!
//! Two dialects implement them: [`postgres::PostgresStore`] and [`mysql::MySqlStore`]
//! (tested on MariaDB 10.11 only; MySQL 8 speaks the same protocol but is untested);
//! [`connect`] picks one by the URL's dialect.

mod batch_store;
mod batches;
mod business_table;
mod claimed_call;
mod columns;
mod conflict_retry;
mod continuation;
mod controls;
mod database_health;
mod db_clock;
mod definition_registry;
mod error;
mod fair_turns;
mod fired_timer;
#[cfg(test)]
mod fixtures;
mod flow_limit_store;
mod generic_store;
#[cfg(test)]
mod idle_limit_tests;
pub mod mysql;
mod notifications;
mod operations;
mod plan_writes;
pub mod postgres;
mod query;
#[cfg(test)]
mod read_only_tests;
pub mod receipts;
pub mod reprioritize;
mod run_limits;
mod schedule_store;
mod session_limits;
mod sql;
mod sql_tables;
mod steps;
mod store;
mod tables;
mod task_claim;
pub mod trace_context;

use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

pub use batch_store::*;
pub use database_health::{DatabaseHealth, DatabaseProbe, PROBE_EVERY, PROBE_LIMIT};
pub use db_clock::DatabaseClock;
pub use definition_registry::*;
pub use error::{FailureClass, StoreError};
pub use flow_limit_store::FlowLimitStore;
pub use notifications::{Listen, Notification, Notifications};
pub use query::{reads_business_row, QueryTable};
pub use schedule_store::*;
pub use store::*;
pub use task_claim::TaskClaim;

/// A client's execution id, checked.
pub(crate) fn parse_execution_id(text: &str) -> Result<Uuid, StoreError> {
    Uuid::parse_str(text).map_err(|_| {
        StoreError::Decide(xdb_engine::decide::DecideError::Invalid(
            xdb_engine::validation::ValidationError::new("processExecutionId", "is not a UUID"),
        ))
    })
}

/// Whether a failed state API attempt may be retried (see
/// [`Transitions::state_api_given_up`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// As the state's retry policy says.
    ByPolicy,
    /// Not at all: the failure recovery applies now.
    Never,
}

/// How [`connect_with`] sets a store up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreOptions {
    /// Most connections the pool opens.
    pub pool_size: usize,
    /// When set, a transition recorded for a task owner leases the next task due now to
    /// that owner for this long, and returns it in [`Applied::continuation`]. The async
    /// service sets its lease here; the API service leaves it unset.
    pub continuation_lease: Option<Duration>,
    /// When set, an operation that waits longer than this for a connection of the main
    /// pool fails with [`StoreError::Overloaded`], having done nothing. The API service
    /// sets it (a slow database becomes a quick refusal); unset, operations wait.
    pub pool_wait: Option<Duration>,
    /// The server ends a session idle inside a transaction for this long, giving back
    /// its locks (see `session_limits`). The default covers an RPC's worker call; a
    /// store that runs no RPC (the async service's) sets
    /// [`IDLE_IN_TRANSACTION_WITHOUT_RPC`], so that an instance the network cut off
    /// mid-transition blocks the executions it locked for seconds, not a minute.
    pub idle_in_transaction: Duration,
    /// The longest time limit this store's filtered reads are given (the API's
    /// `api.query_timeout_ms`, the async service's batch page). The service's own timer
    /// cancels a read past its limit; on PostgreSQL the query lane's sessions also carry
    /// a server-side `statement_timeout` of [`QUERY_BACKSTOP_MARGIN`] more, so a scan
    /// whose service died mid-read still ends (MySQL's limit is in the statement).
    pub longest_query: Duration,
}

/// How much longer than [`StoreOptions::longest_query`] the server lets a filtered read
/// run: the service's timer, which starts first, always ends it sooner while it lives.
pub const QUERY_BACKSTOP_MARGIN: Duration = Duration::from_secs(1);

pub use session_limits::IDLE_IN_TRANSACTION_WITHOUT_RPC;

impl StoreOptions {
    /// The defaults with a pool of at most `pool_size` connections.
    pub fn with_pool_size(pool_size: usize) -> Self {
        Self {
            pool_size,
            ..Self::default()
        }
    }

    /// Connections of the timekeeping lane (see [`tables::Lane`]): half as many as the
    /// main pool's (at least two). Every timer that comes due is fired through it, at
    /// the rate the main pool created them, so a narrower lane would become the timers'
    /// own backlog.
    pub(crate) fn timekeeping_connections(&self) -> usize {
        (self.pool_size / 2).max(2)
    }

    /// Connections of the query lane (see [`tables::Lane::Query`]): a quarter of the
    /// main pool's (at least two). More filtered reads at once wait for one, up to
    /// `pool_wait`.
    pub(crate) fn query_connections(&self) -> usize {
        (self.pool_size / 4).max(2)
    }
}

/// [`StoreOptions::longest_query`]'s default: the async service's batch page limit.
pub const DEFAULT_LONGEST_QUERY: Duration = Duration::from_secs(30);

impl Default for StoreOptions {
    /// A pool of four connections, no continuations leased.
    fn default() -> Self {
        Self {
            pool_size: 4,
            continuation_lease: None,
            pool_wait: None,
            idle_in_transaction: session_limits::IDLE_IN_TRANSACTION,
            longest_query: DEFAULT_LONGEST_QUERY,
        }
    }
}

/// Connects a store of at most `pool_size` connections, choosing the dialect as
/// [`xdb_config::DatabaseUrl`] reads the URL: `postgres://`/`postgresql://` (or a libpq
/// `key=value` string) → PostgreSQL, `mysql://`/`mariadb://` → MySQL/MariaDB.
pub async fn connect(
    database_url: &str,
    pool_size: usize,
) -> Result<Arc<dyn ProcessStore>, StoreError> {
    connect_with(database_url, StoreOptions::with_pool_size(pool_size)).await
}

/// [`connect`] with every option.
pub async fn connect_with(
    database_url: &str,
    options: StoreOptions,
) -> Result<Arc<dyn ProcessStore>, StoreError> {
    let url = xdb_config::DatabaseUrl::parse(database_url).map_err(error::invalid_database_url)?;
    match url.dialect() {
        xdb_config::Dialect::Postgres => Ok(Arc::new(
            postgres::PostgresStore::connect_with(url.as_str(), options).await?,
        )),
        xdb_config::Dialect::MySql => Ok(Arc::new(
            mysql::MySqlStore::connect_with(url.as_str(), options).await?,
        )),
    }
}
