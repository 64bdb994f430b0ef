//! A timer task is due: mark the timer fired; the state may move on to execute.

use chrono::Utc;
use xdb_engine::decide;
use xdb_engine::Task;

use xdb_engine::StateExecutionId;

use super::locks::{lock_for_task, lock_process, select_process_and_state, take_task};
use super::task_transition::{finish_transition, one_statement_transition};
use super::transaction::Tx;
use super::PostgresStore;
use crate::{Applied, StateCall, StoreError};

pub(crate) async fn fire_timer(
    store: &PostgresStore,
    task: &Task,
    owner: &str,
) -> Result<Applied, StoreError> {
    if let (Some(state_id), Some(index)) = (&task.state, task.timer_index) {
        if let Some(applied) = fire_in_one_statement(store, task, owner, state_id, index).await? {
            return Ok(applied);
        }
    }
    let tx = Tx::on(store.timekeeping_pool()).await?;
    let (Some(state_id), Some(index)) = (&task.state, task.timer_index) else {
        // Not a state's timer (never written so): only the task goes.
        tx.begin_with(async {
            lock_process(tx.client(), task.process_execution_id).await?;
            take_task(tx.client(), task, owner).await
        })
        .await?;
        tx.commit().await?;
        return Ok(Applied::default());
    };
    // The process row first, like every transaction that touches an execution.
    let (process, state) = tx
        .begin_with(lock_for_task(tx.client(), task, owner, state_id))
        .await?;
    let Some(state) = state else {
        tx.commit().await?;
        return Ok(Applied::default());
    };
    let now = Utc::now();
    let plan = decide::fire_timer(&process, &state, index, now);
    finish_transition(tx, store, owner, &process, &plan, &state, now).await
}

/// The usual firing: the rows read (not locked), the decision applied by one statement
/// (see `one_statement_transition`), batched with the timers that fire with it. Timers
/// started together come due together: 1,000 in 0.4 s were fired 450 ms late at p99
/// when each was a transaction of two round trips of its own. `None` when the rows are
/// gone, the timer is stale, or they moved before the statement: the caller locks,
/// reads and decides again.
async fn fire_in_one_statement(
    store: &PostgresStore,
    task: &Task,
    owner: &str,
    state_id: &StateExecutionId,
    index: i32,
) -> Result<Option<Applied>, StoreError> {
    let read = {
        let client = store.timekeeping_pool().get().await?;
        select_process_and_state(&client, task.process_execution_id, state_id).await?
    };
    let Some((process, Some(state))) = read else {
        return Ok(None);
    };
    let now = Utc::now();
    let plan = decide::fire_timer(&process, &state, index, now);
    let call = StateCall {
        process,
        state,
        attributes: Default::default(),
    };
    one_statement_transition(
        store.timekeeping_batches(),
        store,
        task,
        owner,
        &call,
        &plan,
        now,
    )
    .await
}
