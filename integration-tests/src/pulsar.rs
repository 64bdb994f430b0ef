//! Pulsar CDC mode in tests: which queue mode a test runs in, the capture of its
//! database by the real Pulsar IO Debezium source (through `xdb-pulsar-io`, from the
//! committed `pulsar-io/debezium-*-source.yaml`), and brokers of a test's own. The shared
//! Apache Pulsar standalone is started by scripts/ensure-pulsar.sh.
//!
//! Each test database gets its own source and its own topic prefix, so tests running in
//! parallel never see each other's changes.

use std::time::Duration;

use xdb_async_service::AsyncServiceConfig;
use xdb_config::{PulsarSettings, QueueMode};
use xdb_pulsar_io::{start_capture, Capture, PulsarIoAdmin, RunningCapture, SourceRegistration};
use xdb_test_util::TestDatabase;

mod test_broker;
pub use test_broker::TestBroker;

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
