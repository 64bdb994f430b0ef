//! The MySQL / MariaDB implementation of [`ProcessStore`](crate::ProcessStore).
//!
//! What is written once over `SqlConn` (`sql.rs`, `sql_tables/`: the plan writer and
//! the batched transitions and first starts included) runs here through `sql_conn`;
//! this folder keeps the connection, the claim, and `global_attributes`, the
//! conversions of the user's column types. Differences from the PostgreSQL store, all
//! invisible through the trait:
//! - sessions run in UTC (`time_zone = '+00:00'`), strict SQL mode and READ COMMITTED,
//!   PostgreSQL's default isolation, so locking reads behave alike;
//! - affected-row counts are *matched* rows (`CLIENT_FOUND_ROWS`), as in PostgreSQL;
//! - no push notifications: [`TaskSource::listen`](crate::TaskSource::listen) is
//!   `None`, consumers poll (and the services notify each other);
//! - no `UPDATE … RETURNING`: claiming tasks is a plain read, then `SELECT … FOR UPDATE
//!   SKIP LOCKED` of those by id, then `UPDATE`, in one transaction (see
//!   `sql_tables::leases::claim_due` for why the range is not read locked).

mod compound;
mod error;
mod global_attributes;
pub(crate) mod query_syntax;
mod rows;
mod sql_conn;
mod tables;
mod task_queue;

use std::sync::Arc;
use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{Opts, OptsBuilder, Pool, PoolConstraints, PoolOpts, Transaction, TxOpts};
use xdb_db_connect::MySqlTarget;

use crate::db_clock::{ClockSource, DatabaseClock, Sample};
use crate::error::invalid_database_url;
use crate::sql_tables::transition_batch::{Batches, BATCH_CONNECTIONS};
use crate::tables::Answer;
use crate::{StoreError, StoreOptions};

/// Session settings of every pooled connection.
fn session_setup(idle_in_transaction: Duration) -> Vec<String> {
    vec![
        // DATETIME(6) columns hold UTC; this makes NOW() and TIMESTAMP columns agree.
        "SET time_zone = '+00:00'".into(),
        // Refuse bad values instead of truncating them, whatever the server's default.
        "SET SESSION sql_mode = 'STRICT_TRANS_TABLES,STRICT_ALL_TABLES,NO_ZERO_IN_DATE,\
         NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'"
            .into(),
        // PostgreSQL's default: no gap locks, each statement sees the latest commits.
        "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED".into(),
        // A session whose client the network lost gives its locks back (see
        // `session_limits`). MariaDB (10.3+) runs the `/*M!100300 … */` part, MySQL,
        // which has no such setting, reads it as a comment.
        format!(
            "SET SESSION /*M!100300 idle_transaction_timeout = {}, */ \
             innodb_lock_wait_timeout = 50",
            idle_in_transaction.as_secs()
        ),
    ]
}

/// Pooled connections idle for longer than this are closed.
const IDLE_CONNECTION_TTL: Duration = Duration::from_secs(300);

/// How long [`MySqlStore::connect`] waits for the first connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A pooled MySQL/MariaDB store. Cloning shares the pools.
#[derive(Clone)]
pub struct MySqlStore {
    pool: Pool,
    timekeeping: Pool,
    /// The batched transitions' and first starts' (see [`MySqlStore::begin_batch`]).
    batch: Pool,
    /// One connection of the readiness probe's own (see [`crate::DatabaseHealth`]).
    probe: Pool,
    /// The database the URL names: the schema of unqualified user tables.
    database: Arc<str>,
    /// MariaDB stores JSON as LONGTEXT with a `json_valid` check; MySQL has a JSON type.
    mariadb: bool,
    /// See [`MySqlStore::consecutive_insert_ids`].
    consecutive_insert_ids: bool,
    /// Where its transitions decided as read and its first starts are committed.
    batches: Batches<MySqlStore>,
    /// See [`MySqlStore::without_batched_transitions`].
    batched_transitions: bool,
    columns: Arc<global_attributes::ColumnCache>,
    continuation_lease: Option<Duration>,
    expired_lease_look: Arc<crate::task_claim::ExpiredLeaseLook>,
    pub(crate) fair_turns: Arc<crate::fair_turns::FairTurns>,
    run_limits: Arc<crate::run_limits::RunLimits>,
    /// See [`StoreOptions::pool_wait`].
    pool_wait: Option<Duration>,
    /// Every session's `idle_transaction_timeout` (MariaDB), see `session_setup`.
    idle_in_transaction: Duration,
    clock: DatabaseClock,
}

impl MySqlStore {
    /// Connects a pool of at most `pool_size` connections to `database_url`
    /// (`mysql://user:password@host:3306/dbname`; `mariadb://` works too), with
    /// [`StoreOptions`]' defaults otherwise.
    pub async fn connect(database_url: &str, pool_size: usize) -> Result<Self, StoreError> {
        Self::connect_with(database_url, StoreOptions::with_pool_size(pool_size)).await
    }

    /// Connects to `database_url` set up as `options` say.
    pub async fn connect_with(url: &str, options: StoreOptions) -> Result<Self, StoreError> {
        let timekeeping_connections = options.timekeeping_connections();
        let StoreOptions {
            pool_size,
            continuation_lease,
            pool_wait,
            idle_in_transaction,
            // MySQL and MariaDB bound each filtered read in its own text.
            longest_query: _,
        } = options;
        let url = xdb_config::DatabaseUrl::parse(url).map_err(invalid_database_url)?;
        let database: Arc<str> = url.require_database().map_err(invalid_database_url)?.into();
        let target = MySqlTarget::new(&url).map_err(invalid_database_url)?;
        // Fail at start-up, not on the first request; `PREFERRED` settles here whether
        // every connection uses TLS.
        let ((pool, mut conn), opts) = target
            .first_connection(|opts| async move {
                let pool = build_pool(&opts, pool_size.max(1), idle_in_transaction);
                match tokio::time::timeout(CONNECT_TIMEOUT, pool.get_conn()).await {
                    Ok(Ok(conn)) => Ok((pool, conn)),
                    Ok(Err(error)) => Err(error),
                    Err(_) => Err(mysql_async::Error::Io(mysql_async::IoError::Io(
                        std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            format!("no answer within {CONNECT_TIMEOUT:?}"),
                        ),
                    ))),
                }
            })
            .await
            .map_err(|error| {
                StoreError::Database(format!("cannot connect to the database: {error}"))
            })?;
        // Connections are opened on first use: a store that never fires a timer (the
        // API service's) opens one, to read the database clock.
        let timekeeping = build_pool(&opts, timekeeping_connections, idle_in_transaction);
        let probe = build_pool(&opts, 1, idle_in_transaction);
        let batch = build_pool(&opts, BATCH_CONNECTIONS, idle_in_transaction);
        let server: Option<(String, u8)> = conn
            .query_first("SELECT VERSION(), @@innodb_autoinc_lock_mode")
            .await?;
        let mariadb = server
            .as_ref()
            .is_some_and(|(version, _)| version.to_ascii_lowercase().contains("mariadb"));
        // Modes 0 and 1 number the rows of a multi-row insert one after the other;
        // mode 2 may interleave other statements' numbers.
        let consecutive_insert_ids = server.is_some_and(|(_, mode)| mode < 2);
        drop(conn);
        let clock = DatabaseClock::measure(TimekeepingClock(timekeeping.clone())).await?;
        Ok(Self {
            batches: Batches::start(pool_wait),
            pool,
            timekeeping,
            batch,
            probe,
            database,
            mariadb,
            consecutive_insert_ids,
            batched_transitions: true,
            columns: Arc::default(),
            continuation_lease,
            expired_lease_look: Arc::default(),
            fair_turns: Arc::default(),
            run_limits: Arc::default(),
            pool_wait,
            idle_in_transaction,
            clock,
        })
    }

    /// Whether the server is MariaDB (not MySQL).
    pub(crate) fn is_mariadb(&self) -> bool {
        self.mariadb
    }

    /// The limit every session of the pools starts with (see `session_setup`).
    pub(crate) fn idle_in_transaction(&self) -> Duration {
        self.idle_in_transaction
    }

    /// Whether the rows of one multi-row insert get consecutive AUTO_INCREMENT ids
    /// (`innodb_autoinc_lock_mode` below 2), so that their ids follow from the first.
    pub(crate) fn consecutive_insert_ids(&self) -> bool {
        self.consecutive_insert_ids
    }

    /// Leaves out the batched form of task transitions, so that every one takes the
    /// generic path: for the tests that keep that path tested on MySQL.
    pub fn without_batched_transitions(mut self) -> Self {
        self.batched_transitions = false;
        self
    }

    /// Whether usual transitions are decided from the rows as read and committed in
    /// batches (see `sql_tables::transition_batch`).
    pub(crate) fn batched_transitions(&self) -> bool {
        self.batched_transitions
    }

    /// When claims look for leases that ran out (shared by clones: one claim loop).
    pub(crate) fn expired_lease_look(&self) -> &crate::task_claim::ExpiredLeaseLook {
        &self.expired_lease_look
    }

    /// Leases continuations to task owners (see [`crate::StoreOptions`]).
    pub fn with_continuation_lease(mut self, lease: Option<Duration>) -> Self {
        self.continuation_lease = lease;
        self
    }

    /// Whom a transition recorded for `owner` leases its continuation to, if anyone.
    pub(crate) fn lease_to<'a>(&self, owner: &'a str) -> Option<crate::continuation::LeaseTo<'a>> {
        crate::continuation::LeaseTo::new(self.continuation_lease, owner)
    }

    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Starts a transaction on a pooled connection (rolled back if dropped uncommitted).
    pub(crate) async fn begin(&self) -> Result<Transaction<'static>, StoreError> {
        self.within_pool_wait(self.pool.start_transaction(TxOpts::default()))
            .await
    }

    /// `get`, a connection of the main pool, within the pool wait when one is set.
    /// mysql_async has no wait timeout of its own; dropping its pending checkout (or
    /// the BEGIN behind it, which the pool rolls back) is safe, and nothing was written.
    pub(crate) async fn within_pool_wait<T>(
        &self,
        get: impl std::future::Future<Output = mysql_async::Result<T>>,
    ) -> Result<T, StoreError> {
        within_wait(self.pool_wait, get).await
    }

    /// The lane for work whose lateness counts: claiming due tasks, finding when the
    /// next one is due, firing timers and process timeouts. A backlog of state
    /// transitions waiting for the main pool (the async service claims far more work
    /// than it has connections) would otherwise hold a due timer back for as long as
    /// that queue takes to drain.
    pub(crate) fn timekeeping_pool(&self) -> &Pool {
        &self.timekeeping
    }

    /// [`MySqlStore::begin`] for a batch of transitions or first starts, on connections
    /// of their own. Their statements are prepared for each padded batch size with
    /// hundreds of parameters, and mysql_async keeps every parameter's metadata with a
    /// cached statement. Cached on every connection of the main pool, they held about
    /// half of the API service's memory on MariaDB after two loads (121 MB against 74
    /// MB apart). As many connections as batches run at once, so none waits.
    pub(crate) async fn begin_batch(&self) -> Result<Transaction<'static>, StoreError> {
        self.within_pool_wait(self.batch.start_transaction(TxOpts::default()))
            .await
    }

    /// [`MySqlStore::begin`] on the timekeeping lane.
    pub(crate) async fn begin_timekeeping(&self) -> Result<Transaction<'static>, StoreError> {
        Ok(self
            .timekeeping
            .start_transaction(TxOpts::default())
            .await?)
    }
}

impl crate::DatabaseTime for MySqlStore {
    fn database_clock(&self) -> &DatabaseClock {
        &self.clock
    }
}

#[async_trait::async_trait]
impl crate::DatabaseProbe for MySqlStore {
    async fn probe(&self) -> Result<(), StoreError> {
        // A text query: one round trip, nothing prepared.
        self.probe.get_conn().await?.query_drop("SELECT 1").await?;
        Ok(())
    }
}

/// `get` within `wait`, when one is set (see [`MySqlStore::within_pool_wait`]).
pub(crate) async fn within_wait<T>(
    wait: Option<Duration>,
    get: impl std::future::Future<Output = mysql_async::Result<T>>,
) -> Result<T, StoreError> {
    let Some(wait) = wait else {
        return Ok(get.await?);
    };
    match tokio::time::timeout(wait, get).await {
        Ok(got) => Ok(got?),
        Err(_) => Err(StoreError::Overloaded(
            "every pooled connection stayed busy".into(),
        )),
    }
}

/// The database clock, read on a timekeeping connection (see [`crate::db_clock`]).
struct TimekeepingClock(Pool);

impl ClockSource for TimekeepingClock {
    fn samples(&self, count: usize) -> impl Answer<Vec<Sample>> {
        async move {
            let mut conn = self.0.get_conn().await?;
            let mut samples = Vec::with_capacity(count);
            for _ in 0..count {
                // A text query: one round trip, where a prepared one would prepare first.
                let read = async {
                    conn.query_first::<i64, _>(
                        "SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01', UTC_TIMESTAMP(6))",
                    )
                    .await?
                    .ok_or_else(|| {
                        StoreError::Database("the database clock read as nothing".into())
                    })
                };
                samples.push(Sample::take(read).await?);
            }
            Ok(samples)
        }
    }
}

/// A pool of at most `size` connections with the session settings above.
fn build_pool(opts: &Opts, size: usize, idle_in_transaction: Duration) -> Pool {
    let constraints = PoolConstraints::new(0, size).expect("0 <= max connections");
    let opts = OptsBuilder::from_opts(opts.clone())
        .setup(session_setup(idle_in_transaction))
        .client_found_rows(true)
        // A dead server is noticed by the socket too (see `session_limits`).
        .tcp_keepalive(
            opts.tcp_keepalive()
                .or(Some(crate::session_limits::KEEPALIVE_IDLE)),
        )
        // Every statement of this module is prepared once per connection.
        .stmt_cache_size(256)
        .pool_opts(
            PoolOpts::default()
                .with_constraints(constraints)
                // With a zero TTL the pool keeps only `min` idle connections and closes
                // every other one as it is returned: a reconnect (and re-prepare) per
                // checkout. Keep them; close those idle for this long.
                .with_inactive_connection_ttl(IDLE_CONNECTION_TTL)
                // The session settings above must survive; a reset would cost a round
                // trip per checkout and re-run them.
                .with_reset_connection(false),
        );
    Pool::new(opts)
}
