use std::net::SocketAddr;
use std::time::Duration;

/// Async service settings. Every field has a command-line flag and an `XDB_` variable.
#[derive(Debug, Clone, clap::Args)]
pub struct AsyncServiceConfig {
    /// PostgreSQL URL of the user's database, with the XDB schema installed.
    #[arg(long, env = "XDB_DATABASE_URL")]
    pub database_url: String,
    /// Names this instance's leases; unique per instance (default: host name + random).
    #[arg(long, env = "XDB_ASYNC_INSTANCE_ID")]
    pub instance_id: Option<String>,
    /// Address of the health and internal API (port 0 picks a free one).
    #[arg(long, env = "XDB_ASYNC_LISTEN", default_value = "127.0.0.1:8802")]
    pub listen: SocketAddr,
    /// URL other XDB instances reach this one's internal API at (default: from the
    /// listen address). Used only on databases without push notifications (MySQL).
    #[arg(long, env = "XDB_ASYNC_ADVERTISE_URL")]
    pub advertise_url: Option<String>,
    /// Database connections in the pool.
    #[arg(long, env = "XDB_ASYNC_POOL_SIZE", default_value_t = 16)]
    pub pool_size: usize,
    /// Tasks worked on at once by this instance.
    #[arg(long, env = "XDB_ASYNC_MAX_IN_FLIGHT", default_value_t = 256)]
    pub max_in_flight: usize,
    /// How long a claimed task stays ours without renewal; another instance takes over
    /// an expired lease, so this bounds the delay after a crash.
    #[arg(long, env = "XDB_ASYNC_LEASE_SECONDS", default_value_t = 30.0)]
    pub lease_seconds: f64,
    /// Poll the database this often even without notifications.
    #[arg(long, env = "XDB_ASYNC_POLL_INTERVAL_MS", default_value_t = 1000)]
    pub poll_interval_ms: u64,
    /// Timeout of a worker call when the state sets none.
    #[arg(
        long,
        env = "XDB_ASYNC_DEFAULT_API_TIMEOUT_SECONDS",
        default_value_t = 10
    )]
    pub default_api_timeout_seconds: u32,
    /// Largest worker response accepted, in bytes.
    #[arg(long, env = "XDB_ASYNC_MAX_WORKER_RESPONSE_BYTES", default_value_t = 4 * 1024 * 1024)]
    pub max_worker_response_bytes: usize,
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
        }
    }

    pub fn lease(&self) -> Duration {
        Duration::from_secs_f64(self.lease_seconds.max(1.0))
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
