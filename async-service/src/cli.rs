//! The command line of `xdb-async-service`: a config file (`--config` or `XDB_CONFIG`),
//! `XDB_<SECTION>_<KEY>` variables over it, and these flags over both.

use std::net::SocketAddr;
use std::path::PathBuf;

use xdb_config::{ConfigError, Overrides, Service, Settings};

use crate::AsyncServiceConfig;

/// Flags of the async service; every setting can also come from the file or environment.
#[derive(Debug, Clone, clap::Args)]
pub struct AsyncServiceArgs {
    /// TOML config file shared by both services (see deploy/xdb.example.toml) [env: XDB_CONFIG]
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Database URL (database.url) [env: XDB_DATABASE_URL]
    #[arg(long)]
    pub database_url: Option<String>,
    /// Health and internal API address (async.listen) [env: XDB_ASYNC_LISTEN]
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// Names this instance's leases (async.instance_id) [env: XDB_ASYNC_INSTANCE_ID]
    #[arg(long)]
    pub instance_id: Option<String>,
    /// URL other instances reach this one at (async.advertise_url) [env: XDB_ASYNC_ADVERTISE_URL]
    #[arg(long)]
    pub advertise_url: Option<String>,
    /// Database connections in the pool (async.pool_size) [env: XDB_ASYNC_POOL_SIZE]
    #[arg(long)]
    pub pool_size: Option<usize>,
    /// Tasks worked on at once (async.max_in_flight) [env: XDB_ASYNC_MAX_IN_FLIGHT]
    #[arg(long)]
    pub max_in_flight: Option<usize>,
    /// Lease of a claimed task (async.lease_seconds) [env: XDB_ASYNC_LEASE_SECONDS]
    #[arg(long)]
    pub lease_seconds: Option<f64>,
    /// Fallback poll interval (async.poll_interval_ms) [env: XDB_ASYNC_POLL_INTERVAL_MS]
    #[arg(long)]
    pub poll_interval_ms: Option<u64>,
    /// Drain time on SIGTERM (async.shutdown_grace_seconds) [env: XDB_ASYNC_SHUTDOWN_GRACE_SECONDS]
    #[arg(long)]
    pub shutdown_grace_seconds: Option<f64>,
    /// Any setting as section.key=VALUE, e.g. `--set queue.mode=database` (repeatable)
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = xdb_config::parse_assignment)]
    pub set: Vec<(String, xdb_config::figment_value::Value)>,
}

impl AsyncServiceArgs {
    /// Loads and validates the settings; the async service's config is taken from them.
    pub fn load(&self) -> Result<(Settings, AsyncServiceConfig), ConfigError> {
        let mut overrides = Overrides::default();
        overrides
            .set("database.url", self.database_url.clone())
            .set("async.listen", self.listen.map(|a| a.to_string()))
            .set("async.instance_id", self.instance_id.clone())
            .set("async.advertise_url", self.advertise_url.clone())
            .set("async.pool_size", self.pool_size)
            .set("async.max_in_flight", self.max_in_flight)
            .set("async.lease_seconds", self.lease_seconds)
            .set("async.poll_interval_ms", self.poll_interval_ms)
            .set("async.shutdown_grace_seconds", self.shutdown_grace_seconds);
        for (key, value) in &self.set {
            overrides.assign(key.clone(), value.clone());
        }
        let settings = xdb_config::load(Service::Async, self.config.as_deref(), &overrides)?;
        let config = AsyncServiceConfig::from_settings(&settings);
        Ok((settings, config))
    }
}

impl AsyncServiceConfig {
    /// The async service's part of validated `settings`.
    pub fn from_settings(settings: &Settings) -> Self {
        let a = &settings.async_service;
        Self {
            database_url: settings.database.url.clone().unwrap_or_default(),
            instance_id: a.instance_id.clone(),
            listen: a.listen,
            advertise_url: a.advertise_url.clone(),
            pool_size: a.pool_size,
            max_in_flight: a.max_in_flight,
            lease_seconds: a.lease_seconds,
            poll_interval_ms: a.poll_interval_ms,
            default_api_timeout_seconds: a.default_api_timeout_seconds,
            max_worker_response_bytes: a.max_worker_response_bytes,
            shutdown_grace_seconds: a.shutdown_grace_seconds,
            queue_mode: settings.queue.mode,
            pulsar: settings.pulsar.clone(),
            worker_signing_secret: settings.security.worker_signing_secret.clone(),
            limits: settings.limits.clone(),
        }
    }
}
