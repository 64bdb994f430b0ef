//! Admits executions waiting (`PENDING`) for a slot of their type's
//! `maxRunningExecutions`, as running ones close. Every instance runs one; they share
//! the work through the rows (each key's admission locks the key's row), so an instance
//! SIGKILLed mid-admission leaves nothing behind but a rolled-back transaction.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use xdb_persistence::ProcessStore;

/// How often free slots are looked for: how long (at most, with no error) a freed slot
/// stays free while an execution waits for it.
const POLL: Duration = Duration::from_millis(200);

/// Admits waiting executions until `stop` turns true.
pub(crate) async fn run(store: Arc<dyn ProcessStore>, mut stop: watch::Receiver<bool>) {
    while !*stop.borrow() {
        let admitted = match store.admit_pending_executions().await {
            Ok(admitted) => admitted,
            Err(error) => {
                tracing::warn!(%error, "could not admit executions waiting for a running slot");
                0
            }
        };
        if admitted > 0 {
            tracing::debug!(admitted, "admitted executions waiting for a running slot");
            // More may wait behind a full round.
            continue;
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            _ = stop.changed() => {}
        }
    }
}
