//! Configuration of the XDB services: one TOML file shared by the API and the async
//! service, `XDB_<SECTION>_<KEY>` environment variables over it, command-line overrides
//! over those, validated once at start-up.
//!
//! This crate owns the file's schema, the layering and the checks that need no IO; it
//! never connects to anything. Each service turns [`Settings`] into its own typed config.

mod load;
mod logging;
mod settings;
mod validate;

pub use load::{load, parse_assignment, ConfigError, Overrides, CONFIG_ENV, SECTIONS};
pub use logging::{init_logging, log_layer};
pub use settings::{
    ApiSettings, AsyncSettings, DatabaseSettings, LogFormat, LogSettings, PulsarSettings,
    QueueMode, QueueSettings, SecuritySettings, Settings, SubscriptionType, TelemetrySettings,
};
pub use validate::Service;
pub use xdb_protocol::Limits;

/// Figment's value type, for `--set` overrides parsed by [`parse_assignment`].
pub mod figment_value {
    pub use figment::value::Value;
}
