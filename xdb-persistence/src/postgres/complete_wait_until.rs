//! waitUntil answered: record the commands, start timers, hand over queued messages.

use chrono::Utc;
use xdb_engine::decide;
use xdb_engine::Task;
use xdb_protocol::AsyncStateWaitUntilResponse;

use super::locks::{insert_messages, lock_waiting_states, queued_messages};
use super::task_transition::{begin_transition, finish_transition, one_statement_transition};
use super::PostgresStore;
use crate::{Applied, StateCall, StoreError};

pub(crate) async fn complete_wait_until(
    store: &PostgresStore,
    task: &Task,
    owner: &str,
    call: &StateCall,
    response: &AsyncStateWaitUntilResponse,
) -> Result<Applied, StoreError> {
    // Usually decided from the rows as read, and applied in one statement.
    if response.writes.global_attributes.is_empty()
        && response.publish_to_local_queue.is_empty()
        && response.command_request.local_queue_commands.is_empty()
    {
        let now = Utc::now();
        if let Ok(plan) =
            decide::complete_wait_until(&call.process, &call.state, response, &[], &[], now)
        {
            if let Some(applied) =
                one_statement_transition(store.batches(), store, task, owner, call, &plan, now)
                    .await?
            {
                return Ok(applied);
            }
        }
    }
    let (tx, process, state) =
        begin_transition(store, task, owner, call, &response.writes.global_attributes).await?;
    let now = Utc::now();
    let published = !response.publish_to_local_queue.is_empty();
    if published {
        insert_messages(tx.client(), process.id, &response.publish_to_local_queue).await?;
    }
    let wants_messages = !response.command_request.local_queue_commands.is_empty();
    let messages = if wants_messages || published {
        queued_messages(tx.client(), process.id).await?
    } else {
        Vec::new()
    };
    let other_waiting = if published {
        lock_waiting_states(tx.client(), process.id).await?
    } else {
        Vec::new()
    };
    let plan =
        decide::complete_wait_until(&process, &state, response, &messages, &other_waiting, now)?;
    finish_transition(tx, store, owner, &process, &plan, &state, now).await
}
