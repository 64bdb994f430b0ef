//! Messages published by a transition, handed to the states waiting for them.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use uuid::Uuid;
use xdb_engine::decide;
use xdb_engine::{HistoryEntry, Publisher, TransitionPlan};
use xdb_protocol::LocalQueueMessage;

use crate::plan_writes::checked_messages;
use crate::tables::{QueueRows, StateRows};
use crate::StoreError;

/// Inserts `published` for execution `process` and adds to `plan` the deliveries it
/// makes possible to the execution's waiting states, then the publish's history event;
/// returns how many messages were new (a repeated dedup id is not). Nothing new, nothing
/// to deliver: every message queued before was offered to the waiting states when it
/// came.
pub(crate) async fn publish_and_deliver(
    tx: &mut (impl QueueRows + StateRows),
    process: Uuid,
    published: &[LocalQueueMessage],
    by: &Publisher,
    now: DateTime<Utc>,
    plan: &mut TransitionPlan,
) -> Result<u64, StoreError> {
    let inserted = tx
        .insert_messages(process, &checked_messages(published)?)
        .await?;
    if inserted > 0 {
        let waiting = tx.lock_waiting_states(process).await?;
        if !waiting.is_empty() {
            let messages = tx.queued_messages(process).await?;
            decide::deliver_messages(&waiting, &messages, &mut HashSet::new(), now, plan);
        }
    }
    // After the deliveries, as the releases before wrote a client's publish: a rolling
    // upgrade's histories read alike whichever release wrote them.
    plan.history
        .push(HistoryEntry::published(by, published.len(), inserted));
    Ok(inserted)
}
