//! A due timer whose firing starts its state's execute: read the rows, then commit the
//! firing with the worker's answer as one transition (see `crate::fired_timer`).

use chrono::Utc;
use xdb_engine::Task;
use xdb_protocol::AsyncStateExecuteResponse;

use super::complete_execute::complete_decided_execute;
use super::load_state_call::load_attributes;
use super::locks::select_process_and_state;
use super::PostgresStore;
use crate::continuation::loads_attributes;
use crate::fired_timer::{fired_plan, fired_timer};
use crate::{Applied, FiredTimer, StoreError};

pub(crate) async fn fired_timer_call(
    store: &PostgresStore,
    task: &Task,
) -> Result<Option<FiredTimer>, StoreError> {
    let Some(state_id) = &task.state else {
        return Ok(None);
    };
    let client = store.timekeeping_pool().get().await?;
    let read = select_process_and_state(&client, task.process_execution_id, state_id).await?;
    let Some((process, Some(state))) = read else {
        return Ok(None);
    };
    let Some(mut fired) = fired_timer(task, process, state, Utc::now()) else {
        return Ok(None);
    };
    if loads_attributes(&fired.call.process, &fired.call.state) {
        fired.call.attributes =
            load_attributes(&client, &fired.call.process, &fired.call.state).await?;
    }
    Ok(Some(fired))
}

/// On the timekeeping lane, like every firing: a backlog of other transitions must not
/// make a timer's execute late.
pub(crate) async fn complete_fired_execute(
    store: &PostgresStore,
    task: &Task,
    owner: &str,
    fired: &FiredTimer,
    response: &AsyncStateExecuteResponse,
) -> Result<Applied, StoreError> {
    complete_decided_execute(
        store,
        store.timekeeping_batches(),
        task,
        owner,
        &fired.before,
        response,
        |process, state, now| fired_plan(process, state, fired, response, now),
    )
    .await
}
