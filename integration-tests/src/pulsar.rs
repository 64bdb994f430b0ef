//! Pulsar CDC mode in tests: which queue mode a test runs in, and the capture of its
//! database by the Debezium relay (pulsar-io/relay), which publishes the database's task
//! changes to the Pulsar-protocol broker (both started by scripts/ensure-pulsar.sh).
//!
//! Each test database gets its own capture and its own topic prefix, so tests running in
//! parallel never see each other's changes.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use xdb_async_service::AsyncServiceConfig;
use xdb_config::{PulsarSettings, QueueMode};
use xdb_test_util::TestDatabase;

/// Broker of the Pulsar-mode tests (`XDB_TEST_PULSAR_URL`).
pub const PULSAR_URL_ENV: &str = "XDB_TEST_PULSAR_URL";
pub const DEFAULT_PULSAR_URL: &str = "pulsar://127.0.0.1:6650";
/// Control API of the Debezium relay (`XDB_TEST_CDC_RELAY`, host:port).
pub const RELAY_ENV: &str = "XDB_TEST_CDC_RELAY";
pub const DEFAULT_RELAY: &str = "127.0.0.1:8090";

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

fn broker_url() -> String {
    std::env::var(PULSAR_URL_ENV).unwrap_or_else(|_| DEFAULT_PULSAR_URL.to_string())
}

fn relay_address() -> String {
    std::env::var(RELAY_ENV).unwrap_or_else(|_| DEFAULT_RELAY.to_string())
}

/// How long the tests' async instances hold a task that is not due: short, so that
/// timers and retry backoffs of a second or two go through the timer topic (and
/// through the broker's early delivery of it), not only through the in-memory hold.
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
    config.queue_mode = QueueMode::Pulsar;
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

fn topic_prefix(db: &TestDatabase) -> String {
    format!("xdbtest-{}", db.name())
}

/// A database captured by the relay; the capture stops (and its PostgreSQL replication
/// slot is dropped) when this is dropped, which must happen before the database is.
pub struct CdcCapture {
    name: String,
}

impl CdcCapture {
    /// Starts capturing `db`; returns once Debezium's connector runs. From then on every
    /// committed task change reaches the broker (changes before it, through the
    /// connector's initial snapshot). Panics, naming the setup script, when the relay is
    /// not running.
    pub async fn start(db: &TestDatabase) -> Self {
        let name = db.name().to_string();
        let body = serde_json::json!({
            "name": name,
            "database_url": db.url(),
            "topic_prefix": topic_prefix(db),
        })
        .to_string();
        let request = format!(
            "POST /captures HTTP/1.0\r\nHost: relay\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let (status, text) = tokio::task::spawn_blocking(move || call_relay(&request))
            .await
            .expect("the relay call runs");
        assert_eq!(
            status, 200,
            "the CDC relay did not capture test database {name}: {text}"
        );
        Self {
            name: db.name().to_string(),
        }
    }
}

impl Drop for CdcCapture {
    fn drop(&mut self) {
        let request = format!(
            "DELETE /captures/{} HTTP/1.0\r\nHost: relay\r\n\r\n",
            self.name
        );
        // Plain blocking IO: this may run inside a runtime or during a panic.
        let name = self.name.clone();
        let stopped = std::thread::spawn(move || call_relay(&request)).join();
        if !matches!(stopped, Ok((200, _))) {
            eprintln!("stopping the CDC capture of {name} failed: {stopped:?}");
        }
    }
}

/// One HTTP/1.0 exchange with the relay: status and body.
fn call_relay(request: &str) -> (u16, String) {
    let address = relay_address();
    let mut stream = TcpStream::connect(&address).unwrap_or_else(|error| {
        panic!(
            "the Debezium CDC relay does not answer at {address} ({RELAY_ENV}): {error}; \
             start it and the broker with scripts/ensure-pulsar.sh"
        )
    });
    stream
        .set_read_timeout(Some(Duration::from_secs(180)))
        .expect("set a read timeout");
    stream
        .write_all(request.as_bytes())
        .expect("send the request to the relay");
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .expect("read the relay's answer");
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default();
    (status, body)
}

/// A pulsar-lite broker of one test's own, on a free port, so the test may stop it
/// without disturbing the shared broker; killed (by its process id) when dropped.
pub struct TestBroker {
    child: std::process::Child,
    url: String,
    data: std::path::PathBuf,
}

impl TestBroker {
    /// Starts the broker of the virtualenv scripts/ensure-pulsar.sh made
    /// (`XDB_PULSAR_VENV`, default `~/.cache/xdb-pulsar-venv`) and waits until it accepts
    /// connections.
    pub async fn start() -> Self {
        let venv = std::env::var("XDB_PULSAR_VENV").unwrap_or_else(|_| {
            format!(
                "{}/.cache/xdb-pulsar-venv",
                std::env::var("HOME").unwrap_or_default()
            )
        });
        let located = std::process::Command::new(format!("{venv}/bin/python"))
            .args([
                "-c",
                "import pulsar_lite, pathlib; \
                 print(pathlib.Path(pulsar_lite.__file__).parent / 'bin' / 'pulsar-lite')",
            ])
            .output()
            .unwrap_or_else(|e| panic!("no Python in {venv} ({e}): run scripts/ensure-pulsar.sh"));
        let binary = String::from_utf8_lossy(&located.stdout).trim().to_string();
        assert!(
            located.status.success() && !binary.is_empty(),
            "pulsar-lite is not installed in {venv}: run scripts/ensure-pulsar.sh"
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let address = format!("127.0.0.1:{port}");
        let data =
            std::env::temp_dir().join(format!("xdb-test-broker-{port}-{}", std::process::id()));
        let child = std::process::Command::new(&binary)
            .arg("--addr")
            .arg(&address)
            .arg("--db-path")
            .arg(&data)
            .env("RUST_LOG", "error")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {binary}: {e}"));
        let broker = Self {
            child,
            url: format!("pulsar://{address}"),
            data,
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while tokio::net::TcpStream::connect(&address).await.is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "the test broker does not listen on {address} after 30 s"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        broker
    }

    /// `pulsar://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Kills the broker at once (SIGKILL), as a crash or a lost host would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for TestBroker {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.data);
    }
}
