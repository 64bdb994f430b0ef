//! The command line of `xdb-async-service`: a config file (`--config` or `XDB_CONFIG`),
//! `XDB_<SECTION>_<KEY>` variables over it, and these flags over both.

use std::net::SocketAddr;

use xdb_config::{ConfigArgs, ConfigError, Service, Settings};

use crate::AsyncServiceConfig;

/// Flags of the async service; every setting can also come from the file or environment.
#[derive(Debug, Clone, clap::Args)]
pub struct AsyncServiceArgs {
    #[command(flatten)]
    pub common: ConfigArgs,
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
}

impl AsyncServiceArgs {
    /// Loads and validates the settings; the async service's config is taken from them.
    pub fn load(&self) -> Result<(Settings, AsyncServiceConfig), ConfigError> {
        let mut overrides = self.common.overrides();
        overrides
            .set("async.listen", self.listen.map(|a| a.to_string()))
            .set("async.instance_id", self.instance_id.clone())
            .set("async.advertise_url", self.advertise_url.clone())
            .set("async.pool_size", self.pool_size)
            .set("async.max_in_flight", self.max_in_flight)
            .set("async.lease_seconds", self.lease_seconds)
            .set("async.poll_interval_ms", self.poll_interval_ms)
            .set("async.shutdown_grace_seconds", self.shutdown_grace_seconds);
        let settings = self.common.load(Service::Async, overrides)?;
        let config = AsyncServiceConfig::from_settings(&settings);
        Ok((settings, config))
    }
}
