//! Start: one transaction claims the process id, writes the execution, its first state
//! and task, and upserts the global-attribute row.

use chrono::Utc;
use mysql_async::prelude::Queryable;
use mysql_async::Value;
use uuid::Uuid;
use xdb_engine::decide::{self, PreviousExecution};
use xdb_protocol::{ProcessExecutionStartRequest, ProcessExecutionStopType, ProcessStatus};

use super::apply_plan::apply_plan;
use super::global_attributes;
use super::locks::{lock_process, select_process};
use super::rows::{json_text, time_value, uuid_value};
use super::MySqlStore;
use crate::StoreError;

pub(crate) async fn start_process(
    store: &MySqlStore,
    request: &ProcessExecutionStartRequest,
) -> Result<Uuid, StoreError> {
    // Refuse bad input before touching a row (a too-long id would fail in SQL).
    decide::validate_start_request(request)?;
    let mut tx = store.begin().await?;
    let now = Utc::now();
    let new_id = Uuid::now_v7();

    // Concurrent starts of one process id serialize on its latest-execution row. The
    // no-op ON DUPLICATE KEY UPDATE takes that row's exclusive lock at once; INSERT
    // IGNORE would take a shared one, and two starters upgrading it would deadlock.
    tx.exec_drop(
        "INSERT INTO xdb_sys_latest_process_executions (process_id, process_execution_id) \
         VALUES (?, ?) ON DUPLICATE KEY UPDATE process_execution_id = process_execution_id",
        (request.process_id.as_str(), new_id.to_string()),
    )
    .await?;
    let latest: Option<String> = tx
        .exec_first(
            "SELECT process_execution_id FROM xdb_sys_latest_process_executions \
             WHERE process_id = ? FOR UPDATE",
            (request.process_id.as_str(),),
        )
        .await?;
    let latest =
        latest.ok_or_else(|| StoreError::Database("the latest-execution row vanished".into()))?;
    let latest =
        Uuid::parse_str(&latest).map_err(|e| StoreError::Database(format!("corrupt row: {e}")))?;
    let previous = if latest == new_id {
        None
    } else {
        Some(select_process(&mut tx, latest, false).await?)
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
        global_attributes::upsert(&mut tx, store, config, &config.initial_write).await?;
    }
    if let Some(previous) = previous
        .as_ref()
        .filter(|_| start.terminate_previous.is_some())
    {
        let locked = lock_process(&mut tx, previous.id).await?;
        if locked.status == ProcessStatus::Running {
            let plan = decide::stop_process(
                &locked,
                ProcessExecutionStopType::Terminate,
                Some("replaced by a new execution (TERMINATE_IF_RUNNING)"),
                now,
            )?;
            apply_plan(&mut tx, store, &locked, &plan, now, None).await?;
        }
    }
    if previous.is_some() {
        tx.exec_drop(
            "UPDATE xdb_sys_latest_process_executions SET process_execution_id = ? \
             WHERE process_id = ?",
            (new_id.to_string(), request.process_id.as_str()),
        )
        .await?;
    }

    let execution = &start.execution;
    tx.exec_drop(
        "INSERT INTO xdb_sys_process_executions (id, process_id, process_type, worker_url, \
           status, start_time, timeout_seconds, running_state_executions, \
           state_execution_sequences, global_attribute_config) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        vec![
            uuid_value(execution.id),
            Value::from(execution.process_id.as_str()),
            Value::from(execution.process_type.as_str()),
            Value::from(execution.worker_url.as_str()),
            Value::from(execution.status.as_str()),
            time_value(execution.start_time),
            Value::from(execution.timeout_seconds),
            Value::from(execution.running_state_executions),
            Value::from(json_text(&execution.state_execution_sequences)),
            Value::from(execution.global_attribute_config.as_ref().map(json_text)),
        ],
    )
    .await?;
    apply_plan(&mut tx, store, execution, &start.plan, now, None).await?;
    tx.commit().await?;
    Ok(new_id)
}
