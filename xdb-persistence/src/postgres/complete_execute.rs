//! execute answered: apply its decision with the worker's writes, in one transaction.

use std::collections::HashSet;

use chrono::Utc;
use xdb_engine::decide;
use xdb_engine::Task;
use xdb_protocol::AsyncStateExecuteResponse;

use super::locks::{insert_messages, lock_waiting_states, queued_messages};
use super::task_transition::{begin_transition, finish_transition};
use super::PostgresStore;
use crate::{Applied, StateCall, StoreError};

pub(crate) async fn complete_execute(
    store: &PostgresStore,
    task: &Task,
    owner: &str,
    call: &StateCall,
    response: &AsyncStateExecuteResponse,
) -> Result<Applied, StoreError> {
    let (tx, process, state) =
        begin_transition(store, task, owner, call, &response.writes.global_attributes).await?;
    let now = Utc::now();
    let mut plan = decide::complete_execute(&process, &state, response, now)?;
    if !response.publish_to_local_queue.is_empty() && !plan.close_execution {
        insert_messages(tx.client(), process.id, &response.publish_to_local_queue).await?;
        let waiting: Vec<_> = lock_waiting_states(tx.client(), process.id).await?;
        let messages = queued_messages(tx.client(), process.id).await?;
        decide::deliver_messages(&waiting, &messages, &mut HashSet::new(), now, &mut plan);
    }
    finish_transition(tx, store, owner, &process, &plan, &state, now).await
}
