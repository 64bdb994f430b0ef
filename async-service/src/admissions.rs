//! Admits executions waiting (`PENDING`) for a slot of their type's
//! `maxRunningExecutions`, as running ones close. Every instance runs one; they share
//! the work through the rows (each key's admission locks the key's row), so an instance
//! SIGKILLed mid-admission leaves nothing behind but a rolled-back transaction.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use xdb_persistence::ProcessStore;

/// How often free slots are looked for: how long (at most, with no error) a freed slot
/// stays free while an execution waits for it.
const POLL: Duration = Duration::from_millis(200);
/// How often the rows of closed executions are set apart from the counts, in batches.
const FORGET_EVERY: Duration = Duration::from_secs(10);

/// Admits waiting executions until `stop` turns true.
pub(crate) async fn run(store: Arc<dyn ProcessStore>, mut stop: watch::Receiver<bool>) {
    let mut forgotten_at = Instant::now();
    while !*stop.borrow() {
        if forgotten_at.elapsed() >= FORGET_EVERY {
            forgotten_at = Instant::now();
            if let Err(error) = store.forget_closed_run_slots().await {
                tracing::warn!(%error, "could not set apart the running slots of closed executions");
            }
        }
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
