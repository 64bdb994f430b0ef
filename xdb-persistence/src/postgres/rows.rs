//! Row ↔ model conversions for the system tables.

use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_postgres::Row;
use uuid::Uuid;
use xdb_engine::*;
use xdb_protocol::ProcessStatus;

pub(crate) use crate::columns::*;
use crate::trace_context::TaskInfo;
use crate::StoreError;

pub(crate) fn from_json<T: DeserializeOwned>(
    value: Option<Value>,
) -> Result<Option<T>, StoreError> {
    value
        .filter(|v| !v.is_null())
        .map(|v| {
            serde_json::from_value(v).map_err(|e| StoreError::Database(format!("corrupt row: {e}")))
        })
        .transpose()
}

pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("model types serialize")
}

pub(crate) fn process_from_row(row: &Row) -> Result<ProcessExecution, StoreError> {
    process_at(row, 0)
}

/// The process whose [`PROCESS_COLUMNS`] start at column `at` (by position: cheaper than
/// by name, and a statement may return several tables' columns side by side).
pub(crate) fn process_at(row: &Row, at: usize) -> Result<ProcessExecution, StoreError> {
    let status: &str = row.get(at + 4);
    Ok(ProcessExecution {
        id: row.get(at),
        process_id: row.get(at + 1),
        process_type: row.get(at + 2),
        worker_url: row.get(at + 3),
        status: ProcessStatus::parse(status)
            .ok_or_else(|| StoreError::Database(format!("unknown process status {status}")))?,
        start_time: row.get(at + 5),
        close_time: row.get(at + 6),
        timeout_seconds: row.get(at + 7),
        running_state_executions: row.get(at + 8),
        graceful_completion: from_json(row.get(at + 9))?,
        state_execution_sequences: from_json(row.get(at + 10))?.unwrap_or_default(),
        global_attribute_config: from_json(row.get(at + 11))?,
        result: from_json(row.get(at + 12))?,
        failure: from_json(row.get(at + 13))?,
        paused: from_json(row.get(at + 14))?,
    })
}

pub(crate) fn state_from_row(row: &Row) -> Result<StateExecution, StoreError> {
    state_at(row, 0)
}

/// The state whose [`STATE_COLUMNS`] start at column `at`; `None` when they are NULL
/// (an outer join found no state).
pub(crate) fn optional_state_at(
    row: &Row,
    at: usize,
) -> Result<Option<StateExecution>, StoreError> {
    match row.get::<_, Option<Uuid>>(at) {
        Some(_) => state_at(row, at).map(Some),
        None => Ok(None),
    }
}

/// The state whose [`STATE_COLUMNS`] start at column `at`.
pub(crate) fn state_at(row: &Row, at: usize) -> Result<StateExecution, StoreError> {
    let status: &str = row.get(at + 3);
    Ok(StateExecution {
        process_execution_id: row.get(at),
        id: StateExecutionId {
            state_id: row.get(at + 1),
            number: row.get(at + 2),
        },
        status: StateExecutionStatus::parse(status)
            .ok_or_else(|| StoreError::Database(format!("unknown state status {status}")))?,
        version: row.get(at + 4),
        input: from_json(row.get(at + 5))?,
        config: from_json(row.get(at + 6))?.unwrap_or_default(),
        command_request: from_json(row.get(at + 7))?,
        command_progress: from_json(row.get(at + 8))?,
        created_at: row.get(at + 9),
    })
}

pub(crate) fn task_from_row(row: &Row) -> Result<Task, StoreError> {
    task_at(row, 0)
}

/// The task whose [`TASK_COLUMNS`] start at column `at`.
pub(crate) fn task_at(row: &Row, at: usize) -> Result<Task, StoreError> {
    let task_type: &str = row.get(at + 1);
    let state_id: Option<String> = row.get(at + 4);
    let number: Option<i32> = row.get(at + 5);
    Ok(Task {
        id: row.get(at),
        task_type: TaskType::parse(task_type)
            .ok_or_else(|| StoreError::Database(format!("unknown task type {task_type}")))?,
        fire_at: row.get(at + 2),
        process_execution_id: row.get::<_, Uuid>(at + 3),
        state: state_id
            .zip(number)
            .map(|(state_id, number)| StateExecutionId { state_id, number }),
        timer_index: row.get(at + 6),
        attempt: row.get(at + 7),
        first_attempt_at: row.get(at + 8),
        traceparent: from_json::<TaskInfo>(row.get(at + 9))?.and_then(|info| info.traceparent),
    })
}
