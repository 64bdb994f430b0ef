//! execute answered: apply its decision with the worker's writes, in one transaction.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use xdb_engine::decide;
use xdb_engine::{ProcessExecution, StateExecution, Task, TransitionPlan};
use xdb_protocol::AsyncStateExecuteResponse;

use super::apply_plan::apply_plan;
use super::global_attributes;
use super::load_state_call::preload_continuation;
use super::locks::{
    insert_messages, lock_process, lock_state, lock_waiting_states, queued_messages, take_task,
};
use super::MySqlStore;
use crate::{Applied, StateCall, StoreError};

pub(crate) async fn complete_execute(
    store: &MySqlStore,
    task: &Task,
    owner: &str,
    call: &StateCall,
    response: &AsyncStateExecuteResponse,
) -> Result<Applied, StoreError> {
    complete_decided_execute(store, task, owner, call, response, |process, state, now| {
        Ok(decide::complete_execute(process, state, response, now)?)
    })
    .await
}

/// Applies the plan `decide` makes of execute's answer `response` on the locked rows,
/// once `call.state` is found as it was read.
pub(crate) async fn complete_decided_execute(
    store: &MySqlStore,
    task: &Task,
    owner: &str,
    call: &StateCall,
    response: &AsyncStateExecuteResponse,
    decide: impl FnOnce(
        &ProcessExecution,
        &StateExecution,
        DateTime<Utc>,
    ) -> Result<TransitionPlan, StoreError>,
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
    let mut plan = decide(&process, &state, now)?;
    if !response.publish_to_local_queue.is_empty() && !plan.close_execution {
        insert_messages(&mut tx, process.id, &response.publish_to_local_queue).await?;
        let waiting = lock_waiting_states(&mut tx, process.id).await?;
        let messages = queued_messages(&mut tx, process.id).await?;
        decide::deliver_messages(&waiting, &messages, &mut HashSet::new(), now, &mut plan);
    }
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
