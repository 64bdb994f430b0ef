//! A due timer whose firing starts its state's execute: read the rows, then commit the
//! firing with the worker's answer as one transition (see `crate::fired_timer`).

use chrono::Utc;
use xdb_engine::Task;
use xdb_protocol::AsyncStateExecuteResponse;

use super::complete_execute::complete_decided_execute;
use super::load_state_call::load_attributes;
use super::locks::{select_process, select_state};
use super::MySqlStore;
use crate::continuation::loads_attributes;
use crate::fired_timer::{fired_plan, fired_timer};
use crate::{Applied, FiredTimer, StoreError};

pub(crate) async fn fired_timer_call(
    store: &MySqlStore,
    task: &Task,
) -> Result<Option<FiredTimer>, StoreError> {
    let Some(state_id) = &task.state else {
        return Ok(None);
    };
    let mut conn = store.pool().get_conn().await?;
    let process = match select_process(&mut conn, task.process_execution_id, false).await {
        Ok(process) => process,
        Err(StoreError::NotFound(_)) => return Ok(None),
        Err(other) => return Err(other),
    };
    let Some(state) = select_state(&mut conn, process.id, state_id, false).await? else {
        return Ok(None);
    };
    let Some(mut fired) = fired_timer(task, process, state, Utc::now()) else {
        return Ok(None);
    };
    if loads_attributes(&fired.call.process, &fired.call.state) {
        fired.call.attributes =
            load_attributes(&mut conn, store, &fired.call.process, &fired.call.state).await?;
    }
    Ok(Some(fired))
}

pub(crate) async fn complete_fired_execute(
    store: &MySqlStore,
    task: &Task,
    owner: &str,
    fired: &FiredTimer,
    response: &AsyncStateExecuteResponse,
) -> Result<Applied, StoreError> {
    complete_decided_execute(
        store,
        task,
        owner,
        &fired.before,
        response,
        |process, state, now| fired_plan(process, state, fired, response, now),
    )
    .await
}
