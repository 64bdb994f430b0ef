//! Service instances waking each other.
//!
//! PostgreSQL pushes wake-ups itself (LISTEN/NOTIFY). On a database that cannot (MySQL),
//! each instance registers the URL of its internal API in `xdb_sys_service_instances`
//! and heartbeats; the API service tells async-service instances about new tasks and the
//! async service tells API-service instances about closed executions. Every consumer
//! still polls, so a lost notification only costs latency. Those calls are signed with a
//! secret the instances share ([`InternalAuth`]). (Async instances register
//! on every database, more often: their heartbeats are also how peers tell that one
//! died and take its work over; see the async service's `liveness`.)

mod internal_auth;
mod peer_notifier;
mod registration;

pub use internal_auth::{Authenticated, Authenticity, InternalAuth, SIGNATURE_WINDOW_SECONDS};
pub use peer_notifier::PeerNotifier;
pub use registration::Registration;
/// The services listen as workers do, with room for a burst of connections.
pub use xdb_sdk::worker::{bind_listener, LISTEN_BACKLOG};

use std::time::Duration;

/// How often an instance renews its registration.
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(5);
/// An instance silent for longer is taken for dead.
pub const LIVENESS_WINDOW: Duration = Duration::from_secs(20);

/// Resolves on SIGINT or SIGTERM: how a service learns it should drain and stop
/// (Kubernetes sends SIGTERM on a rolling update).
pub async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::warn!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await
            }
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate => {}
    }
    tracing::info!("shutdown requested");
}
