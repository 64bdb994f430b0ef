//! The XDB API service: the synchronous REST API that clients call.
//!
//! It validates requests, runs each as one storage transaction and answers; it never calls
//! a worker's state APIs (the async service does) and never holds work in memory, so any
//! number of instances can serve behind a load balancer.

mod admission;
mod auth;
mod cli;
mod closed_waiters;
mod config;
mod contract;
mod definitions;
mod error;
#[cfg(feature = "fault-injection")]
pub mod fault_injection;
mod json;
mod metric_definitions;
mod observe;
mod receipt_expiry;
mod routes;

use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, FromRef};
use axum::routing::{get, post};
use axum::{middleware, Router};
use futures::FutureExt;
use tokio::net::TcpListener;
use xdb_cluster::{InternalAuth, PeerNotifier, Registration};
use xdb_config::DatabaseUrl;
use xdb_persistence::{InstanceRegistry, Notifications, ProcessApi, ServiceInstance, ServiceKind};

pub use cli::{ApiArgs, ApiServiceArgs};
pub use config::ApiServiceConfig;
pub use contract::Contract;
pub use definitions::Definitions;
pub use error::ApiError;
pub use metric_definitions::ApiMetrics;

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    /// The process API: all the handlers ask of the database.
    pub store: Arc<dyn ProcessApi>,
    /// Batch operations' rows (the async service runs them).
    pub batches: Arc<dyn xdb_persistence::BatchStore>,
    /// Schedules' rows (the async service fires them).
    pub schedules: Arc<dyn xdb_persistence::ScheduleStore>,
    /// Flow limits' rows (the async service applies them).
    pub flow_limits: Arc<dyn xdb_persistence::FlowLimitStore>,
    /// Registered process definitions, which requests are checked against.
    pub definitions: Arc<definitions::Definitions>,
    /// Where this instance registers for closed-execution notices (MySQL).
    pub registry: Arc<dyn InstanceRegistry>,
    pub notifications: Notifications,
    /// Requests waiting for executions to close, woken by `notifications`.
    pub(crate) closed_waiters: Arc<closed_waiters::ClosedWaiters>,
    pub config: Arc<ApiServiceConfig>,
    /// Calls workers for RPCs.
    pub workers: xdb_worker_client::WorkerClient,
    /// Wakes async-service instances where the database cannot (MySQL).
    pub async_peers: PeerNotifier,
    /// Served on `/metrics`.
    pub metrics: Arc<ApiMetrics>,
    /// The served OpenAPI document and the request validators compiled from it.
    pub contract: Arc<Contract>,
    /// Signs this instance's calls to async instances and checks theirs (MySQL).
    pub internal_auth: InternalAuth,
    /// Turns true when [`serve`]'s shutdown signal arrives: open wait-for-completion
    /// long polls then answer at once (`timedOut: true` for a running execution), so
    /// their clients ask another instance instead of holding this one's drain.
    pub(crate) draining: Arc<tokio::sync::watch::Sender<bool>>,
    /// Whether the database answered the last background probe: what `/health/ready`
    /// reports, read without a query.
    pub(crate) database_health: xdb_persistence::DatabaseHealth,
}

impl FromRef<AppState> for InternalAuth {
    fn from_ref(state: &AppState) -> Self {
        state.internal_auth.clone()
    }
}

/// The service's routes over `state`, each traced and counted, and `/metrics`.
pub fn router(state: AppState) -> Router {
    let limit = state.config.api.max_request_bytes;
    let admission = Arc::new(admission::Admission::new(
        &state.config.api,
        state.metrics.clone(),
    ));
    routes::routes(state.config.api.console)
        // Inside `observe`, so refusals are traced and counted like any answer.
        .route_layer(middleware::from_fn_with_state(admission, admission::admit))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            observe::observe,
        ))
        .route(xdb_protocol::paths::METRICS, get(observe::metrics))
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::require_token,
        ))
        .with_state(state)
}

/// The internal listener's largest request body (axum's default, stated so that a 413
/// can name it): a wake-up carries a few KiB of outcome.
pub(crate) const INTERNAL_MAX_REQUEST_BYTES: usize = 2 * 1024 * 1024;

/// The internal listener's routes: async instances' signed wake-ups (MySQL), apart from
/// the public listener so that no client can reach them.
pub fn internal_router(state: AppState) -> Router {
    Router::new()
        .route(
            xdb_protocol::paths::INTERNAL_NOTIFY,
            post(routes::internal_notify),
        )
        .layer(DefaultBodyLimit::max(INTERNAL_MAX_REQUEST_BYTES))
        // Counted on `/metrics` like every route.
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            observe::observe,
        ))
        .with_state(state)
}

/// Connects to the database and builds the shared state.
pub async fn connect(config: ApiServiceConfig) -> anyhow::Result<AppState> {
    let database_url = DatabaseUrl::parse(&config.database_url)
        .map_err(|error| anyhow::anyhow!("invalid database URL: {error}"))?;
    xdb_sys_schema::check(database_url.as_str())
        .await?
        .ensure_current()?;
    let store = xdb_persistence::connect_with(
        database_url.as_str(),
        xdb_persistence::StoreOptions {
            pool_size: config.api.pool_size,
            pool_wait: Some(Duration::from_millis(config.api.pool_wait_ms)),
            longest_query: Duration::from_millis(config.api.query_timeout_ms),
            ..Default::default()
        },
    )
    .await?;
    let database_health = xdb_persistence::DatabaseHealth::start(store.clone());
    let internal_auth = InternalAuth::resolve(
        config.security.internal_secret.as_deref(),
        store.as_ref(),
        store.database_clock().clone(),
        config.security.accept_unsigned_internal_calls,
    )
    .await?;
    let (notifications, async_peers) = match store.listen(xdb_persistence::Listen::ClosedProcesses)
    {
        Some(notifications) => (notifications, PeerNotifier::disabled()),
        None => (
            Notifications::new(),
            PeerNotifier::start(store.clone(), ServiceKind::Async, internal_auth.clone()),
        ),
    };
    Ok(AppState {
        contract: Arc::new(Contract::new(&config.limits, config.api.max_wait_seconds)?),
        async_peers,
        metrics: Arc::new(ApiMetrics::new().with_database_clock(store.database_clock().clone())),
        registry: store.clone(),
        batches: store.clone(),
        schedules: store.clone(),
        flow_limits: store.clone(),
        definitions: Arc::new(definitions::Definitions::new(
            store.clone(),
            database_url.dialect() == xdb_config::Dialect::MySql,
        )),
        store,
        closed_waiters: closed_waiters::ClosedWaiters::start(&notifications),
        notifications,
        workers: xdb_worker_client::WorkerClient::with_tls(
            config.api.max_request_bytes.max(4 * 1024 * 1024),
            &xdb_worker_client::WorkerTls {
                ca_file: config.security.worker_ca_file.clone(),
                client_certificate: config
                    .security
                    .worker_client_cert_file
                    .clone()
                    .zip(config.security.worker_client_key_file.clone()),
            },
        )?
        .with_signing_secret(config.security.worker_signing_secret.as_deref()),
        config: Arc::new(config),
        internal_auth,
        draining: Arc::new(tokio::sync::watch::Sender::new(false)),
        database_health,
    })
}

/// Serves on `listener` until `shutdown` resolves, then finishes in-flight requests;
/// open wait-for-completion long polls answer at once then (`timedOut: true` for an
/// execution still running) rather than running out their timeouts.
/// Where async instances announce closed executions over HTTP (MySQL), the internal
/// listener (`api.internal_listen`) serves their signed calls beside it, and this
/// instance registers its URL.
pub async fn serve(
    state: AppState,
    listener: TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let address = listener.local_addr()?;
    tracing::info!(%address, "XDB API service listening");
    let retention = Duration::from_secs(state.config.api.request_id_retention_seconds);
    let expiry = receipt_expiry::start(state.store.clone(), retention);
    let shutdown = shutdown.shared();
    let internal = if state.async_peers.is_enabled() {
        let listener = xdb_cluster::bind_listener(state.config.api.internal_listen)?;
        let internal_address = listener.local_addr()?;
        tracing::info!(address = %internal_address, "XDB API service's internal listener");
        let instance = ServiceInstance {
            instance_id: format!("api-{}", uuid::Uuid::new_v4().simple()),
            service: ServiceKind::Api,
            notify_url: state
                .config
                .api
                .advertise_url
                .clone()
                .unwrap_or_else(|| format!("http://{internal_address}")),
            liveness_timeout: None,
        };
        let served = tokio::spawn(
            axum::serve(listener, internal_router(state.clone()))
                .with_graceful_shutdown(shutdown.clone())
                .into_future(),
        );
        let registration = Registration::start(state.registry.clone(), instance).await;
        Some((served, registration))
    } else {
        None
    };
    let draining = state.draining.clone();
    let shutdown = shutdown.map(move |()| {
        tracing::info!("draining: open waits answer now");
        draining.send_replace(true);
    });
    let served = axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await;
    expiry.abort();
    if let Some((internal, registration)) = internal {
        registration.stop().await;
        if let Err(error) = internal.await? {
            tracing::error!(%error, "the internal listener failed");
        }
    }
    Ok(served?)
}
