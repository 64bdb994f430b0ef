//! The command line of `xdb-api-service`: a config file (`--config` or `XDB_CONFIG`),
//! `XDB_<SECTION>_<KEY>` variables over it, and these flags over both.

use std::net::SocketAddr;

use xdb_config::{ConfigArgs, ConfigError, Overrides, Service, Settings};

use crate::ApiServiceConfig;

/// Flags of the API service; every setting can also come from the file or environment.
#[derive(Debug, Clone, clap::Args)]
pub struct ApiServiceArgs {
    #[command(flatten)]
    pub common: ConfigArgs,
    #[command(flatten)]
    pub api: ApiArgs,
}

/// Flags of the `[api]` section, shared by `xdb-api-service` and `xdb-server`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ApiArgs {
    /// Listen address (api.listen) [env: XDB_API_LISTEN]
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// Database connections in the pool (api.pool_size) [env: XDB_API_POOL_SIZE]
    #[arg(long)]
    pub pool_size: Option<usize>,
    /// Internal listener for signed wake-ups, MySQL only (api.internal_listen) [env: XDB_API_INTERNAL_LISTEN]
    #[arg(long)]
    pub internal_listen: Option<SocketAddr>,
    /// URL other instances reach the internal listener at (api.advertise_url) [env: XDB_API_ADVERTISE_URL]
    #[arg(long)]
    pub advertise_url: Option<String>,
    /// Longest wait-for-completion a client may ask for, in seconds (api.max_wait_seconds) [env: XDB_API_MAX_WAIT_SECONDS]
    #[arg(long)]
    pub max_wait_seconds: Option<u32>,
}

impl ApiArgs {
    /// Adds these flags to `overrides`.
    pub fn add_to(&self, overrides: &mut Overrides) {
        overrides
            .set("api.listen", self.listen.map(|a| a.to_string()))
            .set("api.pool_size", self.pool_size)
            .set(
                "api.internal_listen",
                self.internal_listen.map(|a| a.to_string()),
            )
            .set("api.advertise_url", self.advertise_url.clone())
            .set("api.max_wait_seconds", self.max_wait_seconds);
    }
}

impl ApiServiceArgs {
    /// Loads and validates the settings; the API service's config is taken from them.
    pub fn load(&self) -> Result<(Settings, ApiServiceConfig), ConfigError> {
        let mut overrides = self.common.overrides();
        self.api.add_to(&mut overrides);
        let settings = self.common.load(Service::Api, overrides)?;
        let config = ApiServiceConfig::from_settings(&settings);
        Ok((settings, config))
    }
}
