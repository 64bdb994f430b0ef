use std::net::SocketAddr;
use std::time::Duration;

use xdb_config::{PulsarSettings, QueueMode};

/// Async service settings. Loaded from the config file, `XDB_` variables and flags by `cli`.
#[derive(Debug, Clone)]
pub struct AsyncServiceConfig {
    /// PostgreSQL URL of the user's database, with the XDB schema installed.
    pub database_url: String,
    /// Names this instance's leases; unique per instance (default: host name + random).
    pub instance_id: Option<String>,
    /// Address of the health and internal API (port 0 picks a free one).
    pub listen: SocketAddr,
    /// URL other XDB instances reach this one's internal API at (default: from the
    /// listen address). Used only on databases without push notifications (MySQL).
    pub advertise_url: Option<String>,
    /// Database connections in the pool.
    pub pool_size: usize,
    /// Tasks worked on at once by this instance.
    pub max_in_flight: usize,
    /// How long a claimed task stays ours without renewal; another instance takes over
    /// an expired lease, so this bounds the delay after a crash.
    pub lease_seconds: f64,
    /// Poll the database this often even without notifications.
    pub poll_interval_ms: u64,
    /// Timeout of a worker call when the state sets none.
    pub default_api_timeout_seconds: u32,
    /// Largest worker response accepted, in bytes.
    pub max_worker_response_bytes: usize,
    /// On shutdown, how long in-flight tasks may run before they are abandoned (their
    /// leases are released either way).
    pub shutdown_grace_seconds: f64,
    /// Where work comes from: the database's rows or Pulsar CDC topics.
    pub queue_mode: QueueMode,
    /// The broker, topics and subscription of [`QueueMode::Pulsar`].
    pub pulsar: PulsarSettings,
    /// Signs every call to a worker (`security.worker_signing_secret`).
    pub worker_signing_secret: Option<String>,
    /// Value sizes a worker's answer may write or publish (`[limits]`).
    pub limits: xdb_protocol::Limits,
}

impl AsyncServiceConfig {
    /// Defaults for `database_url`, for embedding and tests.
    pub fn new(database_url: impl Into<String>) -> Self {
        Self {
            database_url: database_url.into(),
            instance_id: None,
            listen: "127.0.0.1:0".parse().expect("valid address"),
            advertise_url: None,
            pool_size: 16,
            max_in_flight: 256,
            lease_seconds: 30.0,
            poll_interval_ms: 1000,
            default_api_timeout_seconds: 10,
            max_worker_response_bytes: 4 * 1024 * 1024,
            shutdown_grace_seconds: 20.0,
            queue_mode: QueueMode::Database,
            pulsar: PulsarSettings::default(),
            worker_signing_secret: None,
            limits: xdb_protocol::Limits::default(),
        }
    }

    pub fn lease(&self) -> Duration {
        Duration::from_secs_f64(self.lease_seconds.max(1.0))
    }

    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_secs_f64(self.shutdown_grace_seconds.clamp(0.0, 3600.0))
    }

    pub fn poll_interval(&self) -> Duration {
        Duration::from_millis(self.poll_interval_ms.max(10))
    }

    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(self.pool_size > 0, "pool size must be at least 1");
        anyhow::ensure!(self.max_in_flight > 0, "max in flight must be at least 1");
        anyhow::ensure!(
            self.lease_seconds.is_finite() && self.lease_seconds >= 1.0,
            "lease seconds must be at least 1"
        );
        Ok(())
    }
}
