//! The subscriber of a service process: log output plus, when `[telemetry]` is enabled,
//! spans exported over OTLP/HTTP.

use std::fmt;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;
use xdb_config::{LogSettings, TelemetrySettings};

/// The exporter behind the subscriber; [`Telemetry::shutdown`] sends what is buffered.
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

/// The exporter could not be built, or a subscriber was already installed.
#[derive(Debug)]
pub struct TelemetryError(String);

impl fmt::Display for TelemetryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "telemetry: {}", self.0)
    }
}

impl std::error::Error for TelemetryError {}

/// Installs the process-wide subscriber: `log`'s output and, when `telemetry.enabled`,
/// an OpenTelemetry layer exporting `info` and higher spans. `default_service_name`
/// names the spans' service unless `telemetry.service_name` does.
pub fn init(
    log: &LogSettings,
    telemetry: &TelemetrySettings,
    default_service_name: &str,
) -> Result<Telemetry, TelemetryError> {
    let provider = telemetry
        .enabled
        .then(|| provider(telemetry, default_service_name))
        .transpose()?;
    // Spans are exported at `info` whatever the log level, so quiet logs keep traces.
    let otel = provider.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("xdb"))
            .with_filter(LevelFilter::INFO)
    });
    tracing_subscriber::registry()
        .with(xdb_config::log_layer(log))
        .with(otel)
        .try_init()
        .map_err(|error| TelemetryError(error.to_string()))?;
    Ok(Telemetry { provider })
}

fn provider(
    telemetry: &TelemetrySettings,
    default_service_name: &str,
) -> Result<SdkTracerProvider, TelemetryError> {
    let endpoint = format!(
        "{}/v1/traces",
        telemetry.otlp_endpoint.trim().trim_end_matches('/')
    );
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(endpoint)
        .build()
        .map_err(|error| TelemetryError(format!("cannot build the OTLP exporter: {error}")))?;
    let service_name = telemetry
        .service_name
        .clone()
        .unwrap_or_else(|| default_service_name.to_string());
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
            telemetry.sample_ratio,
        ))))
        .with_resource(Resource::builder().with_service_name(service_name).build())
        .build())
}

impl Telemetry {
    /// Exports every finished span now; blocks until the collector answered.
    pub fn force_flush(&self) -> Result<(), TelemetryError> {
        match &self.provider {
            Some(provider) => provider
                .force_flush()
                .map_err(|error| TelemetryError(format!("flushing spans failed: {error}"))),
            None => Ok(()),
        }
    }

    /// Flushes and stops the exporter (at process exit).
    pub fn shutdown(self) {
        if let Some(provider) = self.provider {
            if let Err(error) = provider.shutdown() {
                tracing::warn!(%error, "stopping the span exporter failed");
            }
        }
    }
}
