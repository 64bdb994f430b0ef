//! The XDB async service: executes state work.
//!
//! It claims due tasks (waitUntil, execute, timers, process timeouts), calls the
//! user's worker with the state's timeout and retry policy, and records each outcome
//! through the storage layer in one transaction. It keeps no state of its own beyond
//! leases: any instance may die at any point and another takes over its work.

mod admissions;
mod batches;
mod cli;
mod clock;
mod config;
mod db_queue;
#[cfg(test)]
mod fake_task_source;
mod flow_limits;
mod handlers;
mod health;
mod http;
mod leases;
mod liveness;
mod metric_definitions;
mod priority_room;
mod pulsar_source;
mod schedules;
mod scheduling;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use xdb_cluster::{InternalAuth, PeerNotifier};
use xdb_config::QueueMode;
use xdb_persistence::{Notification, Notifications, ProcessStore, ServiceInstance, ServiceKind};

pub use cli::AsyncServiceArgs;
pub use config::AsyncServiceConfig;
/// XDB's own Pulsar messages (`proto/xdb_pulsar.proto`), for tools and tests that read
/// the timer topic.
pub use pulsar_source::TaskTimer;

/// A running async service; [`AsyncService::shutdown`] stops it cleanly.
pub struct AsyncService {
    owner: String,
    address: std::net::SocketAddr,
    /// The heartbeat, and the takeover of dead instances' work.
    liveness: liveness::Liveness,
    store: Arc<dyn ProcessStore>,
    /// Turned true first: stop claiming (and report not ready).
    stop_claiming: watch::Sender<bool>,
    /// The claim loop and its in-flight tasks.
    queue: JoinHandle<()>,
    /// Turned true once the queue is done: stop renewing leases and serving HTTP.
    stop_background: watch::Sender<bool>,
    background: Vec<JoinHandle<()>>,
    grace: Duration,
}

impl AsyncService {
    /// Connects to the database and starts working.
    pub async fn start(config: AsyncServiceConfig) -> anyhow::Result<Self> {
        config.validate()?;
        let database_url = xdb_config::DatabaseUrl::parse(&config.database_url)
            .map_err(|error| anyhow::anyhow!("invalid database URL: {error}"))?;
        xdb_sys_schema::check(database_url.as_str())
            .await?
            .ensure_current()?;
        let continuation_lease = config.continuation_lease();
        let store = xdb_persistence::connect_with(
            database_url.as_str(),
            xdb_persistence::StoreOptions {
                pool_size: config.async_service.pool_size,
                continuation_lease,
                // Transitions never wait inside a transaction on anything but the
                // database: an instance cut off mid-transition frees its locks quickly.
                idle_in_transaction: xdb_persistence::IDLE_IN_TRANSACTION_WITHOUT_RPC,
                longest_query: batches::PAGE_QUERY_TIMEOUT,
                ..Default::default()
            },
        )
        .await?;
        let internal_auth = InternalAuth::resolve(
            config.security.internal_secret.as_deref(),
            store.as_ref(),
            store.database_clock().clone(),
            config.security.accept_unsigned_internal_calls,
        )
        .await?;
        // PostgreSQL pushes wake-ups; elsewhere API instances call our internal API and
        // we tell them about closed executions the same way, signed.
        // Work freed by a takeover is announced to every async instance the same way (on
        // PostgreSQL the release's NOTIFY does it).
        let (notifications, api_peers, async_peers) = match store
            .listen(xdb_persistence::Listen::NewTasks)
        {
            Some(notifications) => (
                notifications,
                PeerNotifier::disabled(),
                PeerNotifier::disabled(),
            ),
            None => (
                Notifications::new(),
                PeerNotifier::start(store.clone(), ServiceKind::Api, internal_auth.clone()),
                // In Pulsar mode the release's change events bring the work.
                if config.queue.mode == QueueMode::Database {
                    PeerNotifier::start(store.clone(), ServiceKind::Async, internal_auth.clone())
                } else {
                    PeerNotifier::disabled()
                },
            ),
        };
        let serve_notify = api_peers.is_enabled();
        let listener = xdb_cluster::bind_listener(config.async_service.listen)?;
        let address = listener.local_addr()?;
        let owner = config
            .async_service
            .instance_id
            .clone()
            .unwrap_or_else(default_instance_id);
        let metrics = Arc::new(
            metric_definitions::AsyncMetrics::new()
                .with_database_clock(store.database_clock().clone()),
        );
        let flow = Arc::new(flow_limits::FlowLimiter::default());
        // Without takeovers (liveness off) an instance still heartbeats: one silent for
        // half a minute no longer takes its share of a rate.
        let flow_liveness = config.liveness_timeout().unwrap_or(Duration::from_secs(30));
        flow.refresh(store.as_ref(), flow_liveness).await?;
        let context = Arc::new(handlers::HandlerContext {
            metrics: metrics.clone(),
            store: store.clone(),
            tasks: store.clone(),
            workers: xdb_worker_client::WorkerClient::with_tls(
                config.async_service.max_worker_response_bytes,
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
            owner: owner.clone(),
            default_api_timeout_seconds: config.async_service.default_api_timeout_seconds,
            limits: config.limits.clone(),
            flow: flow.clone(),
        });
        let (stop_claiming, claiming_stopped) = watch::channel(false);
        let (stop_background, background_stopped) = watch::channel(false);
        let leased = Arc::new(leases::LeasedTasks::default());
        let consumer_health = Arc::new(health::ConsumerHealth::default());
        let source = match config.queue.mode {
            QueueMode::Database => TaskSource::Database(db_queue::DbQueue {
                leased: leased.clone(),
                context,
                notifications: Some(notifications.clone()),
                api_peers: api_peers.clone(),
                max_in_flight: config.async_service.max_in_flight,
                lower_priority_max_in_flight: config.async_service.lower_priority_max_in_flight,
                lease: config.lease(),
                poll_interval: config.poll_interval(),
                clock: Arc::new(store.database_clock().clone()),
                park_after_refusals: config.async_service.park_after_refusals,
            }),
            QueueMode::Pulsar => TaskSource::Pulsar(Box::new(
                pulsar_source::PulsarSource::connect(
                    &config.pulsar,
                    database_url.as_str(),
                    context,
                    api_peers.clone(),
                    leased.clone(),
                    config.lease(),
                    config.async_service.max_in_flight,
                    consumer_health.clone(),
                    Arc::new(store.database_clock().clone()),
                )
                .await?,
            )),
        };
        // Every instance registers: its heartbeat is how its peers know it is alive (and,
        // on MySQL, where API instances wake it).
        let instance = ServiceInstance {
            instance_id: owner.clone(),
            service: ServiceKind::Async,
            notify_url: config
                .async_service
                .advertise_url
                .clone()
                .unwrap_or_else(|| format!("http://{address}")),
            liveness_timeout: config.liveness_timeout(),
        };
        let wake = notifications.clone();
        let batch_wake_ups = notifications.clone();
        let liveness = liveness::Liveness::start(
            store.clone(),
            store.clone(),
            instance,
            config.liveness_timeout(),
            // Freed work is claimed at once here, and by every other live instance: on
            // PostgreSQL through the NOTIFY the release sent, elsewhere called. This
            // instance may be full (`async.max_in_flight`) while another is idle.
            Box::new(move |_| {
                wake.publish(Notification::Tasks);
                async_peers.new_tasks();
            }),
        )
        .await;
        let http_state = http::HttpState {
            store: store.clone(),
            notifications,
            draining: claiming_stopped.clone(),
            metrics,
            leased: leased.clone(),
            source: consumer_health.clone(),
            database: xdb_persistence::DatabaseHealth::start(store.clone()),
            // Validated to fit (at most 1 000 000).
            attempts_alert_threshold: i32::try_from(config.async_service.attempts_alert_threshold)
                .unwrap_or(i32::MAX),
            internal_auth,
        };
        // Probes keep answering (not ready) while in-flight work drains.
        let mut http_shutdown = background_stopped.clone();
        let batches = batches::BatchDriver {
            store: store.clone(),
            owner: owner.clone(),
            names_ignore_case: database_url.dialect() == xdb_config::Dialect::MySql,
            query_timeout: batches::PAGE_QUERY_TIMEOUT,
            lease: config.lease(),
            notifications: batch_wake_ups,
            // Batches need no faster look than a second's: a wake-up starts a new one.
            idle_poll: config.poll_interval().max(Duration::from_secs(1)),
        };
        let batches = tokio::spawn(batches.run(claiming_stopped.clone()));
        let schedules = schedules::ScheduleFirer {
            store: store.clone(),
            owner: owner.clone(),
        };
        let schedules = tokio::spawn(schedules.run(claiming_stopped.clone()));
        let admissions = tokio::spawn(admissions::run(store.clone(), claiming_stopped.clone()));
        let flow = tokio::spawn(flow.refresh_until(
            store.clone(),
            flow_liveness,
            claiming_stopped.clone(),
        ));
        let queue = match source {
            TaskSource::Database(queue) => {
                let watch = health::ClaimLoopWatch {
                    health: consumer_health,
                    draining: claiming_stopped.clone(),
                };
                tokio::spawn(async move {
                    let _watch = watch;
                    queue.run(claiming_stopped).await
                })
            }
            TaskSource::Pulsar(source) => tokio::spawn(source.run(claiming_stopped)),
        };
        let background = vec![
            batches,
            schedules,
            admissions,
            flow,
            tokio::spawn(async move {
                let served = axum::serve(listener, http::router(http_state, serve_notify))
                    .with_graceful_shutdown(async move {
                        let _ = http_shutdown.changed().await;
                    })
                    .await;
                if let Err(error) = served {
                    tracing::error!(%error, "the async service's HTTP server failed");
                }
            }),
            // Leases of draining work stay renewed until the queue is done.
            tokio::spawn(leases::renew_until_shutdown(
                store.clone(),
                owner.clone(),
                leased,
                config.lease(),
                background_stopped,
            )),
        ];
        tracing::info!(instance = %owner, %address, "XDB async service started");
        Ok(Self {
            owner,
            address,
            liveness,
            store,
            stop_claiming,
            queue,
            stop_background,
            background,
            grace: config.shutdown_grace(),
        })
    }

    pub fn instance_id(&self) -> &str {
        &self.owner
    }

    /// Where the health and internal API listen.
    pub fn address(&self) -> std::net::SocketAddr {
        self.address
    }

    /// Stops claiming, lets in-flight tasks finish for up to the shutdown grace, abandons
    /// those still running after it, and gives back every lease still held, so other
    /// instances take the work over at once. An abandoned task's transition was either
    /// committed (with its task row deleted) or not at all, so none is applied twice;
    /// its worker call may be made again (calls are at least once).
    pub async fn shutdown(mut self) -> anyhow::Result<()> {
        let _ = self.stop_claiming.send(true);
        tracing::info!(instance = %self.owner, grace = ?self.grace, "draining in-flight work");
        if tokio::time::timeout(self.grace, &mut self.queue)
            .await
            .is_err()
        {
            tracing::warn!(
                instance = %self.owner,
                "in-flight work outlasted the shutdown grace; abandoning it"
            );
            // Dropping the queue's task set aborts its tasks.
            self.queue.abort();
            let _ = (&mut self.queue).await;
        }
        let _ = self.stop_background.send(true);
        for task in self.background {
            let _ = task.await;
        }
        self.liveness.stop().await;
        // A release skips a task that is locked at that moment (another instance
        // checking whether it can claim it, or one of the abandoned transactions still
        // rolling back), so it looks again shortly for what it skipped.
        let mut released = 0;
        for pass in 0..RELEASE_PASSES {
            if pass > 0 {
                tokio::time::sleep(RELEASE_PAUSE).await;
            }
            released += self.store.release_leases(&self.owner).await?;
        }
        tracing::info!(instance = %self.owner, released, "XDB async service stopped");
        Ok(())
    }
}

/// Passes over this instance's leases at shutdown, and the pause between them.
const RELEASE_PASSES: usize = 3;
const RELEASE_PAUSE: Duration = Duration::from_millis(100);

/// Where an instance's work comes from (`queue.mode`).
enum TaskSource {
    Database(db_queue::DbQueue),
    Pulsar(Box<pulsar_source::PulsarSource>),
}

fn default_instance_id() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "xdb-async".into());
    format!("{host}-{}", &uuid::Uuid::new_v4().simple().to_string()[..8])
}
