//! The configuration file's schema and its defaults. Every section and key is optional in
//! the file; an unknown section or key is an error, so a typo never goes unnoticed.
//!
//! See `deploy/xdb.example.toml` for a documented file.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Everything both services read. Sections a service does not use are still checked for
/// unknown keys, so one file can serve both.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    pub database: DatabaseSettings,
    pub log: LogSettings,
    pub queue: QueueSettings,
    pub pulsar: PulsarSettings,
    pub api: ApiSettings,
    #[serde(rename = "async")]
    pub async_service: AsyncSettings,
    pub security: SecuritySettings,
    pub telemetry: TelemetrySettings,
    /// `[limits]`: sizes of ids, attribute values, queue messages, list pages and worker
    /// URLs, for both services (the API service's requests, the workers' answers).
    pub limits: xdb_protocol::Limits,
}

/// `[database]`: the user's database, with the XDB system tables installed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DatabaseSettings {
    /// `postgres://…`, `mysql://…` or `mariadb://…` (see [`crate::DatabaseUrl`]);
    /// required (no default).
    pub url: Option<String>,
}

impl DatabaseSettings {
    /// `url`, parsed; an error when it is missing or not a database URL (which
    /// [`crate::load`] reports at start-up already).
    pub fn parsed_url(&self) -> Result<crate::DatabaseUrl, crate::DatabaseUrlError> {
        crate::DatabaseUrl::parse(self.url.as_deref().unwrap_or_default())
    }
}

/// `[log]`: how the services log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogSettings {
    pub format: LogFormat,
    /// A `tracing` filter such as `info` or `info,xdb_async_service=debug`;
    /// `RUST_LOG`, when set, wins.
    pub level: String,
}

impl Default for LogSettings {
    fn default() -> Self {
        Self {
            format: LogFormat::Text,
            level: "info".into(),
        }
    }
}

/// Human-readable lines or one JSON object per line (for log collectors).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// `[telemetry]`: OpenTelemetry traces, exported over OTLP/HTTP (protobuf). Off by
/// default; Prometheus metrics are always served on `/metrics`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelemetrySettings {
    pub enabled: bool,
    /// The collector's OTLP/HTTP base URL; spans go to `<endpoint>/v1/traces`.
    pub otlp_endpoint: String,
    /// The spans' `service.name` (default: the service's binary name).
    pub service_name: Option<String>,
    /// Share of new traces recorded, 0 to 1; a trace started upstream (an incoming
    /// `traceparent`) follows the caller's decision.
    pub sample_ratio: f64,
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        Self {
            enabled: false,
            otlp_endpoint: "http://localhost:4318".into(),
            service_name: None,
            sample_ratio: 1.0,
        }
    }
}

/// `[queue]`: how the async service learns of work.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QueueSettings {
    pub mode: QueueMode,
}

/// The task source: the database's own rows (default) or Pulsar CDC topics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueMode {
    #[default]
    Database,
    Pulsar,
}

/// `[pulsar]`: used only when `queue.mode = "pulsar"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PulsarSettings {
    /// Broker URL, `pulsar://host:6650` or `pulsar+ssl://host:6651`; required in Pulsar mode.
    pub service_url: Option<String>,
    /// `pulsar+ssl://` only: the CA certificate(s) (PEM) the broker's certificate must
    /// lead to, beside the public web roots; the broker's host name is checked too.
    pub tls_ca_file: Option<PathBuf>,
    /// Tenant and namespace of the CDC topics.
    pub tenant: String,
    pub namespace: String,
    /// Debezium's `topic.prefix`: topics are `<prefix>.<schema>.<table>`.
    pub topic_prefix: String,
    /// The subscription all async-service instances share.
    pub subscription: String,
    /// How the subscription spreads messages over the instances: `shared` (any message
    /// to any instance) or `key_shared` (all messages of one process execution to one
    /// instance at a time, in order). Every instance must use the same.
    pub subscription_type: SubscriptionType,
    /// A task due within this long is held in memory until due; a later one becomes a
    /// delayed message on the timer topic. Also how long a timer message that the broker
    /// delivered early is held before it is published again.
    pub hold_ms: u64,
    /// Safety net: a task due for this long that no change event has run (a lost
    /// event) is claimed from the database directly, looked for every half of this;
    /// 0 turns it off.
    pub sweep_after_ms: u64,
    /// Deliveries of a message whose handling keeps failing (the database refusing its
    /// transition) before it goes to the dead-letter topic, whose consumer applies the
    /// state's failure recovery.
    pub max_deliveries: u32,
    /// Pause, in milliseconds, before a message whose handling failed (the database
    /// refused its transition or could not be reached) is handled again or negatively
    /// acknowledged, and so delivered again; each such delivery counts towards
    /// `max_deliveries`.
    pub nack_delay_ms: u64,
}

/// `pulsar.subscription_type`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubscriptionType {
    #[default]
    Shared,
    KeyShared,
}

impl Default for PulsarSettings {
    fn default() -> Self {
        Self {
            service_url: None,
            tls_ca_file: None,
            tenant: "public".into(),
            namespace: "default".into(),
            topic_prefix: "xdb".into(),
            subscription: "xdb-async-service".into(),
            subscription_type: SubscriptionType::Shared,
            hold_ms: 30_000,
            sweep_after_ms: 60_000,
            max_deliveries: 20,
            nack_delay_ms: 1_000,
        }
    }
}

/// `[api]`: the API service.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApiSettings {
    pub listen: SocketAddr,
    /// Database connections in the pool.
    pub pool_size: usize,
    /// Largest request body accepted, in bytes.
    pub max_request_bytes: usize,
    /// URL other instances reach this one at (MySQL only; default: from `listen`).
    pub advertise_url: Option<String>,
    /// Longest wait-for-completion long poll, in seconds.
    pub max_wait_seconds: u32,
    /// Serve the web console at `/ui` (its API calls take the same bearer tokens).
    pub console: bool,
    /// The async service's `/metrics` URL, which the console's dashboard reads through
    /// this service (`/ui/metrics/async`); `xdb-server` sets its own. Default: none, and
    /// the dashboard shows the API service's numbers only.
    pub console_async_metrics_url: Option<String>,
    /// Service-API requests handled at once; more wait up to `admission_wait_ms` for a
    /// slot, then get 503 `OVERLOADED`. Default: 8 × `pool_size`.
    pub max_in_flight_requests: Option<usize>,
    /// How long a request may wait for an in-flight slot before it is refused.
    pub admission_wait_ms: u64,
    /// Wait-for-completion long polls held at once, beside `max_in_flight_requests` (a
    /// long poll holds no connection while it waits, so it does not take a short
    /// call's slot).
    pub max_waiting_requests: usize,
    /// How long a request may wait for a database connection before it is refused
    /// with 503 `OVERLOADED` (nothing done), rather than queueing on a slow database.
    pub pool_wait_ms: u64,
}

impl ApiSettings {
    /// `max_in_flight_requests`, or its default sized from the pool.
    pub fn in_flight_limit(&self) -> usize {
        self.max_in_flight_requests
            .unwrap_or(self.pool_size.saturating_mul(8))
    }
}

impl Default for ApiSettings {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8801)),
            pool_size: 16,
            max_request_bytes: 1024 * 1024,
            advertise_url: None,
            max_wait_seconds: 300,
            console: true,
            console_async_metrics_url: None,
            max_in_flight_requests: None,
            admission_wait_ms: 100,
            max_waiting_requests: 1000,
            pool_wait_ms: 1000,
        }
    }
}

/// `[async]`: the async service.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AsyncSettings {
    /// Health probes and the internal API.
    pub listen: SocketAddr,
    /// Names this instance's leases; unique per instance (default: host name + random).
    pub instance_id: Option<String>,
    /// URL other instances reach this one at (MySQL only; default: from `listen`).
    pub advertise_url: Option<String>,
    /// Database connections in the pool.
    pub pool_size: usize,
    /// Worker calls (tasks) in flight at once.
    pub max_in_flight: usize,
    /// How long a claimed task stays ours without renewal.
    pub lease_seconds: f64,
    /// An async instance whose heartbeat is older than this (by the database clock) is
    /// taken for dead: its leases are released at once instead of running out. Each
    /// instance heartbeats every quarter of it. 0: off (only leases running out).
    pub liveness_timeout_ms: u64,
    /// Fallback poll interval, in milliseconds.
    pub poll_interval_ms: u64,
    /// Timeout of a worker call when the state sets none, in seconds.
    pub default_api_timeout_seconds: u32,
    /// Largest worker response accepted, in bytes.
    pub max_worker_response_bytes: usize,
    /// On SIGTERM, how long in-flight work may run before it is abandoned and its
    /// leases released; keep it below the orchestrator's kill deadline.
    pub shutdown_grace_seconds: f64,
    /// Database queue: after this many refusals in a row of a task's transition (with
    /// growing pauses between, about 20 s for 10), the task is parked until an operator's
    /// retry-now instead of looping. 0: never park.
    pub park_after_refusals: u32,
    /// Gauge `xdb_async_states_past_attempts` counts state calls (WAIT_UNTIL/EXECUTE)
    /// whose attempt is this or later: states that keep failing, for an alert.
    pub attempts_alert_threshold: u32,
}

impl Default for AsyncSettings {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8802)),
            instance_id: None,
            advertise_url: None,
            pool_size: 16,
            max_in_flight: 256,
            lease_seconds: 30.0,
            liveness_timeout_ms: 1000,
            poll_interval_ms: 1000,
            default_api_timeout_seconds: 10,
            max_worker_response_bytes: 4 * 1024 * 1024,
            shutdown_grace_seconds: 20.0,
            park_after_refusals: 10,
            attempts_alert_threshold: 5,
        }
    }
}

/// `[security]`: who may call the service API, which workers XDB calls, and how workers
/// know a call comes from XDB. Everything is off by default, for local development.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SecuritySettings {
    /// Bearer tokens the service API accepts (`Authorization: Bearer <token>`), each
    /// with every role; kept for configurations written before `tokens`. With neither
    /// set the API is open. Several allow rotating a token without downtime.
    pub api_tokens: Vec<String>,
    /// `[[security.tokens]]`: bearer tokens with the roles they grant (read, operate,
    /// client). Combined with `api_tokens`; any token at all closes the API to others.
    pub tokens: Vec<ApiToken>,
    /// URL prefixes a start request's `workerUrl` must begin with (e.g.
    /// `http://workers.internal:8080/`); empty allows any http(s) URL.
    pub worker_url_prefixes: Vec<String>,
    /// Shared with the workers: every call to a worker is signed with it (header
    /// `X-XDB-Signature`, HMAC-SHA256); unset sends no signature.
    pub worker_signing_secret: Option<String>,
    /// CA certificate(s) (PEM) that `https://` workers' certificates may lead to,
    /// beside the public web roots: for workers with certificates of a private CA.
    pub worker_ca_file: Option<PathBuf>,
    /// A client certificate (PEM chain) XDB shows to `https://` workers that ask for
    /// one (mutual TLS); set together with `worker_client_key_file`.
    pub worker_client_cert_file: Option<PathBuf>,
    /// The private key (PEM) of `worker_client_cert_file`.
    pub worker_client_key_file: Option<PathBuf>,
}

impl SecuritySettings {
    /// Whether the client paths take any request (no token of either kind is set).
    pub fn is_open(&self) -> bool {
        self.api_tokens.is_empty() && self.tokens.is_empty()
    }
}

/// One `[[security.tokens]]` entry.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiToken {
    /// Names the token in logs and error messages, where the secret never appears.
    pub name: String,
    /// The secret sent as `Authorization: Bearer <token>`.
    pub token: String,
    /// What the token may do; at least one.
    pub roles: Vec<xdb_protocol::paths::Role>,
}

impl std::fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiToken")
            .field("name", &self.name)
            .field("token", &"redacted")
            .field("roles", &self.roles)
            .finish()
    }
}

// Secrets stay out of logs and error messages.
impl std::fmt::Debug for SecuritySettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecuritySettings")
            .field(
                "api_tokens",
                &format_args!("[{} redacted]", self.api_tokens.len()),
            )
            .field("tokens", &self.tokens)
            .field("worker_url_prefixes", &self.worker_url_prefixes)
            .field(
                "worker_signing_secret",
                &self.worker_signing_secret.as_ref().map(|_| "redacted"),
            )
            .field("worker_ca_file", &self.worker_ca_file)
            .field("worker_client_cert_file", &self.worker_client_cert_file)
            .field("worker_client_key_file", &self.worker_client_key_file)
            .finish()
    }
}
