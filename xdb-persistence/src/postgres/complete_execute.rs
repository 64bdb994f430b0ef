//! execute answered: apply its decision with the worker's writes, in one transaction.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use xdb_engine::decide;
use xdb_engine::{ProcessExecution, StateExecution, Task, TransitionPlan};
use xdb_protocol::AsyncStateExecuteResponse;

use super::locks::{insert_messages, lock_waiting_states, queued_messages};
use super::statement_batches::StatementBatches;
use super::task_transition::{begin_transition, finish_transition, one_statement_transition};
use super::PostgresStore;
use crate::{Applied, StateCall, StoreError};

pub(crate) async fn complete_execute(
    store: &PostgresStore,
    task: &Task,
    owner: &str,
    call: &StateCall,
    response: &AsyncStateExecuteResponse,
) -> Result<Applied, StoreError> {
    complete_decided_execute(
        store,
        store.batches(),
        task,
        owner,
        call,
        response,
        |process, state, now| Ok(decide::complete_execute(process, state, response, now)?),
    )
    .await
}

/// Applies the plan `decide` makes of execute's answer `response`: usually decided from
/// the rows as `call` read them and applied in one statement (on `batches`); otherwise
/// decided again on the locked rows, once `call.state` is found as it was read.
pub(crate) async fn complete_decided_execute(
    store: &PostgresStore,
    batches: &StatementBatches,
    task: &Task,
    owner: &str,
    call: &StateCall,
    response: &AsyncStateExecuteResponse,
    decide: impl Fn(
        &ProcessExecution,
        &StateExecution,
        DateTime<Utc>,
    ) -> Result<TransitionPlan, StoreError>,
) -> Result<Applied, StoreError> {
    if response.writes.global_attributes.is_empty() && response.publish_to_local_queue.is_empty() {
        let now = Utc::now();
        if let Ok(plan) = decide(&call.process, &call.state, now) {
            if let Some(applied) =
                one_statement_transition(batches, store, task, owner, call, &plan, now).await?
            {
                return Ok(applied);
            }
        }
    }
    let (tx, process, state) =
        begin_transition(store, task, owner, call, &response.writes.global_attributes).await?;
    let now = Utc::now();
    let mut plan = decide(&process, &state, now)?;
    if !response.publish_to_local_queue.is_empty() && !plan.close_execution {
        insert_messages(tx.client(), process.id, &response.publish_to_local_queue).await?;
        let waiting: Vec<_> = lock_waiting_states(tx.client(), process.id).await?;
        let messages = queued_messages(tx.client(), process.id).await?;
        decide::deliver_messages(&waiting, &messages, &mut HashSet::new(), now, &mut plan);
    }
    finish_transition(tx, store, owner, &process, &plan, &state, now).await
}
