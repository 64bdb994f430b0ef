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
