use std::net::SocketAddr;

/// API service settings. Every field has a command-line flag and an `XDB_` variable.
#[derive(Debug, Clone, clap::Args)]
pub struct ApiServiceConfig {
    /// PostgreSQL URL of the user's database, with the XDB schema installed.
    #[arg(long, env = "XDB_DATABASE_URL")]
    pub database_url: String,
    #[arg(long, env = "XDB_API_LISTEN", default_value = "127.0.0.1:8801")]
    pub listen: SocketAddr,
    /// Database connections in the pool.
    #[arg(long, env = "XDB_API_POOL_SIZE", default_value_t = 16)]
    pub pool_size: usize,
    /// Largest request body accepted, in bytes.
    #[arg(long, env = "XDB_API_MAX_REQUEST_BYTES", default_value_t = 1024 * 1024)]
    pub max_request_bytes: usize,
    /// URL other XDB instances reach this one's internal API at (default: from the
    /// listen address). Used only on databases without push notifications (MySQL).
    #[arg(long, env = "XDB_API_ADVERTISE_URL")]
    pub advertise_url: Option<String>,
    /// Longest wait-for-completion long poll, in seconds.
    #[arg(long, env = "XDB_API_MAX_WAIT_SECONDS", default_value_t = 300)]
    pub max_wait_seconds: u32,
}

impl ApiServiceConfig {
    /// Defaults for `database_url`, for embedding and tests.
    pub fn new(database_url: impl Into<String>) -> Self {
        Self {
            database_url: database_url.into(),
            listen: "127.0.0.1:8801".parse().expect("valid address"),
            pool_size: 16,
            max_request_bytes: 1024 * 1024,
            max_wait_seconds: 300,
            advertise_url: None,
        }
    }
}
