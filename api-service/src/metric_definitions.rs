//! The API service's Prometheus metrics: every name, label and bucket in one place.
//! Each service instance has its own registry, served on its `/metrics`.

use prometheus::{
    Encoder, Gauge, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, Opts, Registry,
    TextEncoder,
};

/// Request latency buckets, in seconds; long polls (wait for completion) reach minutes.
const REQUEST_BUCKETS: [f64; 13] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0, 300.0,
];

/// The `answered_from` label of `xdb_api_wait_closes_total`: the close's notification
/// carried the answer, or the execution was read back.
pub(crate) const ANSWERED_FROM_NOTIFICATION: &str = "notification";
pub(crate) const ANSWERED_FROM_READ: &str = "read";
const ANSWERED_FROM: [&str; 2] = [ANSWERED_FROM_NOTIFICATION, ANSWERED_FROM_READ];

/// The instance's metrics.
pub struct ApiMetrics {
    registry: Registry,
    /// `xdb_api_requests_total{method, route, status}`.
    pub(crate) requests: IntCounterVec,
    /// `xdb_api_request_duration_seconds{method, route}`.
    pub(crate) request_seconds: HistogramVec,
    /// `xdb_api_requests_refused_total{reason}`: 503 `OVERLOADED` answers (see
    /// `admission::reason`).
    pub(crate) refused: IntCounterVec,
    /// `xdb_api_wait_closes_total{answered_from}`: long polls woken by their execution's
    /// close, answered from the close's notification or by reading the execution back.
    pub(crate) wait_closes: IntCounterVec,
    /// `xdb_api_waits_registered`: long polls registered for their execution's close now.
    pub(crate) waits_registered: IntGauge,
    /// `xdb_clock_offset_seconds`: how far this machine's clock is ahead of the
    /// database's, as the store last measured it (set from `clock` at each scrape).
    clock_offset_seconds: Gauge,
    clock: std::sync::OnceLock<xdb_persistence::DatabaseClock>,
}

impl ApiMetrics {
    pub fn new() -> Self {
        let registry = Registry::new();
        let requests = IntCounterVec::new(
            Opts::new(
                "xdb_api_requests_total",
                "API requests answered, by route and status.",
            ),
            &["method", "route", "status"],
        )
        .expect("valid metric");
        let request_seconds = HistogramVec::new(
            HistogramOpts::new(
                "xdb_api_request_duration_seconds",
                "API request latency, by route.",
            )
            .buckets(REQUEST_BUCKETS.to_vec()),
            &["method", "route"],
        )
        .expect("valid metric");
        let refused = IntCounterVec::new(
            Opts::new(
                "xdb_api_requests_refused_total",
                "Requests refused with 503 OVERLOADED, by reason: in_flight, waiting \
                 (no slot within api.admission_wait_ms), pool_wait (no database \
                 connection within api.pool_wait_ms).",
            ),
            &["reason"],
        )
        .expect("valid metric");
        registry
            .register(Box::new(refused.clone()))
            .expect("metric names are unique");
        // Every series exists from the start at 0, so a dashboard's rate() over a fresh
        // instance finds it, and the first refusal shows as a step rather than a new series.
        for reason in crate::admission::reason::ALL {
            refused.with_label_values(&[reason]);
        }
        let wait_closes = IntCounterVec::new(
            Opts::new(
                "xdb_api_wait_closes_total",
                "Waits for completion woken by their execution's close, by where the \
                 answer came from: notification (the close carried it) or read.",
            ),
            &["answered_from"],
        )
        .expect("valid metric");
        registry
            .register(Box::new(wait_closes.clone()))
            .expect("metric names are unique");
        for answered_from in ANSWERED_FROM {
            wait_closes.with_label_values(&[answered_from]);
        }
        let waits_registered = IntGauge::new(
            "xdb_api_waits_registered",
            "Waits for completion registered for their execution's close now.",
        )
        .expect("valid metric");
        registry
            .register(Box::new(waits_registered.clone()))
            .expect("metric names are unique");
        let clock_offset_seconds = Gauge::new(
            "xdb_clock_offset_seconds",
            "How far this instance's clock is ahead of the database's (negative: behind), \
             as last measured. XDB goes by the database's clock; beyond a second, fix NTP.",
        )
        .expect("valid metric");
        registry
            .register(Box::new(clock_offset_seconds.clone()))
            .expect("metric names are unique");
        registry
            .register(Box::new(requests.clone()))
            .expect("metric names are unique");
        registry
            .register(Box::new(request_seconds.clone()))
            .expect("metric names are unique");
        Self {
            registry,
            requests,
            request_seconds,
            refused,
            wait_closes,
            waits_registered,
            clock_offset_seconds,
            clock: std::sync::OnceLock::new(),
        }
    }

    /// Reports `clock`'s offset as `xdb_clock_offset_seconds`.
    pub fn with_database_clock(self, clock: xdb_persistence::DatabaseClock) -> Self {
        let _ = self.clock.set(clock);
        self
    }

    /// The Prometheus text exposition of every metric.
    pub(crate) fn encode(&self) -> String {
        if let Some(clock) = self.clock.get() {
            self.clock_offset_seconds.set(clock.offset_seconds());
        }
        let mut text = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut text)
            .expect("encoding into memory cannot fail");
        String::from_utf8(text).expect("the text format is UTF-8")
    }
}

impl Default for ApiMetrics {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_instance_reports_every_refusal_reason_and_wait_answer_at_zero() {
        let text = ApiMetrics::new().encode();
        for reason in crate::admission::reason::ALL {
            let series = format!("xdb_api_requests_refused_total{{reason=\"{reason}\"}} 0\n");
            assert!(text.contains(&series), "{series} missing from:\n{text}");
        }
        for answered_from in ANSWERED_FROM {
            let series =
                format!("xdb_api_wait_closes_total{{answered_from=\"{answered_from}\"}} 0\n");
            assert!(text.contains(&series), "{series} missing from:\n{text}");
        }
    }
}
