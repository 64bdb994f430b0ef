//! Reads that lock, and the lock order every transaction keeps to avoid deadlocks:
//! the user's global-attribute row, then the process execution row, then its task and
//! state rows.

use deadpool_postgres::Transaction;
use uuid::Uuid;
use xdb_engine::{ProcessExecution, QueuedMessage, StateExecution, StateExecutionId, Task};
use xdb_protocol::LocalQueueMessage;

use super::rows::{
    from_json, parse_execution_id, process_from_row, state_from_row, PROCESS_COLUMNS, STATE_COLUMNS,
};
use crate::StoreError;

/// Deletes the task if `owner` still holds its lease; otherwise the work is someone
/// else's now and the transaction must not go on.
pub(crate) async fn take_task(
    tx: &Transaction<'_>,
    task: &Task,
    owner: &str,
) -> Result<(), StoreError> {
    let statement = tx.prepare_cached(TAKE_TASK).await?;
    if tx.execute(&statement, &[&task.id, &owner]).await? != 1 {
        return Err(StoreError::Stale(format!(
            "task {} is no longer leased to us",
            task.id
        )));
    }
    Ok(())
}

const TAKE_TASK: &str = "DELETE FROM xdb_sys_tasks WHERE id = $1 AND lease_owner = $2";

/// The process row, then `task` (taken, as [`take_task`]), then the state row, locked
/// in that order in one round trip.
pub(crate) async fn lock_for_task(
    tx: &Transaction<'_>,
    task: &Task,
    owner: &str,
    state: &StateExecutionId,
) -> Result<(ProcessExecution, Option<StateExecution>), StoreError> {
    // Prepared first: a statement still being prepared would go out after the others,
    // out of the lock order.
    let (process_sql, state_sql) = (process_sql(true), state_sql(true));
    futures::try_join!(
        tx.prepare_cached(&process_sql),
        tx.prepare_cached(TAKE_TASK),
        tx.prepare_cached(&state_sql),
    )?;
    let (process, (), state) = futures::try_join!(
        lock_process(tx, task.process_execution_id),
        take_task(tx, task, owner),
        lock_state(tx, task.process_execution_id, state),
    )?;
    Ok((process, state))
}

fn process_sql(for_update: bool) -> String {
    let lock = if for_update { " FOR UPDATE" } else { "" };
    format!("SELECT {PROCESS_COLUMNS} FROM xdb_sys_process_executions WHERE id = $1{lock}")
}

fn state_sql(for_update: bool) -> String {
    let lock = if for_update { " FOR UPDATE" } else { "" };
    format!(
        "SELECT {STATE_COLUMNS} FROM xdb_sys_async_state_executions \
         WHERE process_execution_id = $1 AND state_id = $2 AND state_execution_number = $3{lock}"
    )
}

pub(crate) async fn lock_process(
    tx: &Transaction<'_>,
    id: Uuid,
) -> Result<ProcessExecution, StoreError> {
    select_process(tx, id, true).await
}

pub(crate) async fn select_process(
    tx: &impl deadpool_postgres::GenericClient,
    id: Uuid,
    for_update: bool,
) -> Result<ProcessExecution, StoreError> {
    let statement = tx.prepare_cached(&process_sql(for_update)).await?;
    let row = tx
        .query_opt(&statement, &[&id])
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("process execution {id} not found")))?;
    process_from_row(&row)
}

/// The execution `process_id` refers to (its latest, or the given one), locked.
pub(crate) async fn lock_execution_of(
    tx: &Transaction<'_>,
    process_id: &str,
    execution_id: Option<&str>,
) -> Result<ProcessExecution, StoreError> {
    let id = resolve_execution(tx, process_id, execution_id).await?;
    lock_process(tx, id).await
}

pub(crate) async fn resolve_execution(
    tx: &impl deadpool_postgres::GenericClient,
    process_id: &str,
    execution_id: Option<&str>,
) -> Result<Uuid, StoreError> {
    if let Some(id) = execution_id {
        return parse_execution_id(id);
    }
    let statement = tx
        .prepare_cached(
            "SELECT process_execution_id FROM xdb_sys_latest_process_executions WHERE process_id = $1",
        )
        .await?;
    let row = tx
        .query_opt(&statement, &[&process_id])
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("process '{process_id}' not found")))?;
    Ok(row.get(0))
}

pub(crate) async fn lock_state(
    tx: &Transaction<'_>,
    process_execution_id: Uuid,
    id: &StateExecutionId,
) -> Result<Option<StateExecution>, StoreError> {
    select_state(tx, process_execution_id, id, true).await
}

pub(crate) async fn select_state(
    tx: &impl deadpool_postgres::GenericClient,
    process_execution_id: Uuid,
    id: &StateExecutionId,
    for_update: bool,
) -> Result<Option<StateExecution>, StoreError> {
    let statement = tx.prepare_cached(&state_sql(for_update)).await?;
    tx.query_opt(
        &statement,
        &[&process_execution_id, &id.state_id, &id.number],
    )
    .await?
    .map(|row| state_from_row(&row))
    .transpose()
}

/// The execution's waiting states, oldest first, locked.
pub(crate) async fn lock_waiting_states(
    tx: &Transaction<'_>,
    process_execution_id: Uuid,
) -> Result<Vec<StateExecution>, StoreError> {
    let statement = tx
        .prepare_cached(&format!(
            "SELECT {STATE_COLUMNS} FROM xdb_sys_async_state_executions \
             WHERE process_execution_id = $1 AND status = 'WAITING_COMMANDS' \
             ORDER BY created_at, state_id, state_execution_number FOR UPDATE"
        ))
        .await?;
    tx.query(&statement, &[&process_execution_id])
        .await?
        .iter()
        .map(state_from_row)
        .collect()
}

/// The execution's unconsumed messages in FIFO order.
pub(crate) async fn queued_messages(
    tx: &Transaction<'_>,
    process_execution_id: Uuid,
) -> Result<Vec<QueuedMessage>, StoreError> {
    let statement = tx
        .prepare_cached(
            "SELECT queue_name, sequence_id, dedup_id, payload FROM xdb_sys_local_queue_messages \
             WHERE process_execution_id = $1 AND consumed_by IS NULL ORDER BY sequence_id",
        )
        .await?;
    tx.query(&statement, &[&process_execution_id])
        .await?
        .iter()
        .map(|row| {
            let queue_name: String = row.get(0);
            Ok(QueuedMessage {
                queue_name: queue_name.clone(),
                sequence_id: row.get(1),
                message: LocalQueueMessage {
                    queue_name,
                    dedup_id: Some(row.get(2)),
                    payload: from_json(row.get(3))?,
                },
            })
        })
        .collect()
}

/// Inserts messages, dropping duplicates of a dedup id; returns how many were new.
pub(crate) async fn insert_messages(
    tx: &Transaction<'_>,
    process_execution_id: Uuid,
    messages: &[LocalQueueMessage],
) -> Result<u64, StoreError> {
    let statement = tx
        .prepare_cached(
            "INSERT INTO xdb_sys_local_queue_messages \
               (process_execution_id, queue_name, dedup_id, payload) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (process_execution_id, queue_name, dedup_id) DO NOTHING",
        )
        .await?;
    let mut inserted = 0;
    for message in messages {
        xdb_engine::validation::check_id("queueName", &message.queue_name)
            .map_err(|e| StoreError::Decide(e.into()))?;
        let dedup_id = match &message.dedup_id {
            Some(id) => {
                xdb_engine::validation::check_id("dedupId", id)
                    .map_err(|e| StoreError::Decide(e.into()))?;
                id.clone()
            }
            None => Uuid::now_v7().to_string(),
        };
        inserted += tx
            .execute(
                &statement,
                &[
                    &process_execution_id,
                    &message.queue_name,
                    &dedup_id,
                    &message.payload.as_ref().map(super::rows::to_json),
                ],
            )
            .await?;
    }
    Ok(inserted)
}
