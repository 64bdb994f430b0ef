//! [`XdbTestEnv`]: a fresh database, the API service, async-service instances and workers,
//! all in this test's process (plus OS-process instances on request).

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use xdb_api_service::ApiServiceConfig;
use xdb_async_service::{AsyncService, AsyncServiceConfig};
use xdb_config::{QueueMode, SubscriptionType};
use xdb_sdk::Client;
use xdb_test_util::TestDatabase;

use crate::pulsar::CdcCapture;
use crate::sql::SqlClient;

/// Which database server a test runs against: [`Database::Postgres`] or
/// [`Database::MySql`] (MariaDB here).
pub use xdb_test_util::Dialect as Database;

/// The sign-up sample's business table (PostgreSQL).
pub const SIGNUP_SQL: &str = include_str!("../../samples/sql/postgres/user_signup.sql");
/// The sign-up sample's business table (MySQL/MariaDB).
pub const MYSQL_SIGNUP_SQL: &str = include_str!("../../samples/sql/mysql/user_signup.sql");

/// The site-creation sample's business table (`site`, PostgreSQL).
pub const SITE_SQL: &str = include_str!("../../samples/sql/postgres/site_creation.sql");
/// The site-creation sample's business table (`site`, MySQL/MariaDB).
pub const MYSQL_SITE_SQL: &str = include_str!("../../samples/sql/mysql/site_creation.sql");

/// Business tables of the test processes in [`crate::processes`] (PostgreSQL).
pub const TEST_TABLES_SQL: &str = "\
CREATE TABLE test_entity (
    id      TEXT PRIMARY KEY,
    counter INT  NOT NULL DEFAULT 0,
    note    TEXT,
    data    JSONB
);";

/// [`TEST_TABLES_SQL`] for MySQL/MariaDB.
pub const MYSQL_TEST_TABLES_SQL: &str = "\
CREATE TABLE test_entity (
    id      VARCHAR(255) NOT NULL PRIMARY KEY,
    counter INT          NOT NULL DEFAULT 0,
    note    TEXT,
    data    JSON
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;";

/// The business tables every environment gets, in `database`'s dialect.
pub fn business_tables_sql(database: Database) -> [&'static str; 4] {
    use crate::processes::counted_site;
    match database {
        Database::Postgres => [
            SIGNUP_SQL,
            SITE_SQL,
            TEST_TABLES_SQL,
            counted_site::TABLE_SQL,
        ],
        Database::MySql => [
            MYSQL_SIGNUP_SQL,
            MYSQL_SITE_SQL,
            MYSQL_TEST_TABLES_SQL,
            counted_site::MYSQL_TABLE_SQL,
        ],
    }
}

/// How an environment is set up; [`EnvOptions::default`] suits most tests.
#[derive(Debug, Clone)]
pub struct EnvOptions {
    /// In-process async-service instances started with the environment.
    pub async_instances: usize,
    /// Lease of every async-service instance, in seconds (short, for takeover tests).
    pub lease_seconds: f64,
    /// Fallback poll interval of the async service.
    pub poll_interval_ms: u64,
    /// Largest request body the API service accepts.
    pub max_request_bytes: usize,
    /// `security.api_tokens` of the API service; the environment's client sends the
    /// first one.
    pub api_tokens: Vec<String>,
    /// `security.worker_url_prefixes` of the API service.
    pub worker_url_prefixes: Vec<String>,
    /// `security.worker_signing_secret` of both services.
    pub worker_signing_secret: Option<String>,
    /// Worker calls each async-service instance runs at once.
    pub max_in_flight: usize,
    /// `async.lower_priority_max_in_flight` of the async instances (`None`: its
    /// default).
    pub lower_priority_max_in_flight: Option<usize>,
    /// Where async instances get work: the database's rows, or Pulsar CDC (the
    /// database is then captured by a Pulsar IO Debezium source). Default: the mode the suite's
    /// macros run the test in ([`crate::pulsar::current_queue_mode`]).
    pub queue_mode: QueueMode,
    /// Pulsar mode: whether Pulsar IO captures the database. Off, no change event ever
    /// comes, as if they were all lost; only the sweep runs tasks.
    pub cdc_capture: bool,
    /// Pulsar mode: `pulsar.sweep_after_ms` of the async instances.
    pub pulsar_sweep_after_ms: u64,
    /// Pulsar mode: `pulsar.subscription_type` of the async instances.
    pub pulsar_subscription_type: SubscriptionType,
    /// `[limits]` of both services.
    pub limits: xdb_protocol::Limits,
    /// `api.max_wait_seconds` of the API service.
    pub max_wait_seconds: u32,
    /// `async.park_after_refusals` of the async instances.
    pub park_after_refusals: u32,
    /// `api.query_timeout_ms` of the API service.
    pub query_timeout_ms: u64,
    /// The server to create the test database on: an admin URL of a server the test
    /// started itself (TLS parameters included). Default: the shared server of the
    /// environment's [`Database`].
    pub server_url: Option<String>,
    /// `security.worker_ca_file` of both services.
    pub worker_ca_file: Option<std::path::PathBuf>,
    /// `security.worker_client_cert_file` and `worker_client_key_file` of both services.
    pub worker_client_certificate: Option<(std::path::PathBuf, std::path::PathBuf)>,
}

impl Default for EnvOptions {
    fn default() -> Self {
        Self {
            async_instances: 1,
            lease_seconds: 3.0,
            poll_interval_ms: 100,
            max_request_bytes: 1024 * 1024,
            api_tokens: Vec::new(),
            worker_url_prefixes: Vec::new(),
            worker_signing_secret: None,
            max_in_flight: 256,
            lower_priority_max_in_flight: None,
            queue_mode: crate::pulsar::current_queue_mode(),
            cdc_capture: true,
            pulsar_sweep_after_ms: 60_000,
            pulsar_subscription_type: SubscriptionType::Shared,
            limits: Default::default(),
            max_wait_seconds: 300,
            park_after_refusals: 10,
            query_timeout_ms: 10_000,
            server_url: None,
            worker_ca_file: None,
            worker_client_certificate: None,
        }
    }
}

impl EnvOptions {
    /// Sets the `security.worker_*_file` settings of a service's config.
    fn worker_tls(&self, security: &mut xdb_config::SecuritySettings) {
        security.worker_ca_file = self.worker_ca_file.clone();
        let (cert, key) = self.worker_client_certificate.clone().unzip();
        security.worker_client_cert_file = cert;
        security.worker_client_key_file = key;
    }
}

/// A server task and the sender that stops it gracefully.
struct Server {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Server {
    async fn shutdown(self) {
        let _ = self.stop.send(());
        let _ = tokio::time::timeout(Duration::from_secs(10), self.task).await;
    }
}

/// Everything one test needs, isolated from other tests by its own database.
///
/// Call [`XdbTestEnv::shutdown`] at the end for a clean stop; when a test panics
/// instead, the runtime ends the tasks and the database is dropped anyway.
pub struct XdbTestEnv {
    /// Declared before `db`: the capture (and its replication slot) must end before the
    /// database is dropped.
    capture: Option<CdcCapture>,
    db: TestDatabase,
    sql: SqlClient,
    api_url: String,
    /// A client of the API service.
    pub client: Client,
    options: EnvOptions,
    api: Option<Server>,
    instances: Vec<AsyncService>,
    workers: Vec<Server>,
}

impl XdbTestEnv {
    /// A `database` database with the sample tables, the API service and one async
    /// instance.
    pub async fn start(database: Database) -> Self {
        Self::start_with(database, EnvOptions::default()).await
    }

    pub async fn start_with(database: Database, options: EnvOptions) -> Self {
        crate::init_tracing();
        let db = match &options.server_url {
            Some(url) => TestDatabase::create_on(url).await,
            None => TestDatabase::create(database).await,
        };
        assert_eq!(
            db.dialect(),
            database,
            "EnvOptions::server_url names another dialect"
        );
        for sql in business_tables_sql(database) {
            db.execute_sql(sql).await;
        }
        let sql = SqlClient::connect(&db).await;
        let capture = match options.queue_mode {
            QueueMode::Pulsar if options.cdc_capture => Some(CdcCapture::start(&db).await),
            _ => None,
        };

        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the API listener");
        let address = listener.local_addr().expect("local address");
        let api = spawn_api(db.url(), listener, &options).await;
        let api_url = format!("http://{address}");
        let mut client = Client::new(api_url.clone()).with_request_timeout(Duration::from_secs(30));
        if let Some(token) = options.api_tokens.first() {
            client = client.with_bearer_token(token.clone());
        }
        let mut env = Self {
            capture,
            db,
            sql,
            api_url,
            client,
            options: options.clone(),
            api: Some(api),
            instances: Vec::new(),
            workers: Vec::new(),
        };
        for _ in 0..options.async_instances {
            env.add_async_instance().await;
        }
        env
    }

    /// The test database (URL, extra connections, fixtures).
    pub fn db(&self) -> &TestDatabase {
        &self.db
    }

    /// The Pulsar IO capture of the test database (Pulsar mode with `cdc_capture`).
    pub fn capture(&self) -> Option<&CdcCapture> {
        self.capture.as_ref()
    }

    /// The database server this environment runs on.
    pub fn database(&self) -> Database {
        self.db.dialect()
    }

    /// Opens the assertion connection again (after the database server restarted).
    pub async fn reconnect_sql(&mut self) {
        self.sql = SqlClient::connect(&self.db).await;
    }

    /// A connection to the test database, for assertions on rows (see [`crate::sql`]).
    pub fn sql(&self) -> &SqlClient {
        &self.sql
    }

    /// Runs fixture `sql`, written in PostgreSQL's spelling (`"quoted"` names), on
    /// either dialect: see [`crate::sql::to_mysql`].
    pub async fn execute_sql(&self, sql: &str) {
        self.sql.execute(sql).await
    }

    /// Base URL of the API service.
    pub fn api_url(&self) -> &str {
        &self.api_url
    }

    /// The config an async-service instance of this environment gets.
    pub fn async_config(&self, instance_id: &str) -> AsyncServiceConfig {
        let mut config = AsyncServiceConfig::new(self.db.url());
        config.async_service.instance_id = Some(instance_id.to_string());
        config.async_service.pool_size = 4;
        config.async_service.lease_seconds = self.options.lease_seconds;
        config.async_service.poll_interval_ms = self.options.poll_interval_ms;
        config.async_service.default_api_timeout_seconds = 5;
        config.security.worker_signing_secret = self.options.worker_signing_secret.clone();
        self.options.worker_tls(&mut config.security);
        config.limits = self.options.limits.clone();
        config.async_service.max_in_flight = self.options.max_in_flight;
        if let Some(lower) = self.options.lower_priority_max_in_flight {
            config.async_service.lower_priority_max_in_flight = lower;
        }
        config.async_service.park_after_refusals = self.options.park_after_refusals;
        if self.options.queue_mode == QueueMode::Pulsar {
            crate::pulsar::configure(&mut config, &self.db);
            config.pulsar.sweep_after_ms = self.options.pulsar_sweep_after_ms;
            config.pulsar.subscription_type = self.options.pulsar_subscription_type;
        }
        config
    }

    /// The queue mode of this environment's async instances.
    pub fn queue_mode(&self) -> QueueMode {
        self.options.queue_mode
    }

    /// Base URLs of the in-process async-service instances' HTTP surface (health,
    /// `/metrics`).
    pub fn async_urls(&self) -> Vec<String> {
        self.instances
            .iter()
            .map(|instance| format!("http://{}", instance.address()))
            .collect()
    }

    /// Starts one more in-process async-service instance; returns its instance id.
    pub async fn add_async_instance(&mut self) -> String {
        let id = format!("in-process-{}", self.instances.len() + 1);
        let service = AsyncService::start(self.async_config(&id))
            .await
            .expect("the async service starts");
        self.instances.push(service);
        id
    }

    /// Stops the in-process async instances (cleanly: leases are released).
    pub async fn stop_async_instances(&mut self) {
        for instance in self.instances.drain(..) {
            instance
                .shutdown()
                .await
                .expect("the async service shuts down");
        }
    }

    /// Serves `router` (a worker) on a free port; returns its base URL.
    pub async fn start_worker(&mut self, router: axum::Router) -> String {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a worker listener");
        let url = format!("http://{}", listener.local_addr().expect("local address"));
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await
                .expect("the worker server runs");
        });
        self.workers.push(Server { stop, task });
        url
    }

    /// Starts the async service as a separate OS process (the `xdb-test-async-instance`
    /// binary at `binary`), waiting until it reports that it runs.
    pub async fn spawn_async_process(&self, binary: &str, instance_id: &str) -> AsyncProcess {
        self.spawn_async_process_with(binary, instance_id, &[])
            .await
    }

    /// [`XdbTestEnv::spawn_async_process`] with `extra_args` after the usual flags.
    pub async fn spawn_async_process_with(
        &self,
        binary: &str,
        instance_id: &str,
        extra_args: &[&str],
    ) -> AsyncProcess {
        let config = self.async_config(instance_id);
        let queue_args = match self.options.queue_mode {
            QueueMode::Database => Vec::new(),
            QueueMode::Pulsar => {
                let mut args = crate::pulsar::process_args(&self.db);
                args.push("--set".into());
                args.push(format!(
                    "pulsar.sweep_after_ms={}",
                    self.options.pulsar_sweep_after_ms
                ));
                let subscription_type = match self.options.pulsar_subscription_type {
                    SubscriptionType::Shared => "shared",
                    SubscriptionType::KeyShared => "key_shared",
                };
                args.push("--set".into());
                args.push(format!("pulsar.subscription_type={subscription_type}"));
                args
            }
        };
        let mut child = tokio::process::Command::new(binary)
            .arg("--database-url")
            .arg(self.db.url())
            .arg("--instance-id")
            .arg(instance_id)
            .arg("--lease-seconds")
            .arg(config.async_service.lease_seconds.to_string())
            .arg("--poll-interval-ms")
            .arg(config.async_service.poll_interval_ms.to_string())
            .arg("--pool-size")
            .arg("4")
            .args(queue_args)
            .args(extra_args)
            .env("RUST_LOG", "warn")
            // Any free port for the instance's own HTTP listener (when it has one), so
            // several instances and parallel tests never collide on a default port.
            .env("XDB_ASYNC_LISTEN", "127.0.0.1:0")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn {binary}: {e}"));
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let ready = tokio::time::timeout(Duration::from_secs(20), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(rest) = line.strip_prefix(crate::READY_LINE) {
                    return rest.split_whitespace().nth(1).map(str::to_string);
                }
            }
            None
        })
        .await;
        let Ok(Some(address)) = ready else {
            panic!("{binary} did not report that it started");
        };
        AsyncProcess {
            child,
            http_url: format!("http://{address}"),
        }
    }

    /// Stops the API service and starts a new one on the same address, as a rolling
    /// update or a crash-restart does; clients see refused connections meanwhile.
    pub async fn restart_api(&mut self) {
        if let Some(api) = self.api.take() {
            api.shutdown().await;
        }
        let address = self.api_url.trim_start_matches("http://").to_string();
        let listener = TcpListener::bind(&address)
            .await
            .expect("bind the API listener again");
        self.api = Some(spawn_api(self.db.url(), listener, &self.options).await);
    }

    /// Stops every service and worker of this environment, then drops the database.
    pub async fn shutdown(mut self) {
        self.stop_async_instances().await;
        if let Some(api) = self.api.take() {
            api.shutdown().await;
        }
        for worker in self.workers.drain(..) {
            worker.shutdown().await;
        }
    }
}

/// Serves one more API instance, of `config`, on a free loopback port (set here), beside
/// any environment's own: its base URL and the sender that stops it.
pub async fn serve_api(mut config: ApiServiceConfig) -> (String, oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    config.api.listen = listener.local_addr().expect("local address");
    let url = format!("http://{}", config.api.listen);
    let state = xdb_api_service::connect(config)
        .await
        .expect("the extra API instance connects");
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = xdb_api_service::serve(state, listener, async {
            let _ = stopped.await;
        })
        .await;
    });
    (url, stop)
}

/// Starts the API service on `listener` with the environment's options.
async fn spawn_api(database_url: &str, listener: TcpListener, options: &EnvOptions) -> Server {
    let mut config = ApiServiceConfig::new(database_url);
    config.api.listen = listener.local_addr().expect("local address");
    config.api.pool_size = 8;
    config.api.max_request_bytes = options.max_request_bytes;
    config.security.api_tokens = options.api_tokens.clone();
    config.security.worker_url_prefixes = options.worker_url_prefixes.clone();
    config.security.worker_signing_secret = options.worker_signing_secret.clone();
    options.worker_tls(&mut config.security);
    config.limits = options.limits.clone();
    config.api.max_wait_seconds = options.max_wait_seconds;
    config.api.query_timeout_ms = options.query_timeout_ms;
    let state = xdb_api_service::connect(config)
        .await
        .expect("the API service connects to the test database");
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        if let Err(error) = xdb_api_service::serve(state, listener, async {
            let _ = stopped.await;
        })
        .await
        {
            panic!("the API service failed: {error:#}");
        }
    });
    Server { stop, task }
}

/// An async-service instance running as its own OS process; killed when dropped.
pub struct AsyncProcess {
    child: tokio::process::Child,
    http_url: String,
}

impl AsyncProcess {
    /// Kills the process with SIGKILL (no cleanup, leases stay held) and reaps it.
    pub async fn kill(mut self) {
        self.child.kill().await.expect("SIGKILL the async instance");
    }

    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// Base URL of the instance's health and internal API.
    pub fn http_url(&self) -> &str {
        &self.http_url
    }

    /// Sends SIGTERM, as an orchestrator does to stop a pod; the instance drains.
    pub fn terminate(&self) {
        self.signal(nix::sys::signal::Signal::SIGTERM);
    }

    /// Stops the process (SIGSTOP) without killing it: alive, but silent.
    pub fn pause(&self) {
        self.signal(nix::sys::signal::Signal::SIGSTOP);
    }

    /// Lets a paused process go on (SIGCONT).
    pub fn resume(&self) {
        self.signal(nix::sys::signal::Signal::SIGCONT);
    }

    fn signal(&self, signal: nix::sys::signal::Signal) {
        let pid = self.child.id().expect("the async instance is running");
        let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).expect("a pid fits i32"));
        nix::sys::signal::kill(pid, signal)
            .unwrap_or_else(|e| panic!("{signal} to the async instance: {e}"));
    }

    /// Waits up to `limit` for the process to exit; its exit status.
    pub async fn wait(mut self, limit: Duration) -> std::process::ExitStatus {
        match tokio::time::timeout(limit, self.child.wait()).await {
            Ok(status) => status.expect("wait for the async instance"),
            Err(_) => panic!("the async instance did not exit within {limit:?}"),
        }
    }
}
