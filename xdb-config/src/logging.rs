//! Installs the process's `tracing` subscriber as `[log]` says.

use tracing_subscriber::EnvFilter;

use crate::settings::{LogFormat, LogSettings};

/// Logs to stdout in `settings.format` at `settings.level`; `RUST_LOG`, when set,
/// replaces the level (for a quick look at one module without editing the file).
pub fn init_logging(settings: &LogSettings) {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&settings.level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    match settings.format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}
