//! Start: one transaction claims the process id, writes the execution, its first state
//! and task, and upserts the global-attribute row.

use chrono::Utc;
use uuid::Uuid;
use xdb_engine::decide::{self, PreviousExecution};
use xdb_protocol::{ProcessExecutionStartRequest, ProcessExecutionStopType, ProcessStatus};

use super::apply_plan::{apply_plan, apply_plan_then, Announce, Finish};
use super::global_attributes;
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
    let tx = Tx::on(store.pool()).await?;
    let now = Utc::now();
    let new_id = Uuid::now_v7();

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

    let execution = &start.execution;
    // Prepared first, so that the insert goes out ahead of the plan's writes, in the
    // same round trip.
    let insert = tx_client
        .prepare_cached(
            "INSERT INTO xdb_sys_process_executions (id, process_id, process_type, worker_url, \
               status, start_time, timeout_seconds, running_state_executions, \
               state_execution_sequences, global_attribute_config) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .await?;
    let insert = async {
        tx_client
            .execute(
                &insert,
                &[
                    &execution.id,
                    &execution.process_id,
                    &execution.process_type,
                    &execution.worker_url,
                    &execution.status.as_str(),
                    &execution.start_time,
                    &execution.timeout_seconds,
                    &execution.running_state_executions,
                    &to_json(&execution.state_execution_sequences),
                    &execution.global_attribute_config.as_ref().map(to_json),
                ],
            )
            .await
            .map_err(StoreError::from)
    };
    // A first execution's plan updates no state row: COMMIT can go out with its writes.
    let finish = if previous.is_none() {
        Finish::WithWrites
    } else {
        Finish::Later
    };
    let (_, (_, committed)) = futures::try_join!(
        insert,
        apply_plan_then(
            tx_client,
            execution,
            &start.plan,
            now,
            Announce::NewTasks,
            None,
            finish,
        )
    )?;
    if committed {
        tx.committed();
    } else {
        tx.commit().await?;
    }
    Ok(new_id)
}
