//! A task's transition after its work: waitUntil or execute answered, a timer fired, a
//! process deadline passed.
//!
//! Each begins the same way (lock the user's row if the answer writes it, then the
//! execution's rows, and take the task) and ends the same way (apply the plan, read the
//! continuation's call along, commit). The usual transition is first offered to the
//! dialect's one-statement form, decided from the rows the call was read with.

use chrono::{DateTime, Utc};
use xdb_engine::decide;
use xdb_engine::{HistoryEntry, ProcessExecution, Publisher, StateExecution, Task, TransitionPlan};
use xdb_protocol::{AsyncStateExecuteResponse, AsyncStateWaitUntilResponse, GlobalAttributeValue};

use super::attributes::lock_business_row_first;
use super::deliveries::publish_and_deliver;
use super::state_calls::preload_continuation;
use crate::continuation::{continuation_reads_attributes, updates_only};
use crate::fired_timer::fired_plan;
use crate::plan_writes::checked_messages;
use crate::tables::{
    Announce, Dialect, Finish, Lane, PlanWriter, ProcessRows, QueueRows, StateRows, TaskRows,
    Transaction,
};
use crate::{Applied, FiredTimer, StateCall, StoreError};

/// waitUntil answered: record the commands, start timers, hand over queued messages.
pub(crate) async fn complete_wait_until<D: Dialect>(
    store: &D,
    task: &Task,
    owner: &str,
    call: &StateCall,
    response: &AsyncStateWaitUntilResponse,
) -> Result<Applied, StoreError> {
    if store.transitions_as_read()
        && response.writes.global_attributes.is_empty()
        && response.publish_to_local_queue.is_empty()
        && response.command_request.local_queue_commands.is_empty()
    {
        let now = store.database_clock().now();
        if let Ok(plan) =
            decide::complete_wait_until(&call.process, &call.state, response, &[], &[], now)
        {
            let done = store
                .transition_as_read(Lane::Main, task, owner, call, &plan, now)
                .await?;
            if let Some(applied) = done {
                return Ok(applied);
            }
        }
    }
    let (mut tx, process, state) =
        begin_transition(store, task, owner, call, &response.writes.global_attributes).await?;
    let now = store.database_clock().now();
    let published = !response.publish_to_local_queue.is_empty();
    let inserted = if published {
        let messages = checked_messages(&response.publish_to_local_queue)?;
        tx.insert_messages(process.id, &messages).await?
    } else {
        0
    };
    let wants_messages = !response.command_request.local_queue_commands.is_empty();
    let messages = if wants_messages || published {
        tx.queued_messages(process.id).await?
    } else {
        Vec::new()
    };
    let other_waiting = if published {
        tx.lock_waiting_states(process.id).await?
    } else {
        Vec::new()
    };
    let mut plan =
        decide::complete_wait_until(&process, &state, response, &messages, &other_waiting, now)?;
    if published {
        let by = Publisher::State(state.id.clone());
        let count = response.publish_to_local_queue.len();
        plan.history
            .push(HistoryEntry::published(&by, count, inserted));
    }
    finish_transition(store, tx, owner, &process, &plan, &state, now).await
}

/// execute answered: apply its decision with the worker's writes.
pub(crate) async fn complete_execute<D: Dialect>(
    store: &D,
    task: &Task,
    owner: &str,
    call: &StateCall,
    response: &AsyncStateExecuteResponse,
) -> Result<Applied, StoreError> {
    complete_decided_execute(
        store,
        Lane::Main,
        task,
        owner,
        call,
        response,
        |process, state, now| Ok(decide::complete_execute(process, state, response, now)?),
    )
    .await
}

/// Commits the firing of `fired` and the worker's answer to its execute as one
/// transition; its one-statement form goes on the timekeeping lane, like every firing.
pub(crate) async fn complete_fired_execute<D: Dialect>(
    store: &D,
    task: &Task,
    owner: &str,
    fired: &FiredTimer,
    response: &AsyncStateExecuteResponse,
) -> Result<Applied, StoreError> {
    complete_decided_execute(
        store,
        Lane::Timekeeping,
        task,
        owner,
        &fired.before,
        response,
        |process, state, now| fired_plan(process, state, fired, response, now),
    )
    .await
}

/// Applies the plan `decide` makes of execute's answer `response`: offered to the
/// dialect's one-statement form on `lane` as decided from the rows `call` read;
/// otherwise decided again on the locked rows, once `call.state` is found as read.
async fn complete_decided_execute<D: Dialect>(
    store: &D,
    lane: Lane,
    task: &Task,
    owner: &str,
    call: &StateCall,
    response: &AsyncStateExecuteResponse,
    decide: impl Fn(&ProcessExecution, &StateExecution, DateTime<Utc>) -> Result<TransitionPlan, StoreError>
        + Send
        + Sync,
) -> Result<Applied, StoreError> {
    if store.transitions_as_read()
        && response.writes.global_attributes.is_empty()
        && response.publish_to_local_queue.is_empty()
    {
        let now = store.database_clock().now();
        if let Ok(plan) = decide(&call.process, &call.state, now) {
            let done = store
                .transition_as_read(lane, task, owner, call, &plan, now)
                .await?;
            if let Some(applied) = done {
                return Ok(applied);
            }
        }
    }
    let (mut tx, process, state) =
        begin_transition(store, task, owner, call, &response.writes.global_attributes).await?;
    let now = store.database_clock().now();
    let mut plan = decide(&process, &state, now)?;
    if !response.publish_to_local_queue.is_empty() && !plan.close_execution {
        let published = &response.publish_to_local_queue;
        let by = Publisher::State(state.id.clone());
        publish_and_deliver(&mut tx, process.id, published, &by, now, &mut plan).await?;
    }
    finish_transition(store, tx, owner, &process, &plan, &state, now).await
}

/// A timer task is due: mark the timer fired; the state may move on to execute.
pub(crate) async fn fire_timer<D: Dialect>(
    store: &D,
    task: &Task,
    owner: &str,
) -> Result<Applied, StoreError> {
    if let (Some(state_id), Some(index), true) =
        (&task.state, task.timer_index, store.transitions_as_read())
    {
        // Timers started together come due together: decided from the rows as read,
        // the firing goes out with the others that fire with it.
        let mut session = store.session(Lane::Timekeeping).await?;
        let read = session
            .read_process_and_state(task.process_execution_id, state_id)
            .await?;
        drop(session);
        if let Some((process, Some(state))) = read {
            if super::held_back(&process) {
                return set_aside_paused(store, task, owner).await;
            }
            let now = store.database_clock().now();
            let plan = decide::fire_timer(&process, &state, index, now);
            let call = StateCall {
                process,
                state,
                attributes: Default::default(),
            };
            let done = store
                .transition_as_read(Lane::Timekeeping, task, owner, &call, &plan, now)
                .await?;
            if let Some(applied) = done {
                return Ok(applied);
            }
        }
    }
    let mut tx = store.begin(Lane::Timekeeping).await?;
    let (Some(state_id), Some(index)) = (&task.state, task.timer_index) else {
        // Not a state's timer (never written so): only the task goes.
        tx.lock_process(task.process_execution_id).await?;
        tx.take_task(task, owner).await?;
        tx.commit().await?;
        return Ok(Applied::default());
    };
    let (process, state) = tx.lock_for_task(task, owner, state_id).await?;
    if super::held_back(&process) {
        // The task is not taken until this transaction commits: it is set aside instead.
        drop(tx);
        return set_aside_paused(store, task, owner).await;
    }
    let Some(state) = state else {
        tx.commit().await?;
        return Ok(Applied::default());
    };
    let now = store.database_clock().now();
    let plan = decide::fire_timer(&process, &state, index, now);
    finish_transition(store, tx, owner, &process, &plan, &state, now).await
}

/// The process deadline passed: close it as TIMEOUT.
pub(crate) async fn timeout_process<D: Dialect>(
    store: &D,
    task: &Task,
    owner: &str,
) -> Result<Applied, StoreError> {
    let mut tx = store.begin(Lane::Timekeeping).await?;
    let process = tx.lock_process(task.process_execution_id).await?;
    if super::held_back(&process) {
        drop(tx);
        return set_aside_paused(store, task, owner).await;
    }
    tx.take_task(task, owner).await?;
    let now = store.database_clock().now();
    let plan = decide::timeout_process(&process, now);
    let (applied, _) = tx
        .apply_plan(
            &process,
            &plan,
            now,
            Announce::ClosuresOnly,
            store.lease_to(owner),
            Finish::Later,
        )
        .await?;
    tx.commit().await?;
    Ok(applied)
}

/// Opens `task`'s transaction for the worker's answer to `call`, which writes
/// `global_writes`: locks the user's row (if written) before the execution's rows, and
/// refuses a state that moved on since `call` was read.
async fn begin_transition<D: Dialect>(
    store: &D,
    task: &Task,
    owner: &str,
    call: &StateCall,
    global_writes: &[GlobalAttributeValue],
) -> Result<(D::Tx, ProcessExecution, StateExecution), StoreError> {
    let mut tx = store.begin(Lane::Main).await?;
    lock_business_row_first(
        &mut tx,
        call.process.global_attribute_config.as_ref(),
        global_writes,
    )
    .await?;
    let (process, state) = tx.lock_for_task(task, owner, &call.state.id).await?;
    let state = state
        .filter(|s| s.version == call.state.version)
        .ok_or_else(|| StoreError::Stale(format!("state {} changed meanwhile", call.state.id)))?;
    Ok((tx, process, state))
}

/// Applies `plan` for the task transition of `state` (locked by `tx`) and commits; the
/// dialect may send COMMIT with the writes when nothing has to be read after them.
async fn finish_transition<D: Dialect>(
    store: &D,
    mut tx: D::Tx,
    owner: &str,
    process: &ProcessExecution,
    plan: &TransitionPlan,
    state: &StateExecution,
    now: DateTime<Utc>,
) -> Result<Applied, StoreError> {
    let finish = if updates_only(plan, state)
        && !continuation_reads_attributes(process, plan, Some(state), now)
    {
        Finish::WithWrites
    } else {
        Finish::Later
    };
    let (mut applied, _) = tx
        .apply_plan(
            process,
            plan,
            now,
            Announce::ClosuresOnly,
            store.lease_to(owner),
            finish,
        )
        .await?;
    preload_continuation(&mut tx, process, plan, Some(state), &mut applied, now).await?;
    tx.commit().await?;
    Ok(applied)
}

/// A due task of a paused execution: set aside until it resumes, or (resumed meanwhile)
/// left for its next claim.
async fn set_aside_paused<D: Dialect>(
    store: &D,
    task: &Task,
    owner: &str,
) -> Result<Applied, StoreError> {
    if !super::set_aside(store, task, owner, &crate::SetAside::Paused).await? {
        return Err(StoreError::Stale(format!(
            "task {}: its execution resumed while it was set aside; it runs on its next claim",
            task.id
        )));
    }
    Ok(Applied::default())
}
