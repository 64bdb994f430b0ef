//! The PostgreSQL implementation of [`ProcessStore`](crate::ProcessStore).
//!
//! What is written once over `SqlConn` (`sql.rs`, `sql_tables/`) runs here
//! through `sql_conn`; this folder keeps the connection, its one-statement overrides of
//! generic operations (`task_transition`, `first_start`, the claim, and `apply_plan`,
//! which sends a plan's writes as one statement through `pipeline`), and
//! `global_attributes`, the conversions of the user's column types.

mod apply_plan;
mod error;
mod first_start;
mod global_attributes;
mod locks;
mod notifications;
mod pipeline;
pub(crate) mod query_syntax;
#[cfg(test)]
mod read_bounded_tests;
mod rows;
mod sql_conn;
mod statement_batches;
mod tables;
mod task_queue;
#[cfg(test)]
mod task_queue_tests;
mod task_transition;
mod transaction;

use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, QueueMode, RecyclingMethod};
use xdb_db_connect::PostgresTarget;

pub use notifications::{CHANNEL_PROCESS_CLOSED, CHANNEL_TASKS};

use crate::db_clock::{ClockSource, DatabaseClock, Sample};
use crate::error::invalid_database_url;
use crate::tables::Answer;
use crate::{StoreError, StoreOptions};

/// Sets `enable_seqscan = off` on the store's sessions (beside any options the URL
/// gives). Every statement of the store finds its rows through an index, but a generic
/// plan is made once per connection, from the statistics of that moment: made while a
/// system table was near empty (the task table usually is; any table is after an
/// ANALYZE of its first rows), it scanned the whole table on every later call. Seen in
/// the bench: the transition statement took 10 ms instead of 0.2 with 30,000 processes
/// in the tables. The setting only makes a sequential scan the last resort.
fn prefer_index_scans(config: &mut tokio_postgres::Config) {
    const OPTION: &str = "-c enable_seqscan=off";
    let options = match config.get_options() {
        Some(given) if !given.trim().is_empty() => format!("{given} {OPTION}"),
        _ => OPTION.to_string(),
    };
    config.options(&options);
}

/// Bounds how long a session outlives a client the network lost, on the server and on
/// the client's sockets (see [`crate::session_limits`]), unless the URL says otherwise.
fn limit_dead_sessions(config: &mut tokio_postgres::Config, idle_in_transaction: Duration) {
    use crate::session_limits::*;
    let given = config.get_options().unwrap_or_default().to_string();
    let server_settings = [
        (
            "idle_in_transaction_session_timeout",
            format!("{}s", idle_in_transaction.as_secs()),
        ),
        ("tcp_keepalives_idle", KEEPALIVE_IDLE.as_secs().to_string()),
        (
            "tcp_keepalives_interval",
            KEEPALIVE_INTERVAL.as_secs().to_string(),
        ),
        ("tcp_keepalives_count", KEEPALIVE_COUNT.to_string()),
    ];
    let mut options = given.trim().to_string();
    for (name, value) in server_settings {
        if !given.contains(name) {
            options = format!("{options} -c {name}={value}").trim().to_string();
        }
    }
    config.options(&options);
    // tokio-postgres's default idle time is two hours; a URL's own value differs.
    if config.get_keepalives_idle() == Duration::from_secs(2 * 60 * 60) {
        config.keepalives_idle(KEEPALIVE_IDLE);
    }
    if config.get_keepalives_interval().is_none() {
        config.keepalives_interval(KEEPALIVE_INTERVAL);
    }
    if config.get_keepalives_retries().is_none() {
        config.keepalives_retries(KEEPALIVE_COUNT);
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
}

/// A pooled PostgreSQL store. Cloning shares the pools.
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    timekeeping: Pool,
    /// Filtered lists' and counts' (`Lane::Query`).
    query: Pool,
    /// One connection of the readiness probe's own (see [`crate::DatabaseHealth`]).
    probe: Pool,
    /// The server, its session options and TLS, for connections outside the pools.
    target: PostgresTarget,
    continuation_lease: Option<std::time::Duration>,
    batches: statement_batches::StatementBatches,
    timekeeping_batches: statement_batches::StatementBatches,
    expired_lease_look: std::sync::Arc<crate::task_claim::ExpiredLeaseLook>,
    pub(crate) fair_turns: std::sync::Arc<crate::fair_turns::FairTurns>,
    run_limits: std::sync::Arc<crate::run_limits::RunLimits>,
    one_statement_forms: bool,
    clock: DatabaseClock,
}

impl PostgresStore {
    /// Connects a pool of at most `pool_size` connections to `database_url`, with
    /// [`StoreOptions`]' defaults otherwise.
    pub async fn connect(database_url: &str, pool_size: usize) -> Result<Self, StoreError> {
        Self::connect_with(database_url, StoreOptions::with_pool_size(pool_size)).await
    }

    /// Connects to `database_url` set up as `options` say.
    pub async fn connect_with(url: &str, options: StoreOptions) -> Result<Self, StoreError> {
        let url = xdb_config::DatabaseUrl::parse(url).map_err(invalid_database_url)?;
        let mut target = PostgresTarget::new(&url).map_err(invalid_database_url)?;
        prefer_index_scans(target.config_mut());
        limit_dead_sessions(target.config_mut(), options.idle_in_transaction);
        let pool = build_pool(&target, options.pool_size.max(1), options.pool_wait)?;
        // Connections are opened on first use: a store that never fires a timer (the
        // API service's) opens one, to read the database clock.
        let timekeeping = build_pool(&target, options.timekeeping_connections(), None)?;
        let probe = build_pool(&target, 1, None)?;
        // The connection used last is taken first (as PgBouncer does by default): one
        // person's queries reuse one connection, its statements parsed and the server's
        // caches warm, rather than each new statement waiting for its parse on every
        // connection in turn. Not for the main pool: there it cost the load 9%.
        let query = build_pool_taking(
            &bounded_statements(&target, options.longest_query),
            options.query_connections(),
            options.pool_wait,
            QueueMode::Lifo,
        )?;
        // Fail at start-up, not on the first request; a TLS refusal names its setting.
        match pool.get().await {
            Ok(connection) => drop(connection),
            Err(deadpool_postgres::PoolError::Backend(error)) => {
                return Err(StoreError::Database(format!(
                    "cannot connect to the database: {}",
                    target.explain(&error)
                )))
            }
            Err(error) => return Err(error.into()),
        }
        let clock = DatabaseClock::measure(TimekeepingClock(timekeeping.clone())).await?;
        Ok(Self {
            // A statement waits for a batch no longer than for a connection: an admitted
            // request never queues without end behind a slow database.
            batches: statement_batches::StatementBatches::start(pool.clone(), options.pool_wait),
            timekeeping_batches: statement_batches::StatementBatches::start(
                timekeeping.clone(),
                None,
            ),
            pool,
            timekeeping,
            query,
            probe,
            target,
            continuation_lease: options.continuation_lease,
            expired_lease_look: Default::default(),
            fair_turns: Default::default(),
            run_limits: Default::default(),
            one_statement_forms: true,
            clock,
        })
    }

    /// Leases continuations to task owners (see [`crate::StoreOptions`]).
    pub fn with_continuation_lease(mut self, lease: Option<std::time::Duration>) -> Self {
        self.continuation_lease = lease;
        self
    }

    /// Leaves out PostgreSQL's faster forms of generic operations: task transitions
    /// decided as read and applied in one statement, a plan's writes in one statement,
    /// a task's lock in one statement, a new execution's row sent with the plan's
    /// writes. Each takes the generic path of `sql_tables` instead: for the tests that
    /// keep that path tested on PostgreSQL. A first start keeps its one statement, as
    /// MySQL keeps its batches of them; the claims' forms are tested beside the generic
    /// ones.
    pub fn without_one_statement_forms(mut self) -> Self {
        self.one_statement_forms = false;
        self
    }

    /// Whether the faster forms [`Self::without_one_statement_forms`] lists are taken.
    pub(crate) fn one_statement_forms(&self) -> bool {
        self.one_statement_forms
    }

    /// Whom a transition recorded for `owner` leases its continuation to, if anyone.
    pub(crate) fn lease_to<'a>(&self, owner: &'a str) -> Option<crate::continuation::LeaseTo<'a>> {
        crate::continuation::LeaseTo::new(self.continuation_lease, owner)
    }

    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Where self-contained statements go to be committed, with others when many are
    /// ready at once.
    pub(crate) fn batches(&self) -> &statement_batches::StatementBatches {
        &self.batches
    }

    /// The lane of filtered lists and counts (`Lane::Query`).
    pub(crate) fn query_pool(&self) -> &Pool {
        &self.query
    }

    /// The lane for work whose lateness counts: claiming due tasks, finding when the
    /// next one is due, firing timers and process timeouts. A backlog of state
    /// transitions waiting for [`PostgresStore::pool`] (the async service claims far
    /// more work than it has connections) would otherwise hold a due timer back for as
    /// long as that queue takes to drain.
    pub(crate) fn timekeeping_pool(&self) -> &Pool {
        &self.timekeeping
    }

    /// [`PostgresStore::batches`] on the timekeeping lane: timers that fire together.
    pub(crate) fn timekeeping_batches(&self) -> &statement_batches::StatementBatches {
        &self.timekeeping_batches
    }

    /// When claims look for leases that ran out (shared by clones: one claim loop).
    pub(crate) fn expired_lease_look(&self) -> &crate::task_claim::ExpiredLeaseLook {
        &self.expired_lease_look
    }

    /// Starts a listener for this database's XDB notifications.
    pub fn listen(&self, what: crate::Listen) -> crate::Notifications {
        notifications::spawn(self.target.clone(), what)
    }
}

impl crate::DatabaseTime for PostgresStore {
    fn database_clock(&self) -> &DatabaseClock {
        &self.clock
    }
}

#[async_trait::async_trait]
impl crate::DatabaseProbe for PostgresStore {
    async fn probe(&self) -> Result<(), StoreError> {
        // A simple query: one round trip. A broken connection is dropped by the pool's
        // recycling and the next probe opens another.
        self.probe.get().await?.simple_query("SELECT 1").await?;
        Ok(())
    }
}

/// The database clock, read on a timekeeping connection (see [`crate::db_clock`]).
struct TimekeepingClock(Pool);

impl ClockSource for TimekeepingClock {
    fn samples(&self, count: usize) -> impl Answer<Vec<Sample>> {
        async move {
            let client = self.0.get().await?;
            let mut samples = Vec::with_capacity(count);
            for _ in 0..count {
                samples.push(Sample::take(read_clock(&client)).await?);
            }
            Ok(samples)
        }
    }
}

/// The database's clock in microseconds since the epoch. A simple query: one round
/// trip, where an extended one would prepare first. `clock_timestamp()`, not `now()`:
/// the time of the reading, whatever a transaction began with.
async fn read_clock(client: &tokio_postgres::Client) -> Result<i64, StoreError> {
    const READ: &str = "SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::int8";
    let rows = client.simple_query(READ).await?;
    rows.iter()
        .find_map(|message| match message {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0),
            _ => None,
        })
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| StoreError::Database("the database clock read as no number".into()))
}

/// `target` whose sessions end any statement running past `longest_query` and
/// [`crate::QUERY_BACKSTOP_MARGIN`], on the server: the query lane's backstop for a
/// service that died mid-read (see [`crate::StoreOptions::longest_query`]). A URL that
/// sets `statement_timeout` itself keeps its value.
fn bounded_statements(target: &PostgresTarget, longest_query: Duration) -> PostgresTarget {
    let mut bounded = target.clone();
    let config = bounded.config_mut();
    let given = config.get_options().unwrap_or_default().to_string();
    if !given.contains("statement_timeout") {
        let backstop = (longest_query + crate::QUERY_BACKSTOP_MARGIN).as_millis();
        config.options(
            format!("{given} -c statement_timeout={backstop}")
                .trim()
                .to_string(),
        );
    }
    bounded
}

fn build_pool(
    target: &PostgresTarget,
    size: usize,
    wait: Option<std::time::Duration>,
) -> Result<Pool, StoreError> {
    build_pool_taking(target, size, wait, QueueMode::Fifo)
}

/// A pool whose idle connections are handed out in `queue` order.
fn build_pool_taking(
    target: &PostgresTarget,
    size: usize,
    wait: Option<std::time::Duration>,
    queue: QueueMode,
) -> Result<Pool, StoreError> {
    let manager = Manager::from_config(
        target.config().clone(),
        target.tls(),
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(size)
        .queue_mode(queue)
        .wait_timeout(wait)
        // deadpool needs a timer for the wait timeout.
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .build()
        .map_err(|e| StoreError::Database(format!("connection pool: {e}")))
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    #[test]
    fn index_scans_are_preferred_beside_the_urls_own_options() {
        let mut config =
            tokio_postgres::Config::from_str("postgres://u@h/db?options=-c%20work_mem%3D8MB")
                .unwrap();
        prefer_index_scans(&mut config);
        assert_eq!(
            config.get_options(),
            Some("-c work_mem=8MB -c enable_seqscan=off")
        );
        let mut config = tokio_postgres::Config::from_str("postgres://u@h/db").unwrap();
        prefer_index_scans(&mut config);
        assert_eq!(config.get_options(), Some("-c enable_seqscan=off"));
    }

    #[test]
    fn dead_sessions_are_bounded_unless_the_url_says_otherwise() {
        let mut config = tokio_postgres::Config::from_str("postgres://u@h/db").unwrap();
        limit_dead_sessions(&mut config, crate::session_limits::IDLE_IN_TRANSACTION);
        assert_eq!(
            config.get_options(),
            Some(
                "-c idle_in_transaction_session_timeout=70s -c tcp_keepalives_idle=15 \
                 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3"
            )
        );
        assert_eq!(config.get_keepalives_idle(), Duration::from_secs(15));
        assert_eq!(config.get_connect_timeout(), Some(&Duration::from_secs(10)));
        let mut config = tokio_postgres::Config::from_str(
            "postgres://u@h/db?keepalives_idle=60&connect_timeout=3\
             &options=-c%20idle_in_transaction_session_timeout%3D5s",
        )
        .unwrap();
        limit_dead_sessions(&mut config, crate::session_limits::IDLE_IN_TRANSACTION);
        let options = config.get_options().unwrap();
        assert!(options.starts_with("-c idle_in_transaction_session_timeout=5s -c tcp_"));
        assert_eq!(options.matches("idle_in_transaction").count(), 1);
        assert_eq!(config.get_keepalives_idle(), Duration::from_secs(60));
        assert_eq!(config.get_connect_timeout(), Some(&Duration::from_secs(3)));
    }
}
