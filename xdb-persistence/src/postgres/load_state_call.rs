//! Loads a state's rows and attributes before its worker call.
//!
//! Plain reads, no transaction: the worker call happens outside any transaction anyway,
//! and the completing transaction re-checks the state's version. So a lock asked for in
//! a state's loading policy covers only this read.

use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;
use xdb_engine::{
    ProcessExecution, StateExecution, StateExecutionStatus, Task, TaskType, TransitionPlan,
};
use xdb_protocol::{LoadedAttributes, LocalAttributeValue};

use super::global_attributes;
use super::locks::select_process_and_state;
use super::rows::from_json;
use super::PostgresStore;
use crate::continuation::continuation_rows;
use crate::{Applied, StateCall, StoreError};

/// Returns `None`, after deleting the task, when the state no longer waits for this work.
pub(crate) async fn load_state_call(
    store: &PostgresStore,
    task: &Task,
    owner: &str,
) -> Result<Option<StateCall>, StoreError> {
    let Some(state_id) = &task.state else {
        return Err(StoreError::Database(format!(
            "task {} has no state",
            task.id
        )));
    };
    let client = store.pool().get().await?;
    let found = select_process_and_state(&client, task.process_execution_id, state_id).await?;
    let (process, state) = match found {
        Some((process, state)) => (Some(process), state),
        None => (None, None),
    };
    let expected = match task.task_type {
        TaskType::WaitUntil => StateExecutionStatus::WaitUntilRunning,
        _ => StateExecutionStatus::ExecuteRunning,
    };
    let (Some(process), Some(state)) = (process, state) else {
        delete_stale(&client, task, owner).await?;
        return Ok(None);
    };
    if process.status.is_closed() || state.status != expected {
        delete_stale(&client, task, owner).await?;
        return Ok(None);
    }

    let attributes = load_attributes(&client, &process, &state).await?;
    Ok(Some(StateCall {
        process,
        state,
        attributes,
    }))
}

/// Reads the continuation's worker call inside the transaction that created its task
/// (the rows come from the plan, only attributes are read), so its handler skips
/// [`load_state_call`]. Leaves `applied` as it is when the rows are not known.
pub(crate) async fn preload_continuation(
    tx: &impl GenericClient,
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
    let attributes = load_attributes(tx, &process, &state).await?;
    applied.continuation_call = Some(Box::new(StateCall {
        process,
        state,
        attributes,
    }));
    Ok(())
}

/// [`preload_continuation`] for a continuation whose call reads no attributes (see
/// `continuation_reads_attributes`): its rows come from the plan, nothing is read.
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

/// The attributes `state`'s loading policy asks for.
pub(crate) async fn load_attributes(
    client: &impl GenericClient,
    process: &ProcessExecution,
    state: &StateExecution,
) -> Result<LoadedAttributes, StoreError> {
    let mut attributes = LoadedAttributes::default();
    if let (Some(config), Some(loading)) = (
        &process.global_attribute_config,
        &state.config.global_attribute_loading,
    ) {
        attributes.global_attributes =
            global_attributes::read(client, config, &loading.columns, loading.lock_type).await?;
    }
    if let Some(loading) = state
        .config
        .local_attribute_loading
        .as_ref()
        .filter(|l| !l.keys.is_empty())
    {
        let statement = client
            .prepare_cached(
                "SELECT key, value FROM xdb_sys_local_attributes \
                 WHERE process_execution_id = $1 AND key = ANY($2)",
            )
            .await?;
        for row in client
            .query(&statement, &[&process.id, &loading.keys])
            .await?
        {
            if let Some(value) = from_json(row.get(1))? {
                attributes.local_attributes.push(LocalAttributeValue {
                    key: row.get(0),
                    value,
                });
            }
        }
    }
    Ok(attributes)
}

async fn delete_stale(
    client: &impl GenericClient,
    task: &Task,
    owner: &str,
) -> Result<(), StoreError> {
    let statement = client
        .prepare_cached(
            "DELETE FROM xdb_sys_tasks WHERE id = $1 AND lease_owner IS NOT DISTINCT FROM $2",
        )
        .await?;
    client.execute(&statement, &[&task.id, &owner]).await?;
    Ok(())
}
