//! waitUntil answered: record the commands, start timers, hand over queued messages.

use chrono::Utc;
use xdb_engine::decide;
use xdb_engine::Task;
use xdb_protocol::AsyncStateWaitUntilResponse;

use super::apply_plan::apply_plan;
use super::global_attributes;
use super::load_state_call::preload_continuation;
use super::locks::{
    insert_messages, lock_process, lock_state, lock_waiting_states, queued_messages, take_task,
};
use super::MySqlStore;
use crate::{Applied, StateCall, StoreError};

pub(crate) async fn complete_wait_until(
    store: &MySqlStore,
    task: &Task,
    owner: &str,
    call: &StateCall,
    response: &AsyncStateWaitUntilResponse,
) -> Result<Applied, StoreError> {
    let mut tx = store.begin().await?;
    global_attributes::lock_row_first(
        &mut tx,
        store,
        call.process.global_attribute_config.as_ref(),
        &response.writes.global_attributes,
    )
    .await?;
    // The process row before the task and state rows, like every transaction that
    // touches an execution (see `locks`).
    let process = lock_process(&mut tx, call.process.id).await?;
    take_task(&mut tx, task, owner).await?;
    let state = lock_state(&mut tx, call.process.id, &call.state.id)
        .await?
        .filter(|s| s.version == call.state.version)
        .ok_or_else(|| StoreError::Stale(format!("state {} changed meanwhile", call.state.id)))?;
    let now = Utc::now();
    let published = !response.publish_to_local_queue.is_empty();
    if published {
        insert_messages(&mut tx, process.id, &response.publish_to_local_queue).await?;
    }
    let wants_messages = !response.command_request.local_queue_commands.is_empty();
    let messages = if wants_messages || published {
        queued_messages(&mut tx, process.id).await?
    } else {
        Vec::new()
    };
    let other_waiting = if published {
        lock_waiting_states(&mut tx, process.id).await?
    } else {
        Vec::new()
    };
    let plan =
        decide::complete_wait_until(&process, &state, response, &messages, &other_waiting, now)?;
    let mut applied =
        apply_plan(&mut tx, store, &process, &plan, now, store.lease_to(owner)).await?;
    preload_continuation(
        &mut tx,
        store,
        &process,
        &plan,
        Some(&state),
        &mut applied,
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(applied)
}
