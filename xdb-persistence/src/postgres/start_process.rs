//! Start: claims the process id, writes the execution, its first state and task, and
//! upserts the global-attribute row, in one transaction. A first execution without a
//! global-attribute row, the usual start, is one statement.

use chrono::Utc;
use uuid::Uuid;
use xdb_engine::decide::{self, PreviousExecution};
use xdb_engine::ProcessExecution;
use xdb_protocol::{ProcessExecutionStartRequest, ProcessExecutionStopType, ProcessStatus};

use super::apply_plan::{
    apply_plan, apply_plan_then, commits_with_writes, plan_writes, Announce, Finish,
};
use super::global_attributes;
use super::pipeline::{param, Answer, Pipeline};
use super::rows::{process_from_row, to_json, PROCESS_COLUMNS};
use super::transaction::Tx;
use super::PostgresStore;
use crate::StoreError;

pub(crate) async fn start_process(
    store: &PostgresStore,
    request: &ProcessExecutionStartRequest,
) -> Result<Uuid, StoreError> {
    // Refuse bad input before touching a row (a too-long id would fail in SQL as a 500).
    decide::validate_start_request(request)?;
    let now = Utc::now();
    let new_id = Uuid::now_v7();
    if let Some(started) = start_first_execution(store, request, new_id, now).await? {
        return Ok(started);
    }
    let tx = Tx::on(store.pool()).await?;

    // Concurrent starts of one process id serialize on its latest-execution row.
    let inserted = tx
        .begin_with(async {
            let claim = tx
                .client()
                .prepare_cached(
                    "INSERT INTO xdb_sys_latest_process_executions \
                       (process_id, process_execution_id) \
                     VALUES ($1, $2) ON CONFLICT (process_id) DO NOTHING",
                )
                .await?;
            Ok(tx
                .client()
                .execute(&claim, &[&request.process_id, &new_id])
                .await?)
        })
        .await?;
    let tx_client = tx.client();
    let previous = if inserted == 1 {
        None
    } else {
        let select = tx_client
            .prepare_cached(&format!(
                "SELECT {PROCESS_COLUMNS} FROM xdb_sys_process_executions WHERE id = \
                 (SELECT process_execution_id FROM xdb_sys_latest_process_executions \
                  WHERE process_id = $1 FOR UPDATE)"
            ))
            .await?;
        let row = tx_client.query_one(&select, &[&request.process_id]).await?;
        Some(process_from_row(&row)?)
    };

    let start = decide::start_process(
        request,
        previous.as_ref().map(|p| PreviousExecution {
            id: p.id,
            status: p.status,
        }),
        new_id,
        now,
    )?;

    // The user row before any process row, as in every other transaction.
    if let Some(config) = &start.execution.global_attribute_config {
        global_attributes::upsert(tx_client, config, &config.initial_write).await?;
    }
    if let Some(previous) = previous
        .as_ref()
        .filter(|_| start.terminate_previous.is_some())
    {
        let lock = tx_client
            .prepare_cached(&format!(
                "SELECT {PROCESS_COLUMNS} FROM xdb_sys_process_executions WHERE id = $1 FOR UPDATE"
            ))
            .await?;
        let locked = process_from_row(&tx_client.query_one(&lock, &[&previous.id]).await?)?;
        if locked.status == ProcessStatus::Running {
            let plan = decide::stop_process(
                &locked,
                ProcessExecutionStopType::Terminate,
                Some("replaced by a new execution (TERMINATE_IF_RUNNING)"),
                now,
            )?;
            apply_plan(tx_client, &locked, &plan, now, Announce::NewTasks, None).await?;
        }
    }
    if previous.is_some() {
        let repoint = tx_client
            .prepare_cached(
                "UPDATE xdb_sys_latest_process_executions SET process_execution_id = $2 \
                 WHERE process_id = $1",
            )
            .await?;
        tx_client
            .execute(&repoint, &[&request.process_id, &new_id])
            .await?;
    }

    // A first execution's plan updates no state row: COMMIT can go out with its writes.
    let finish = if previous.is_none() {
        Finish::WithWrites
    } else {
        Finish::Later
    };
    let (_, committed) = apply_plan_then(
        tx_client,
        insert_execution(Pipeline::default(), &start.execution),
        &start.execution,
        &start.plan,
        now,
        Announce::NewTasks,
        None,
        finish,
    )
    .await?;
    if committed {
        tx.committed();
    } else {
        tx.commit().await?;
    }
    Ok(new_id)
}

/// Starts `request` as the first execution of its process id, in one statement (no
/// BEGIN, no COMMIT): a plain insert claims the id. `None` when the process id has had
/// an execution (the claim's primary key refused it, and nothing was written), or when
/// the start needs more than one statement (a global-attribute row to upsert first).
async fn start_first_execution(
    store: &PostgresStore,
    request: &ProcessExecutionStartRequest,
    new_id: Uuid,
    now: chrono::DateTime<Utc>,
) -> Result<Option<Uuid>, StoreError> {
    let start = decide::start_process(request, None, new_id, now)?;
    if start.execution.global_attribute_config.is_some() || !commits_with_writes(&start.plan) {
        return Ok(None);
    }
    let mut claim = Pipeline::default();
    claim.push(
        "INSERT INTO xdb_sys_latest_process_executions (process_id, process_execution_id) \
         VALUES ($1, $2)",
        vec![param(request.process_id.clone()), param(new_id)],
        Answer::Nothing,
    );
    let (writes, _) = plan_writes(
        insert_execution(claim, &start.execution),
        &start.execution,
        &start.plan,
        now,
        Announce::NewTasks,
        None,
    );
    match store
        .batches()
        .run(request.process_id.clone(), writes)
        .await
    {
        Ok(_) => Ok(Some(new_id)),
        Err(error) if process_id_taken(&error) => Ok(None),
        Err(error) => Err(error),
    }
}

/// Whether `error` is the start's claim refused: the process id has an execution.
fn process_id_taken(error: &StoreError) -> bool {
    matches!(error, StoreError::Database(message)
        if message.contains("\"xdb_sys_latest_process_executions_pkey\"")
            && message.contains("(23505)"))
}

/// `writes` with the execution's row inserted.
fn insert_execution(mut writes: Pipeline, execution: &ProcessExecution) -> Pipeline {
    writes.push(
        "INSERT INTO xdb_sys_process_executions (id, process_id, process_type, worker_url, \
           status, start_time, timeout_seconds, running_state_executions, \
           state_execution_sequences, global_attribute_config) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        vec![
            param(execution.id),
            param(execution.process_id.clone()),
            param(execution.process_type.clone()),
            param(execution.worker_url.clone()),
            param(execution.status.as_str()),
            param(execution.start_time),
            param(execution.timeout_seconds),
            param(execution.running_state_executions),
            param(to_json(&execution.state_execution_sequences)),
            param(execution.global_attribute_config.as_ref().map(to_json)),
        ],
        Answer::Nothing,
    );
    writes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_claims_primary_key_means_the_id_is_taken() {
        let taken = StoreError::Database(
            "duplicate key value violates unique constraint \
             \"xdb_sys_latest_process_executions_pkey\" (23505)"
                .into(),
        );
        assert!(process_id_taken(&taken));
        let other = StoreError::Database(
            "duplicate key value violates unique constraint \
             \"xdb_sys_process_executions_pkey\" (23505)"
                .into(),
        );
        assert!(!process_id_taken(&other));
    }
}
