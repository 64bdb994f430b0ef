//! Reading what a worker call needs: before the call (plain reads, no transaction: the
//! call happens outside any transaction anyway, and the completing transaction checks
//! the state's version again), or inside the transaction that created its task.

use chrono::{DateTime, Utc};
use xdb_engine::{
    ProcessExecution, StateExecution, StateExecutionStatus, Task, TaskType, TransitionPlan,
};
use xdb_protocol::LoadedAttributes;

use super::attributes::load_attributes;
use crate::continuation::{continuation_rows, loads_attributes};
use crate::fired_timer::fired_timer;
use crate::tables::{AttributeRows, Dialect, Lane, ProcessRows, TaskRows};
use crate::{Applied, FiredTimer, StateCall, StoreError};

/// Loads what a WAIT_UNTIL/EXECUTE task needs; `None`, after deleting the task, when the
/// state no longer waits for this work. A lock asked for in the state's loading policy
/// covers only this read.
pub(crate) async fn load_state_call<D: Dialect>(
    store: &D,
    task: &Task,
    owner: &str,
) -> Result<Option<StateCall>, StoreError> {
    let Some(state_id) = &task.state else {
        return Err(StoreError::Database(format!(
            "task {} has no state",
            task.id
        )));
    };
    let mut session = store.session(Lane::Main).await?;
    let found = session
        .read_process_and_state(task.process_execution_id, state_id)
        .await?;
    let expected = match task.task_type {
        TaskType::WaitUntil => StateExecutionStatus::WaitUntilRunning,
        _ => StateExecutionStatus::ExecuteRunning,
    };
    let Some((process, Some(state))) = found else {
        session.drop_task(task, owner).await?;
        return Ok(None);
    };
    if process.status.is_closed() || state.status != expected {
        session.drop_task(task, owner).await?;
        return Ok(None);
    }
    let attributes = load_attributes(&mut session, &process, &state).await?;
    Ok(Some(StateCall {
        process,
        state,
        attributes,
    }))
}

/// Reads the rows of due timer `task` (not locked): `Some`, with the execute's call,
/// when its firing settles the state's commands (see `crate::fired_timer`).
pub(crate) async fn fired_timer_call<D: Dialect>(
    store: &D,
    task: &Task,
) -> Result<Option<FiredTimer>, StoreError> {
    let Some(state_id) = &task.state else {
        return Ok(None);
    };
    let mut session = store.session(Lane::Timekeeping).await?;
    let read = session
        .read_process_and_state(task.process_execution_id, state_id)
        .await?;
    let Some((process, Some(state))) = read else {
        return Ok(None);
    };
    let Some(mut fired) = fired_timer(task, process, state, store.database_clock().now()) else {
        return Ok(None);
    };
    if loads_attributes(&fired.call.process, &fired.call.state) {
        fired.call.attributes =
            load_attributes(&mut session, &fired.call.process, &fired.call.state).await?;
    }
    Ok(Some(fired))
}

/// Reads the continuation's worker call inside the transaction that created its task
/// (the rows come from the plan, only attributes are read), so its handler skips
/// [`load_state_call`]. Leaves `applied` as it is when the rows are not known.
pub(crate) async fn preload_continuation(
    rows: &mut impl AttributeRows,
    process: &ProcessExecution,
    plan: &TransitionPlan,
    state_before: Option<&StateExecution>,
    applied: &mut Applied,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let Some(task) = &applied.continuation else {
        return Ok(());
    };
    let Some((process, state)) = continuation_rows(process, plan, state_before, task, now) else {
        return Ok(());
    };
    let attributes = load_attributes(rows, &process, &state).await?;
    applied.continuation_call = Some(Box::new(StateCall {
        process,
        state,
        attributes,
    }));
    Ok(())
}

/// [`preload_continuation`] for a continuation whose call reads no attributes: nothing
/// to read, so it needs no transaction.
pub(crate) fn continuation_call_without_reads(
    process: &ProcessExecution,
    plan: &TransitionPlan,
    state_before: Option<&StateExecution>,
    applied: &mut Applied,
    now: DateTime<Utc>,
) {
    let Some(task) = &applied.continuation else {
        return;
    };
    if let Some((process, state)) = continuation_rows(process, plan, state_before, task, now) {
        applied.continuation_call = Some(Box::new(StateCall {
            process,
            state,
            attributes: LoadedAttributes::default(),
        }));
    }
}
