//! Installs the process's `tracing` subscriber as `[log]` says.

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::settings::{LogFormat, LogSettings};

/// Logs to stdout in `settings.format` at `settings.level`; `RUST_LOG`, when set,
/// replaces the level (for a quick look at one module without editing the file).
pub fn init_logging(settings: &LogSettings) {
    tracing_subscriber::registry()
        .with(log_layer(settings))
        .init();
}

/// The log output of [`init_logging`] as a layer with its own filter, so other layers
/// (OpenTelemetry export) can share the subscriber without sharing the log level.
pub fn log_layer<S>(settings: &LogSettings) -> Box<dyn Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    let rust_log = std::env::var(EnvFilter::DEFAULT_ENV).ok();
    let filter = EnvFilter::try_new(filter_text(rust_log.as_deref(), &settings.level))
        .or_else(|_| EnvFilter::try_new(&settings.level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let layer = tracing_subscriber::fmt::layer();
    match settings.format {
        LogFormat::Text => layer.with_filter(filter).boxed(),
        LogFormat::Json => layer.json().with_filter(filter).boxed(),
    }
}

/// `RUST_LOG` when it says something, else the configured level: an empty or blank
/// `RUST_LOG` (as a wrapper script may export) would otherwise silence every log line.
fn filter_text<'a>(rust_log: Option<&'a str>, level: &'a str) -> &'a str {
    rust_log
        .filter(|text| !text.trim().is_empty())
        .unwrap_or(level)
}

#[cfg(test)]
mod tests {
    use super::filter_text;

    #[test]
    fn rust_log_wins_only_when_it_says_something() {
        assert_eq!(filter_text(Some("debug"), "info"), "debug");
        assert_eq!(filter_text(Some(""), "info"), "info");
        assert_eq!(filter_text(Some("  "), "warn"), "warn");
        assert_eq!(filter_text(None, "info"), "info");
    }
}
