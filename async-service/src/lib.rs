//! The XDB async service: executes state work.
//!
//! It claims due tasks (waitUntil, execute, timers, process timeouts), calls the
//! user's worker with the state's timeout and retry policy, and records each outcome
//! through the storage layer in one transaction. It keeps no state of its own beyond
//! leases: any instance may die at any point and another takes over its work.

mod config;
mod db_queue;
mod handlers;
mod http;
mod leases;

use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use xdb_cluster::{PeerNotifier, Registration};
use xdb_persistence::{Notifications, ProcessStore, ServiceInstance, ServiceKind};

pub use config::AsyncServiceConfig;

/// A running async service; [`AsyncService::shutdown`] stops it cleanly.
pub struct AsyncService {
    owner: String,
    address: std::net::SocketAddr,
    registration: Option<Registration>,
    store: Arc<dyn ProcessStore>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl AsyncService {
    /// Connects to the database and starts working.
    pub async fn start(config: AsyncServiceConfig) -> anyhow::Result<Self> {
        config.validate()?;
        xdb_sys_schema::check(&config.database_url)
            .await?
            .ensure_current()?;
        let store = xdb_persistence::connect(&config.database_url, config.pool_size).await?;
        // PostgreSQL pushes wake-ups; elsewhere API instances call our internal API and
        // we tell them about closed executions the same way.
        let (notifications, api_peers) = match store.listen() {
            Some(notifications) => (notifications, PeerNotifier::disabled()),
            None => (
                Notifications::new(),
                PeerNotifier::start(store.clone(), ServiceKind::Api),
            ),
        };
        let listener = tokio::net::TcpListener::bind(config.listen).await?;
        let address = listener.local_addr()?;
        let owner = config
            .instance_id
            .clone()
            .unwrap_or_else(default_instance_id);
        let context = Arc::new(handlers::HandlerContext {
            store: store.clone(),
            workers: xdb_worker_client::WorkerClient::new(config.max_worker_response_bytes),
            owner: owner.clone(),
            default_api_timeout_seconds: config.default_api_timeout_seconds,
        });
        let (shutdown, receiver) = watch::channel(false);
        let leased = Arc::new(leases::LeasedTasks::default());
        let queue = db_queue::DbQueue {
            leased: leased.clone(),
            context,
            notifications: Some(notifications.clone()),
            api_peers: api_peers.clone(),
            max_in_flight: config.max_in_flight,
            lease: config.lease(),
            poll_interval: config.poll_interval(),
        };
        let registration = if api_peers.is_enabled() {
            let instance = ServiceInstance {
                instance_id: owner.clone(),
                service: ServiceKind::Async,
                notify_url: config
                    .advertise_url
                    .clone()
                    .unwrap_or_else(|| format!("http://{address}")),
            };
            Some(Registration::start(store.clone(), instance).await?)
        } else {
            None
        };
        let http_state = http::HttpState {
            store: store.clone(),
            notifications,
        };
        let mut http_shutdown = receiver.clone();
        let tasks = vec![
            tokio::spawn(async move {
                let served = axum::serve(listener, http::router(http_state))
                    .with_graceful_shutdown(async move {
                        let _ = http_shutdown.changed().await;
                    })
                    .await;
                if let Err(error) = served {
                    tracing::error!(%error, "the async service's HTTP server failed");
                }
            }),
            tokio::spawn(queue.run(receiver.clone())),
            tokio::spawn(leases::renew_until_shutdown(
                store.clone(),
                owner.clone(),
                leased,
                config.lease(),
                receiver,
            )),
        ];
        tracing::info!(instance = %owner, %address, "XDB async service started");
        Ok(Self {
            owner,
            address,
            registration,
            store,
            shutdown,
            tasks,
        })
    }

    pub fn instance_id(&self) -> &str {
        &self.owner
    }

    /// Where the health and internal API listen.
    pub fn address(&self) -> std::net::SocketAddr {
        self.address
    }

    /// Stops claiming, lets in-flight tasks finish, and gives back any lease still held.
    pub async fn shutdown(self) -> anyhow::Result<()> {
        let _ = self.shutdown.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
        if let Some(registration) = self.registration {
            registration.stop().await;
        }
        let released = self.store.release_leases(&self.owner).await?;
        tracing::info!(instance = %self.owner, released, "XDB async service stopped");
        Ok(())
    }
}

fn default_instance_id() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "xdb-async".into());
    format!("{host}-{}", &uuid::Uuid::new_v4().simple().to_string()[..8])
}
