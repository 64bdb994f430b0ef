use std::net::SocketAddr;

use xdb_protocol::Limits;

/// API service settings. Loaded from the config file, `XDB_` variables and flags by `cli`.
#[derive(Debug, Clone)]
pub struct ApiServiceConfig {
    /// PostgreSQL URL of the user's database, with the XDB schema installed.
    pub database_url: String,
    pub listen: SocketAddr,
    /// Database connections in the pool.
    pub pool_size: usize,
    /// Largest request body accepted, in bytes.
    pub max_request_bytes: usize,
    /// URL other XDB instances reach this one's internal API at (default: from the
    /// listen address). Used only on databases without push notifications (MySQL).
    pub advertise_url: Option<String>,
    /// Longest wait-for-completion long poll, in seconds.
    pub max_wait_seconds: u32,
    /// Bearer tokens the service API accepts; empty leaves it open.
    pub api_tokens: Vec<String>,
    /// Prefixes a start request's worker URL must have; empty allows any.
    pub worker_url_prefixes: Vec<String>,
    /// Signs RPC calls to workers.
    pub worker_signing_secret: Option<String>,
    /// Sizes of ids, values, pages and worker URLs (`[limits]`).
    pub limits: Limits,
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
            api_tokens: Vec::new(),
            worker_url_prefixes: Vec::new(),
            worker_signing_secret: None,
            limits: Limits::default(),
        }
    }
}
