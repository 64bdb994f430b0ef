//! Configuration of the XDB services: one TOML file shared by the API and the async
//! service (and `xdb-server`, which runs both), `XDB_<SECTION>_<KEY>` environment
//! variables over it, command-line overrides over those, validated once at start-up.
//!
//! This crate owns the file's schema, the layering, the checks at start-up (certificate
//! and key files are read then too), the database URL ([`DatabaseUrl`], TLS parameters
//! included) and, with the `clap` feature, the flags every binary shares
//! ([`ConfigArgs`]); it never connects to anything. Each service keeps the
//! sections of [`Settings`] it uses.

#[cfg(feature = "clap")]
mod cli;
mod database_tls;
mod database_url;
mod load;
mod logging;
mod reference;
mod settings;
mod tls_files;
mod validate;

#[cfg(feature = "clap")]
pub use cli::ConfigArgs;
pub use database_tls::{
    ClientCertificate, DatabaseTls, ServerCheck, TlsParameterNames, TlsUse, TrustedRoots,
};
pub use database_url::{DatabaseUrl, DatabaseUrlError, Dialect};
pub use load::{load, parse_assignment, ConfigError, Overrides, CONFIG_ENV, SECTIONS};
pub use logging::{init_logging, log_layer};
pub use reference::{configuration_markdown, REGENERATE_COMMAND};
pub use settings::{
    ApiSettings, ApiToken, AsyncSettings, DatabaseSettings, LogFormat, LogSettings, PulsarSettings,
    QueueMode, QueueSettings, SecuritySettings, Settings, SubscriptionType, TelemetrySettings,
};
pub use tls_files::{database_problems, read_certificates, read_private_key};
pub use validate::Service;
pub use xdb_protocol::Limits;

/// Figment's value type, for `--set` overrides parsed by [`parse_assignment`].
pub mod figment_value {
    pub use figment::value::Value;
}
