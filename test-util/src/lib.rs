//! Shared harness for XDB integration tests.
//!
//! - [`TestDatabase`]: a throw-away PostgreSQL or MariaDB/MySQL database per test, with
//!   the XDB schema installed, dropped again when the value is dropped.
//! - [`wait_until`]: poll an async condition with a deadline instead of sleeping blindly.
//! - [`free_local_port`]: a TCP port to bind a test server to.
//!
//! Tests never skip silently: when the database server is unreachable they panic and say
//! how to start it.

use std::future::Future;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The MySQL driver the harness uses, for tests that read a MySQL test database.
pub use mysql_async;
use mysql_async::prelude::Queryable;
use tokio_postgres::Client;
use xdb_config::DatabaseUrl;
use xdb_db_connect::{ConnectError, MySqlTarget, PostgresTarget};
pub use xdb_sys_schema::Dialect;

/// Environment variable naming the PostgreSQL server tests create their databases on.
pub const POSTGRES_URL_ENV: &str = "XDB_TEST_POSTGRES_URL";

/// Server used when [`POSTGRES_URL_ENV`] is not set (what `scripts/ensure-postgres.sh`
/// provides).
pub const DEFAULT_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// Environment variable naming the MariaDB/MySQL server tests create their databases on.
pub const MYSQL_URL_ENV: &str = "XDB_TEST_MYSQL_URL";

/// Server used when [`MYSQL_URL_ENV`] is not set (what `scripts/ensure-mariadb.sh`
/// provides).
pub const DEFAULT_MYSQL_URL: &str = "mysql://root@127.0.0.1:3306/mysql";

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Upper bound on how long dropping a [`TestDatabase`] may block the test.
const DROP_TIMEOUT: Duration = Duration::from_secs(30);

/// A uniquely named database (`xdb_test_<12 hex digits>`) on the test server, dropped
/// when this value is dropped; open connections do not block that (PostgreSQL: `WITH
/// (FORCE)`; MySQL: the database's sessions are killed first).
pub struct TestDatabase {
    name: String,
    url: String,
    admin_url: String,
    dialect: Dialect,
    /// MySQL: the options that connected (TLS or, for `PREFERRED` against a server
    /// without TLS, plaintext), for [`TestDatabase::mysql_pool`].
    mysql_opts: Option<mysql_async::Opts>,
}

impl TestDatabase {
    /// Creates a fresh database of `dialect` with the XDB system tables:
    /// [`TestDatabase::create_postgres`] or [`TestDatabase::create_mysql`].
    pub async fn create(dialect: Dialect) -> TestDatabase {
        match dialect {
            Dialect::Postgres => Self::create_postgres().await,
            Dialect::MySql => Self::create_mysql().await,
        }
    }

    /// Creates a fresh database on the server at `XDB_TEST_POSTGRES_URL` (default
    /// [`DEFAULT_POSTGRES_URL`]) and installs the XDB system tables into it.
    ///
    /// Panics, naming the env var and `scripts/ensure-postgres.sh`, when the server is
    /// unreachable; panics if the schema install fails.
    pub async fn create_postgres() -> TestDatabase {
        Self::with_schema(Self::create_postgres_without_schema().await).await
    }

    /// Creates a fresh database with the XDB system tables on the server `admin_url`
    /// names (PostgreSQL or MySQL, TLS parameters included), where that user may
    /// `CREATE DATABASE`: for tests that start servers of their own.
    pub async fn create_on(admin_url: &str) -> TestDatabase {
        let database = match Dialect::from_url(admin_url) {
            Ok(Dialect::Postgres) => Self::create_postgres_on(admin_url.to_string()).await,
            Ok(Dialect::MySql) => Self::create_mysql_on(admin_url.to_string()).await,
            Err(error) => panic!("the test server's URL: {error}"),
        };
        Self::with_schema(database).await
    }

    async fn with_schema(database: TestDatabase) -> TestDatabase {
        if let Err(error) = xdb_sys_schema::install(&database.url).await {
            panic!(
                "installing the XDB schema into test database {} failed: {}",
                database.name,
                error_chain(&error)
            );
        }
        database
    }

    /// Creates a fresh, empty database (no XDB schema); for tests of the installer itself.
    pub async fn create_postgres_without_schema() -> TestDatabase {
        Self::create_postgres_on(server_url(POSTGRES_URL_ENV, DEFAULT_POSTGRES_URL)).await
    }

    async fn create_postgres_on(admin_url: String) -> TestDatabase {
        let admin = connect_admin(&admin_url).await;
        let name = unique_name();
        // The name is generated from hex digits only, so it needs no quoting.
        if let Err(error) = admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
        {
            panic!(
                "CREATE DATABASE {name} failed on the test server ({POSTGRES_URL_ENV}): {}",
                error_chain(&error)
            );
        }
        let url = with_database(&admin_url, &name);
        TestDatabase {
            name,
            url,
            admin_url,
            dialect: Dialect::Postgres,
            mysql_opts: None,
        }
    }

    /// Creates a fresh database on the MariaDB/MySQL server at `XDB_TEST_MYSQL_URL`
    /// (default [`DEFAULT_MYSQL_URL`]) and installs the XDB system tables into it.
    ///
    /// Panics, naming the env var and `scripts/ensure-mariadb.sh`, when the server is
    /// unreachable; panics if the schema install fails.
    pub async fn create_mysql() -> TestDatabase {
        Self::with_schema(Self::create_mysql_without_schema().await).await
    }

    /// Creates a fresh, empty MariaDB/MySQL database (no XDB schema).
    pub async fn create_mysql_without_schema() -> TestDatabase {
        Self::create_mysql_on(server_url(MYSQL_URL_ENV, DEFAULT_MYSQL_URL)).await
    }

    async fn create_mysql_on(admin_url: String) -> TestDatabase {
        let (mut admin, admin_opts) = connect_mysql_admin(&admin_url).await;
        let name = unique_name();
        // The name is generated from hex digits only, so it needs no quoting.
        if let Err(error) = admin
            .query_drop(format!(
                "CREATE DATABASE {name} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
            ))
            .await
        {
            panic!(
                "CREATE DATABASE {name} failed on the test server ({MYSQL_URL_ENV}): {}",
                error_chain(&error)
            );
        }
        let _ = admin.disconnect().await;
        let url = with_database(&admin_url, &name);
        let opts = mysql_async::OptsBuilder::from_opts(admin_opts).db_name(Some(&name));
        TestDatabase {
            name,
            url,
            admin_url,
            dialect: Dialect::MySql,
            mysql_opts: Some(opts.into()),
        }
    }

    /// The database's dialect.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Connection URL of this database.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A new connection to this PostgreSQL database (its driver task runs on the current
    /// runtime). Panics for a MySQL database: use [`TestDatabase::mysql_conn`].
    pub async fn client(&self) -> Client {
        assert_eq!(
            self.dialect,
            Dialect::Postgres,
            "TestDatabase::client() is for PostgreSQL; use mysql_conn() for {}",
            self.name
        );
        match connect(&self.url).await {
            Ok(client) => client,
            Err(error) => panic!(
                "cannot connect to test database {}: {}",
                self.name,
                error_chain(&error)
            ),
        }
    }

    /// A new connection to this MySQL database, in UTC. Panics for a PostgreSQL database.
    pub async fn mysql_conn(&self) -> mysql_async::Conn {
        assert_eq!(
            self.dialect,
            Dialect::MySql,
            "TestDatabase::mysql_conn() is for MySQL; use client() for {}",
            self.name
        );
        match connect_mysql(&self.url).await {
            Ok((conn, _)) => conn,
            Err(error) => panic!(
                "cannot connect to test database {}: {}",
                self.name,
                error_chain(&error)
            ),
        }
    }

    /// A pool of connections to this MySQL database, each in UTC (like the store's). Its
    /// connections are killed when the database is dropped, so the pool needs no
    /// disconnect. Panics for a PostgreSQL database.
    pub fn mysql_pool(&self) -> mysql_async::Pool {
        assert_eq!(
            self.dialect,
            Dialect::MySql,
            "TestDatabase::mysql_pool() is for MySQL; use client() for {}",
            self.name
        );
        let opts = self
            .mysql_opts
            .clone()
            .expect("a MySQL database has its options");
        mysql_async::Pool::new(in_utc(opts))
    }

    /// Runs `sql` (one or more statements) as a fixture; panics with the SQL on failure.
    pub async fn execute_sql(&self, sql: &str) {
        let result = match self.dialect {
            Dialect::Postgres => self
                .client()
                .await
                .batch_execute(sql)
                .await
                .map_err(|e| error_chain(&e)),
            Dialect::MySql => {
                let mut conn = self.mysql_conn().await;
                let result = conn.query_drop(sql).await.map_err(|e| error_chain(&e));
                let _ = conn.disconnect().await;
                result
            }
        };
        if let Err(error) = result {
            panic!(
                "fixture SQL failed in test database {}: {error}\nSQL:\n{sql}",
                self.name,
            );
        }
    }
}

impl std::fmt::Debug for TestDatabase {
    // Only the name: the URLs may carry a password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestDatabase")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        // Drop may run inside a runtime (where blocking on async code panics) or during
        // a panic, so the cleanup gets its own thread and runtime, and the wait for it
        // is bounded: a stuck server must not hang the test suite.
        let (done_tx, done_rx) = mpsc::channel();
        let admin_url = self.admin_url.clone();
        let name = self.name.clone();
        let dialect = self.dialect;
        let spawned = std::thread::Builder::new()
            .name(format!("drop-{name}"))
            .spawn(move || {
                let result = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| e.to_string())
                    .and_then(|runtime| {
                        runtime.block_on(async {
                            match dialect {
                                Dialect::Postgres => drop_postgres(&admin_url, &name).await,
                                Dialect::MySql => drop_mysql(&admin_url, &name).await,
                            }
                        })
                    });
                let _ = done_tx.send(result);
            });
        let outcome = match spawned {
            Ok(_) => done_rx
                .recv_timeout(DROP_TIMEOUT)
                .unwrap_or_else(|_| Err(format!("no answer within {DROP_TIMEOUT:?}"))),
            Err(error) => Err(format!("cannot spawn the cleanup thread: {error}")),
        };
        if let Err(error) = outcome {
            // Best effort: a leftover database is harmless (unique name), so only report.
            eprintln!(
                "warning: could not drop test database {}: {error}",
                self.name
            );
        }
    }
}

async fn drop_postgres(admin_url: &str, name: &str) -> Result<(), String> {
    let client = connect(admin_url).await.map_err(|e| error_chain(&e))?;
    client
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .await
        .map_err(|e| error_chain(&e))
}

/// Kills the database's sessions (a pool left open, a transaction holding a metadata
/// lock) so that the drop cannot wait on them, then drops it.
async fn drop_mysql(admin_url: &str, name: &str) -> Result<(), String> {
    let (mut admin, _) = connect_mysql(admin_url)
        .await
        .map_err(|e| error_chain(&e))?;
    let sessions: Vec<u64> = admin
        .exec(
            "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()",
            (name,),
        )
        .await
        .map_err(|e| error_chain(&e))?;
    for id in sessions {
        // The session may have ended meanwhile.
        let _ = admin.query_drop(format!("KILL {id}")).await;
    }
    let result = admin
        .query_drop(format!("DROP DATABASE IF EXISTS {name}"))
        .await
        .map_err(|e| error_chain(&e));
    let _ = admin.disconnect().await;
    result
}

/// The server URL from `env`, or `default` when unset or blank.
fn server_url(env: &str, default: &str) -> String {
    std::env::var(env)
        .ok()
        .filter(|url| !url.trim().is_empty())
        .unwrap_or_else(|| default.to_owned())
}

fn unique_name() -> String {
    format!(
        "xdb_test_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    )
}

/// Connects to the MySQL admin database or panics loudly with what to do about it.
async fn connect_mysql_admin(admin_url: &str) -> (mysql_async::Conn, mysql_async::Opts) {
    match connect_mysql(admin_url).await {
        Ok(connected) => connected,
        Err(error) => panic!(
            "\n\n*** MariaDB/MySQL test server not reachable ***\n\
             tried {MYSQL_URL_ENV}={} : {}\n\
             Start one with `scripts/ensure-mariadb.sh` (as root), or point \
             {MYSQL_URL_ENV} at a server where this user may CREATE DATABASE.\n\
             Integration tests need a real server and never skip.\n",
            redact_password(admin_url),
            error_chain(&error)
        ),
    }
}

/// `opts` with every session in UTC.
fn in_utc(opts: mysql_async::Opts) -> mysql_async::OptsBuilder {
    mysql_async::OptsBuilder::from_opts(opts).setup(vec!["SET time_zone = '+00:00'"])
}

/// One MySQL connection in UTC (TLS as `url` says), failing after [`CONNECT_TIMEOUT`],
/// and the options that connected.
async fn connect_mysql(url: &str) -> Result<(mysql_async::Conn, mysql_async::Opts), ConnectError> {
    let target = DatabaseUrl::parse(url)
        .map_err(|error| error.to_string())
        .and_then(|url| MySqlTarget::new(&url).map_err(|error| error.to_string()))
        .unwrap_or_else(|error| panic!("the test server's URL: {error}"));
    target
        .first_connection(|opts| async move {
            match tokio::time::timeout(CONNECT_TIMEOUT, mysql_async::Conn::new(in_utc(opts))).await
            {
                Ok(result) => result,
                Err(_) => Err(mysql_async::Error::Io(mysql_async::IoError::Io(
                    std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("no answer within {CONNECT_TIMEOUT:?}"),
                    ),
                ))),
            }
        })
        .await
}

/// Connects to the admin database or panics loudly with what to do about it.
async fn connect_admin(admin_url: &str) -> Client {
    match connect(admin_url).await {
        Ok(client) => client,
        Err(error) => panic!(
            "\n\n*** PostgreSQL test server not reachable ***\n\
             tried {POSTGRES_URL_ENV}={} : {}\n\
             Start one with `scripts/ensure-postgres.sh` (as root), or point \
             {POSTGRES_URL_ENV} at a server where this user may CREATE DATABASE.\n\
             Integration tests need a real server and never skip.\n",
            redact_password(admin_url),
            error_chain(&error)
        ),
    }
}

/// One PostgreSQL connection (TLS as `url` says), driven by a spawned task.
async fn connect(url: &str) -> Result<Client, ConnectError> {
    let mut target = DatabaseUrl::parse(url)
        .map_err(|error| error.to_string())
        .and_then(|url| PostgresTarget::new(&url).map_err(|error| error.to_string()))
        .unwrap_or_else(|error| panic!("the test server's URL: {error}"));
    target.config_mut().connect_timeout(CONNECT_TIMEOUT);
    target.connect_spawned().await
}

/// `url` with its database replaced by `database`, keeping any `?params`.
fn with_database(url: &str, database: &str) -> String {
    DatabaseUrl::parse(url)
        .and_then(|url| url.with_database(database))
        .map(|url| url.as_str().to_owned())
        .unwrap_or_else(|error| panic!("the test server's URL: {error}"))
}

/// `url` with the password, if any, replaced by `***` (for panic messages).
fn redact_password(url: &str) -> String {
    DatabaseUrl::parse(url)
        .map_or_else(|_| "(not a database URL)".to_owned(), |url| url.to_string())
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !message.contains(&cause_text) {
            message.push_str(": ");
            message.push_str(&cause_text);
        }
        source = cause.source();
    }
    message
}

/// A TCP port on 127.0.0.1 that was free a moment ago (the OS picked it); bind it soon.
pub fn free_local_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("cannot bind 127.0.0.1:0 to find a free port")
}

/// Error of [`wait_until`]: the condition never held within the timeout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitTimeout {
    /// The timeout that elapsed.
    pub timeout: Duration,
    /// How many times the condition was evaluated.
    pub checks: u32,
}

impl std::fmt::Display for WaitTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "condition still false after {:?} ({} checks)",
            self.timeout, self.checks
        )
    }
}

impl std::error::Error for WaitTimeout {}

/// Evaluates `condition` every `poll_interval` until it returns true (`Ok`) or `timeout`
/// has passed (`Err`). A single evaluation that hangs is cut off at the deadline too.
pub async fn wait_until<F, Fut>(
    timeout: Duration,
    poll_interval: Duration,
    mut condition: F,
) -> Result<(), WaitTimeout>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    let mut checks = 0;
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        checks += 1;
        match tokio::time::timeout(remaining, condition()).await {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(_elapsed) => break,
        }
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            break;
        }
        tokio::time::sleep(poll_interval.min(remaining)).await;
    }
    Err(WaitTimeout { timeout, checks })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn with_database_replaces_the_path() {
        let cases = [
            (
                "postgres://postgres@127.0.0.1:5432/postgres",
                "postgres://postgres@127.0.0.1:5432/db1",
            ),
            ("postgres://u:p@h", "postgres://u:p@h/db1"),
            ("postgres://u@h/", "postgres://u@h/db1"),
            (
                "postgresql://u@h:1/x?sslmode=disable",
                "postgresql://u@h:1/db1?sslmode=disable",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(with_database(input, "db1"), expected, "{input}");
        }
    }

    #[test]
    fn redact_password_hides_only_the_password() {
        assert_eq!(
            redact_password("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(redact_password("postgres://u@h/db"), "postgres://u@h/db");
    }

    #[test]
    fn free_local_port_is_bindable() {
        let port = free_local_port();
        assert_ne!(port, 0);
        std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    }

    #[tokio::test]
    async fn wait_until_returns_once_the_condition_holds() {
        let calls = AtomicU32::new(0);
        wait_until(Duration::from_secs(5), Duration::from_millis(5), || async {
            calls.fetch_add(1, Ordering::SeqCst) >= 2
        })
        .await
        .unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn wait_until_times_out_with_a_message() {
        let started = Instant::now();
        let error = wait_until(
            Duration::from_millis(100),
            Duration::from_millis(10),
            || async { false },
        )
        .await
        .unwrap_err();
        assert!(started.elapsed() >= Duration::from_millis(100));
        assert!(error.checks >= 2, "{error:?}");
        assert!(error
            .to_string()
            .contains("condition still false after 100ms"));
    }

    #[tokio::test]
    async fn wait_until_cuts_off_a_hanging_check() {
        let started = Instant::now();
        let result = wait_until(
            Duration::from_millis(100),
            Duration::from_millis(10),
            std::future::pending::<bool>,
        )
        .await;
        assert!(result.is_err());
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
