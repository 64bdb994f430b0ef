//! The command line of `xdb-api-service`: a config file (`--config` or `XDB_CONFIG`),
//! `XDB_<SECTION>_<KEY>` variables over it, and these flags over both.

use std::net::SocketAddr;
use std::path::PathBuf;

use xdb_config::{ConfigError, Overrides, Service, Settings};

use crate::ApiServiceConfig;

/// Flags of the API service; every setting can also come from the file or environment.
#[derive(Debug, Clone, clap::Args)]
pub struct ApiServiceArgs {
    /// TOML config file shared by both services (see deploy/xdb.example.toml) [env: XDB_CONFIG]
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Database URL (database.url) [env: XDB_DATABASE_URL]
    #[arg(long)]
    pub database_url: Option<String>,
    /// Listen address (api.listen) [env: XDB_API_LISTEN]
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// Database connections in the pool (api.pool_size) [env: XDB_API_POOL_SIZE]
    #[arg(long)]
    pub pool_size: Option<usize>,
    /// URL other instances reach this one at (api.advertise_url) [env: XDB_API_ADVERTISE_URL]
    #[arg(long)]
    pub advertise_url: Option<String>,
    /// Any setting as section.key=VALUE, e.g. `--set log.format=json` (repeatable)
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = xdb_config::parse_assignment)]
    pub set: Vec<(String, xdb_config::figment_value::Value)>,
}

impl ApiServiceArgs {
    /// Loads and validates the settings; the API service's config is taken from them.
    pub fn load(&self) -> Result<(Settings, ApiServiceConfig), ConfigError> {
        let mut overrides = Overrides::default();
        overrides
            .set("database.url", self.database_url.clone())
            .set("api.listen", self.listen.map(|a| a.to_string()))
            .set("api.pool_size", self.pool_size)
            .set("api.advertise_url", self.advertise_url.clone());
        for (key, value) in &self.set {
            overrides.assign(key.clone(), value.clone());
        }
        let settings = xdb_config::load(Service::Api, self.config.as_deref(), &overrides)?;
        let config = ApiServiceConfig::from_settings(&settings);
        Ok((settings, config))
    }
}

impl ApiServiceConfig {
    /// The API service's part of validated `settings`.
    pub fn from_settings(settings: &Settings) -> Self {
        let api = &settings.api;
        Self {
            database_url: settings.database.url.clone().unwrap_or_default(),
            listen: api.listen,
            pool_size: api.pool_size,
            max_request_bytes: api.max_request_bytes,
            advertise_url: api.advertise_url.clone(),
            max_wait_seconds: api.max_wait_seconds,
            api_tokens: settings.security.api_tokens.clone(),
            worker_url_prefixes: settings.security.worker_url_prefixes.clone(),
            worker_signing_secret: settings.security.worker_signing_secret.clone(),
            limits: settings.limits.clone(),
        }
    }
}
