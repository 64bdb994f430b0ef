//! Keeps this instance's leases alive while their worker calls run.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use xdb_persistence::ProcessStore;

pub(crate) async fn renew_until_shutdown(
    store: Arc<dyn ProcessStore>,
    owner: String,
    lease: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    let period = lease / 3;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = shutdown.changed() => return,
        }
        if let Err(error) = store.renew_leases(&owner, lease).await {
            tracing::warn!(%error, "renewing leases failed");
        }
    }
}
