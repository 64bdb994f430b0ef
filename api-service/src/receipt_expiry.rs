//! Deletes the receipts of requests older than `api.request_id_retention_seconds`, a
//! bounded chunk at a time, so the table holds about a retention's worth of requests.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use xdb_persistence::ProcessApi;

/// How often an instance looks for expired receipts (every instance does; the deletes
/// do not conflict).
const EVERY: Duration = Duration::from_secs(60);
/// Receipts deleted per statement, and statements per round at most.
const CHUNK: i64 = 5000;
const CHUNKS_PER_ROUND: usize = 20;

/// Starts the expiry; it runs until the returned task is aborted.
pub(crate) fn start(store: Arc<dyn ProcessApi>, retention: Duration) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            for _ in 0..CHUNKS_PER_ROUND {
                match store.expire_receipts(retention, CHUNK).await {
                    Ok(deleted) if deleted < CHUNK as u64 => break,
                    Ok(_) => {}
                    Err(error) => {
                        tracing::warn!(%error, "could not delete expired request receipts");
                        break;
                    }
                }
            }
        }
    })
}
