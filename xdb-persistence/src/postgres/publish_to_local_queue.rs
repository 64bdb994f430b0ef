//! Publish: queue messages for the current execution and hand them to waiting states.

use std::collections::HashSet;

use chrono::Utc;
use serde_json::json;
use xdb_engine::decide::{self, DecideError};
use xdb_engine::{events, HistoryEntry, TransitionPlan};
use xdb_protocol::PublishToLocalQueueRequest;

use super::apply_plan::{apply_plan, Announce};
use super::locks::{insert_messages, lock_execution_of, lock_waiting_states, queued_messages};
use super::PostgresStore;
use crate::StoreError;

pub(crate) async fn publish_to_local_queue(
    store: &PostgresStore,
    request: &PublishToLocalQueueRequest,
) -> Result<(), StoreError> {
    let mut client = store.pool().get().await?;
    let tx = client.transaction().await?;
    let process = lock_execution_of(&tx, &request.process_id, None).await?;
    if process.status.is_closed() {
        return Err(DecideError::NotRunning.into());
    }
    let now = Utc::now();
    let inserted = insert_messages(&tx, process.id, &request.messages).await?;
    let mut plan = TransitionPlan::default();
    if inserted > 0 {
        let waiting = lock_waiting_states(&tx, process.id).await?;
        if !waiting.is_empty() {
            let messages = queued_messages(&tx, process.id).await?;
            decide::deliver_messages(&waiting, &messages, &mut HashSet::new(), now, &mut plan);
        }
    }
    plan.history.push(HistoryEntry::new(
        events::LOCAL_QUEUE_MESSAGES_PUBLISHED,
        json!({
            "messages": request.messages.len(),
            "duplicates": request.messages.len() as u64 - inserted,
        }),
    ));
    apply_plan(&tx, &process, &plan, now, Announce::NewTasks, None).await?;
    tx.commit().await?;
    Ok(())
}
