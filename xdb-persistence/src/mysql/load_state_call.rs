//! Loads a state's rows and attributes before its worker call.
//!
//! Plain reads, no transaction: the worker call happens outside any transaction anyway,
//! and the completing transaction re-checks the state's version. So a lock asked for in
//! a state's loading policy covers only this read.

use chrono::{DateTime, Utc};
use mysql_async::prelude::Queryable;
use mysql_async::{Row, Value};
use xdb_engine::{
    ProcessExecution, StateExecution, StateExecutionStatus, Task, TaskType, TransitionPlan,
};
use xdb_protocol::{LoadedAttributes, LocalAttributeValue};

use super::global_attributes;
use super::locks::{select_process, select_state};
use super::rows::{get, get_json, in_list, uuid_value};
use super::MySqlStore;
use crate::continuation::continuation_rows;
use crate::{Applied, StateCall, StoreError};

/// Returns `None`, after deleting the task, when the state no longer waits for this work.
pub(crate) async fn load_state_call(
    store: &MySqlStore,
    task: &Task,
    owner: &str,
) -> Result<Option<StateCall>, StoreError> {
    let Some(state_id) = &task.state else {
        return Err(StoreError::Database(format!(
            "task {} has no state",
            task.id
        )));
    };
    let mut conn = store.pool().get_conn().await?;
    let process = match select_process(&mut conn, task.process_execution_id, false).await {
        Ok(process) => Some(process),
        Err(StoreError::NotFound(_)) => None,
        Err(other) => return Err(other),
    };
    let state = select_state(&mut conn, task.process_execution_id, state_id, false).await?;
    let expected = match task.task_type {
        TaskType::WaitUntil => StateExecutionStatus::WaitUntilRunning,
        _ => StateExecutionStatus::ExecuteRunning,
    };
    let (Some(process), Some(state)) = (process, state) else {
        delete_stale(&mut conn, task, owner).await?;
        return Ok(None);
    };
    if process.status.is_closed() || state.status != expected {
        delete_stale(&mut conn, task, owner).await?;
        return Ok(None);
    }

    let attributes = load_attributes(&mut conn, store, &process, &state).await?;
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
    conn: &mut impl Queryable,
    store: &MySqlStore,
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
    let attributes = load_attributes(conn, store, &process, &state).await?;
    applied.continuation_call = Some(Box::new(StateCall {
        process,
        state,
        attributes,
    }));
    Ok(())
}

/// The attributes `state`'s loading policy asks for.
pub(crate) async fn load_attributes(
    conn: &mut impl Queryable,
    store: &MySqlStore,
    process: &ProcessExecution,
    state: &StateExecution,
) -> Result<LoadedAttributes, StoreError> {
    let mut attributes = LoadedAttributes::default();
    if let (Some(config), Some(loading)) = (
        &process.global_attribute_config,
        &state.config.global_attribute_loading,
    ) {
        attributes.global_attributes =
            global_attributes::read(conn, store, config, &loading.columns, loading.lock_type)
                .await?;
    }
    if let Some(loading) = state
        .config
        .local_attribute_loading
        .as_ref()
        .filter(|l| !l.keys.is_empty())
    {
        attributes.local_attributes =
            read_local_attributes(conn, process.id, &loading.keys, "").await?;
    }
    Ok(attributes)
}

/// The execution's local attributes among `keys`; `lock` is appended to the query.
pub(crate) async fn read_local_attributes(
    conn: &mut impl Queryable,
    process_execution_id: uuid::Uuid,
    keys: &[String],
    lock: &str,
) -> Result<Vec<LocalAttributeValue>, StoreError> {
    let mut params = vec![uuid_value(process_execution_id)];
    params.extend(keys.iter().map(|k| Value::from(k.as_str())));
    let placeholders = in_list(&mut params, keys.len());
    let rows: Vec<Row> = conn
        .exec(
            format!(
                "SELECT `key`, value FROM xdb_sys_local_attributes \
                 WHERE process_execution_id = ? AND `key` IN ({placeholders}){lock}"
            ),
            params,
        )
        .await?;
    let mut attributes = Vec::with_capacity(rows.len());
    for row in &rows {
        if let Some(value) = get_json(row, "value")? {
            attributes.push(LocalAttributeValue {
                key: get(row, "key")?,
                value,
            });
        }
    }
    Ok(attributes)
}

async fn delete_stale(
    conn: &mut impl Queryable,
    task: &Task,
    owner: &str,
) -> Result<(), StoreError> {
    conn.exec_drop(
        "DELETE FROM xdb_sys_tasks WHERE id = ? AND lease_owner = ?",
        (task.id, owner),
    )
    .await?;
    Ok(())
}
