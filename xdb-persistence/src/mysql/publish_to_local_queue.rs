//! Publish: queue messages for the current execution and hand them to waiting states.

use std::collections::HashSet;

use chrono::Utc;
use serde_json::json;
use xdb_engine::decide::{self, DecideError};
use xdb_engine::{events, HistoryEntry, TransitionPlan};
use xdb_protocol::PublishToLocalQueueRequest;

use super::apply_plan::apply_plan;
use super::locks::{insert_messages, lock_execution_of, lock_waiting_states, queued_messages};
use super::MySqlStore;
use crate::StoreError;

pub(crate) async fn publish_to_local_queue(
    store: &MySqlStore,
    request: &PublishToLocalQueueRequest,
) -> Result<(), StoreError> {
    let mut tx = store.begin().await?;
    let process = lock_execution_of(&mut tx, &request.process_id, None).await?;
    if process.status.is_closed() {
        return Err(DecideError::NotRunning.into());
    }
    let now = Utc::now();
    let inserted = insert_messages(&mut tx, process.id, &request.messages).await?;
    let mut plan = TransitionPlan::default();
    if inserted > 0 {
        let waiting = lock_waiting_states(&mut tx, process.id).await?;
        if !waiting.is_empty() {
            let messages = queued_messages(&mut tx, process.id).await?;
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
    apply_plan(&mut tx, store, &process, &plan, now, None).await?;
    tx.commit().await?;
    Ok(())
}
