//! Pulsar CDC mode in tests: which queue mode a test runs in, the capture of its
//! database by the real Pulsar IO Debezium source (through `xdb-pulsar-io`, from the
//! committed `pulsar-io/debezium-*-source.yaml`), and brokers of a test's own. The shared
//! Apache Pulsar standalone is started by scripts/ensure-pulsar.sh.
//!
//! Each test database gets its own source and its own topic prefix, so tests running in
//! parallel never see each other's changes.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use xdb_async_service::AsyncServiceConfig;
use xdb_config::{PulsarSettings, QueueMode};
use xdb_pulsar_io::{start_capture, Capture, PulsarIoAdmin, RunningCapture, SourceRegistration};
use xdb_test_util::TestDatabase;

/// Broker of the Pulsar-mode tests (`XDB_TEST_PULSAR_URL`).
pub const PULSAR_URL_ENV: &str = "XDB_TEST_PULSAR_URL";
pub const DEFAULT_PULSAR_URL: &str = "pulsar://127.0.0.1:6650";
/// Admin REST API of that broker, whose functions worker runs the Debezium sources
/// (`XDB_TEST_PULSAR_ADMIN_URL`).
pub const PULSAR_ADMIN_ENV: &str = "XDB_TEST_PULSAR_ADMIN_URL";
pub const DEFAULT_PULSAR_ADMIN: &str = "http://127.0.0.1:8080";

/// How long a capture may take to start streaming, or to stop: the first one on a
/// fresh broker unpacks the connector archive (about 100 MB).
const CAPTURE_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a restarted connector may take to stream again: on MariaDB about a minute
/// on an idle machine (its new Debezium task first tries for a minute to register its
/// metrics, which the old one left registered), so a loaded machine needs more than
/// [`CAPTURE_TIMEOUT`].
const RESTART_TIMEOUT: Duration = Duration::from_secs(300);

tokio::task_local! {
    /// The queue mode of the test running in this task; set by the suite's macros.
    static QUEUE_MODE: QueueMode;
}

/// Runs `test` with [`EnvOptions::default`](crate::EnvOptions) in `mode`.
pub async fn with_queue_mode<F: std::future::Future>(mode: QueueMode, test: F) -> F::Output {
    QUEUE_MODE.scope(mode, test).await
}

/// The queue mode of the current test: database unless run under [`with_queue_mode`].
pub fn current_queue_mode() -> QueueMode {
    QUEUE_MODE
        .try_with(|mode| *mode)
        .unwrap_or(QueueMode::Database)
}

/// The shared broker's `pulsar://` URL.
pub fn broker_url() -> String {
    std::env::var(PULSAR_URL_ENV).unwrap_or_else(|_| DEFAULT_PULSAR_URL.to_string())
}

/// The shared broker's admin URL.
pub fn admin_url() -> String {
    std::env::var(PULSAR_ADMIN_ENV).unwrap_or_else(|_| DEFAULT_PULSAR_ADMIN.to_string())
}

/// The shared broker's statistics of `topic` (`persistent://…`): counters of what it
/// took in and of each subscription.
pub async fn topic_stats(topic: &str) -> serde_json::Value {
    topic_admin_json(topic, "stats").await
}

/// The shared broker's internal statistics of `topic`: its ledgers and cursors.
pub async fn topic_internal_stats(topic: &str) -> serde_json::Value {
    topic_admin_json(topic, "internalStats").await
}

async fn topic_admin_json(topic: &str, what: &str) -> serde_json::Value {
    let path = topic.replacen("persistent://", "", 1);
    let url = format!("{}/admin/v2/persistent/{path}/{what}", admin_url());
    reqwest::get(&url)
        .await
        .and_then(|r| r.error_for_status())
        .unwrap_or_else(|e| panic!("GET {url}: {e}"))
        .json()
        .await
        .unwrap_or_else(|e| panic!("{url}: {e}"))
}

/// How long the tests' async instances hold a task that is not due: short, so that
/// timers and retry backoffs of a second or two go through the timer topic and the
/// broker's delayed delivery, not only through the in-memory hold.
const TEST_HOLD_MS: u64 = 500;

/// The Pulsar settings of an async service on `db`: its own topics and subscription.
pub fn settings_for(db: &TestDatabase) -> PulsarSettings {
    PulsarSettings {
        service_url: Some(broker_url()),
        topic_prefix: topic_prefix(db),
        hold_ms: TEST_HOLD_MS,
        ..PulsarSettings::default()
    }
}

/// Puts `config` in Pulsar mode for `db`.
pub fn configure(config: &mut AsyncServiceConfig, db: &TestDatabase) {
    config.queue.mode = QueueMode::Pulsar;
    config.pulsar = settings_for(db);
}

/// The flags that put an `xdb-async-service` process in Pulsar mode for `db`.
pub fn process_args(db: &TestDatabase) -> Vec<String> {
    let settings = settings_for(db);
    vec![
        "--set".into(),
        "queue.mode=pulsar".into(),
        "--set".into(),
        format!("pulsar.service_url={}", broker_url()),
        "--set".into(),
        format!("pulsar.topic_prefix={}", settings.topic_prefix),
        "--set".into(),
        format!("pulsar.hold_ms={}", settings.hold_ms),
    ]
}

/// The topic of XDB's delayed `TaskTimer` messages for `db`'s async instances.
pub fn timer_topic(db: &TestDatabase) -> String {
    format!(
        "persistent://public/default/{}.xdb.task-timers",
        topic_prefix(db)
    )
}

/// The topic of XDB's dead letters for `db`'s async instances.
pub fn dead_letter_topic(db: &TestDatabase) -> String {
    format!(
        "persistent://public/default/{}.xdb.dead-letters",
        topic_prefix(db)
    )
}

fn topic_prefix(db: &TestDatabase) -> String {
    format!("xdbtest-{}", db.name())
}

/// `db` captured by a Pulsar IO Debezium source; the source is removed (and its
/// PostgreSQL replication slot gone) when this is dropped, which must happen before the
/// database is.
pub struct CdcCapture {
    running: Option<RunningCapture>,
}

impl CdcCapture {
    /// Starts capturing `db` on the shared broker; returns once the connector streams.
    /// From then on every committed task change reaches the broker (changes before it,
    /// through the connector's initial snapshot). Panics, naming the setup script, when
    /// Pulsar does not answer.
    pub async fn start(db: &TestDatabase) -> Self {
        Self::start_on(db, &admin_url()).await
    }

    /// The same on the broker whose admin API is `admin_url` (a [`TestBroker`]).
    pub async fn start_on(db: &TestDatabase, admin_url: &str) -> Self {
        let capture = Capture {
            name: db.name().to_string(),
            database_url: db.url().to_string(),
            topic_prefix: topic_prefix(db),
            throwaway: true,
        };
        let admin = PulsarIoAdmin::new(admin_url);
        let running = start_capture(&admin, &capture, CAPTURE_TIMEOUT)
            .await
            .unwrap_or_else(|e| {
                panic!("Pulsar IO did not capture test database {}: {e}", db.name())
            });
        Self {
            running: Some(running),
        }
    }

    /// What was registered: topics, slot.
    pub fn registration(&self) -> &SourceRegistration {
        self.running.as_ref().expect("running").registration()
    }

    /// Restarts the connector, as Pulsar IO does after it crashed; returns once it
    /// streams again from its stored offset.
    pub async fn restart(&self) {
        self.running
            .as_ref()
            .expect("running")
            .restart(RESTART_TIMEOUT)
            .await
            .expect("the connector restarts");
    }
}

impl Drop for CdcCapture {
    fn drop(&mut self) {
        let Some(running) = self.running.take() else {
            return;
        };
        // A runtime of its own on another thread: this may run inside a runtime, or
        // during a panic.
        let stopped = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime")
                .block_on(running.stop(CAPTURE_TIMEOUT))
        })
        .join();
        if !matches!(stopped, Ok(Ok(()))) {
            eprintln!("stopping a Pulsar IO capture failed: {stopped:?}");
        }
    }
}

/// An Apache Pulsar standalone of one test's own, on free ports, so the test may kill
/// and restart it without disturbing the shared broker (scripts/pulsar-standalone.sh,
/// with the artefacts of scripts/ensure-pulsar.sh). Killed when dropped.
pub struct TestBroker {
    child: Option<Child>,
    state: PathBuf,
    broker_port: u16,
    web_port: u16,
    bookie_port: u16,
    functions: bool,
    /// A pulsar+ssl:// listener's port and the directory of its certificate files.
    tls: Option<(u16, PathBuf)>,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// The body of a GET, or nothing when the broker does not answer.
async fn body(http: &reqwest::Client, url: &str) -> String {
    match http.get(url).send().await {
        Ok(response) => response.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// How long a standalone may take to start: about 10 s on an idle 2-core machine.
const BROKER_START: Duration = Duration::from_secs(180);

/// Starts of a standalone that exits during start-up before the test fails. Pulsar
/// 4.0.8's standalone does not always come up. After an unclean stop its bookie's
/// registration may flap for seconds (the lock on `/ledgers/available/<bookie>`
/// invalidated and taken again in a loop, cf. apache/pulsar#17759), its functions worker
/// finds no bookie to create its topics on, and the JVM exits (status 1). A first start
/// beside another test's on a loaded CI machine exited with status 1 too; its log was
/// deleted with the broker's state, which a failing test now keeps (and whose end each
/// failed start prints). Whatever runs a broker starts it again then; so do the tests.
const START_ATTEMPTS: usize = 3;

/// The last lines of the log at `path`, to show why a start failed.
fn log_tail(path: &std::path::Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

impl TestBroker {
    /// A broker without Pulsar IO.
    pub async fn start() -> Self {
        Self::launch(false).await
    }

    /// A broker whose functions worker runs Debezium sources ([`CdcCapture::start_on`]).
    pub async fn start_with_pulsar_io() -> Self {
        Self::launch(true).await
    }

    /// A broker without Pulsar IO that also listens for `pulsar+ssl://` with `server`'s
    /// certificate (signed by `ca`): [`TestBroker::tls_url`].
    pub async fn start_with_tls(ca: &crate::tls::TestCa, server: &crate::tls::Issued) -> Self {
        Self::launch_with(false, Some((ca, server))).await
    }

    async fn launch(functions: bool) -> Self {
        Self::launch_with(functions, None).await
    }

    async fn launch_with(
        functions: bool,
        tls: Option<(&crate::tls::TestCa, &crate::tls::Issued)>,
    ) -> Self {
        let broker_port = free_port();
        let state = std::env::temp_dir().join(format!(
            "xdb-test-pulsar-{broker_port}-{}",
            std::process::id()
        ));
        let mut broker = Self {
            child: None,
            state,
            broker_port,
            web_port: free_port(),
            bookie_port: free_port(),
            functions,
            tls: None,
        };
        if let Some((ca, server)) = tls {
            let dir = broker.state.join("tls");
            std::fs::create_dir_all(&dir).expect("the broker's TLS directory");
            std::fs::write(dir.join("server.pem"), &server.cert_pem).expect("the certificate");
            std::fs::write(dir.join("server.key"), &server.key_pem).expect("the key");
            std::fs::copy(ca.ca_file(), dir.join("ca.pem")).expect("the CA certificate");
            broker.tls = Some((free_port(), dir));
        }
        broker.start_again_until_up().await;
        broker
    }

    /// Starts the standalone, again when it exits during start-up (see
    /// [`START_ATTEMPTS`]); the attempts it took.
    async fn start_again_until_up(&mut self) -> usize {
        let log = self.state.join("standalone.log");
        for attempt in 1..=START_ATTEMPTS {
            let Err(status) = self.spawn_and_wait().await else {
                return attempt;
            };
            assert!(
                attempt < START_ATTEMPTS,
                "the test broker exited ({status}) during start-up {START_ATTEMPTS} times; \
                 {} ends with (its artefacts come from scripts/ensure-pulsar.sh):\n{}",
                log.display(),
                log_tail(&log)
            );
            eprintln!(
                "the test broker exited ({status}) during start-up; starting it again. \
                 {} ends with:\n{}",
                log.display(),
                log_tail(&log)
            );
        }
        unreachable!("the last attempt returns or panics")
    }

    /// Starts the standalone and waits until it is healthy; the JVM's exit status when
    /// it exits first.
    async fn spawn_and_wait(&mut self) -> Result<(), std::process::ExitStatus> {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scripts/pulsar-standalone.sh"
        );
        let mut command = Command::new(script);
        command
            .arg(&self.state)
            .args(["--broker-port", &self.broker_port.to_string()])
            .args(["--web-port", &self.web_port.to_string()])
            .args(["--bookie-port", &self.bookie_port.to_string()])
            .env("XDB_STANDALONE_PULSAR_HEAP", "512m");
        if !self.functions {
            command.arg("--no-functions-worker");
        }
        if let Some((port, dir)) = &self.tls {
            command
                .args(["--tls-port", &port.to_string()])
                .arg("--tls-dir")
                .arg(dir);
        }
        std::fs::create_dir_all(&self.state).expect("the broker's state directory");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.state.join("standalone.log"))
            .expect("the broker's log");
        let child = command
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {script}: {e}"));
        self.child = Some(child);
        let health = format!("{}/admin/v2/brokers/health", self.admin_url());
        let workers = format!("{}/admin/v3/sources/builtinsources", self.admin_url());
        let leader = format!("{}/admin/v2/worker/cluster/leader/ready", self.admin_url());
        let namespaces = format!("{}/admin/v2/namespaces/public", self.admin_url());
        let http = reqwest::Client::new();
        let deadline = Instant::now() + BROKER_START;
        loop {
            // A standalone answers its health check before it has created its default
            // namespace: topics and sources there are refused ("Namespace does not exist")
            // until it has.
            let healthy = body(&http, &health).await == "ok"
                && body(&http, &namespaces)
                    .await
                    .contains("\"public/default\"");
            // Until its functions worker leads, Pulsar IO refuses new sources ("Leader
            // not yet ready").
            let worker_ready = !self.functions
                || (body(&http, &workers).await.contains("debezium-postgres")
                    && body(&http, &leader).await == "true");
            if healthy && worker_ready {
                return Ok(());
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                self.child = None;
                return Err(status);
            }
            assert!(
                Instant::now() < deadline,
                "the test broker is not healthy after {BROKER_START:?}; see {}/standalone.log",
                self.state.display()
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// `pulsar://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("pulsar://127.0.0.1:{}", self.broker_port)
    }

    /// `pulsar+ssl://127.0.0.1:<port>` of a broker started with TLS.
    pub fn tls_url(&self) -> String {
        let (port, _) = self.tls.as_ref().expect("a broker started with TLS");
        format!("pulsar+ssl://127.0.0.1:{port}")
    }

    /// `http://127.0.0.1:<port>`.
    pub fn admin_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.web_port)
    }

    /// Kills the broker at once (SIGKILL), as a crash or a lost host would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the broker and starts it again on the same ports and data (topics,
    /// subscriptions, registered sources and their offsets survive); the starts it took
    /// (see [`START_ATTEMPTS`]).
    pub async fn restart(&mut self) -> usize {
        self.kill();
        self.start_again_until_up().await
    }
}

impl Drop for TestBroker {
    fn drop(&mut self) {
        self.kill();
        // A failing test keeps the broker's log and data to look at.
        if std::thread::panicking() {
            eprintln!("kept the test broker's state: {}", self.state.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.state);
        }
    }
}
