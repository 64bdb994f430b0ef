use xdb_config::{ApiSettings, DatabaseSettings, Limits, SecuritySettings, Settings};

/// The API service's part of the configuration: the sections of `xdb-config`'s
/// [`Settings`] it uses, loaded from the config file, `XDB_` variables and flags by `cli`.
#[derive(Debug, Clone)]
pub struct ApiServiceConfig {
    /// `database.url`: the user's PostgreSQL or MySQL/MariaDB database, with the XDB
    /// schema installed.
    pub database_url: String,
    /// `[api]`: listen address, pool, request size, advertised URL, longest wait.
    pub api: ApiSettings,
    /// `[security]`: API tokens, allowed worker URLs, worker-call signing.
    pub security: SecuritySettings,
    /// `[limits]`: sizes of ids, values, pages and worker URLs.
    pub limits: Limits,
}

impl ApiServiceConfig {
    /// The config file's defaults for `database_url`, for embedding and tests.
    pub fn new(database_url: impl Into<String>) -> Self {
        Self::from_settings(&Settings {
            database: DatabaseSettings {
                url: Some(database_url.into()),
            },
            ..Settings::default()
        })
    }

    /// The API service's part of validated `settings`.
    pub fn from_settings(settings: &Settings) -> Self {
        Self {
            database_url: settings.database.url.clone().unwrap_or_default(),
            api: settings.api.clone(),
            security: settings.security.clone(),
            limits: settings.limits.clone(),
        }
    }
}
