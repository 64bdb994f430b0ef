//! Row ↔ model conversions for the system tables.

use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_postgres::Row;
use uuid::Uuid;
use xdb_engine::*;
use xdb_protocol::ProcessStatus;

use crate::trace_context::TaskInfo;
use crate::StoreError;

pub(crate) const PROCESS_COLUMNS: &str = "id, process_id, process_type, worker_url, status, \
    start_time, close_time, timeout_seconds, running_state_executions, graceful_completion, \
    state_execution_sequences, global_attribute_config, result, failure";

pub(crate) const STATE_COLUMNS: &str = "process_execution_id, state_id, state_execution_number, \
    status, version, input, config, command_request, command_results, created_at";

pub(crate) const TASK_COLUMNS: &str = "id, task_type, fire_at, process_execution_id, state_id, \
    state_execution_number, timer_index, attempt, first_attempt_at, info";

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
    let status: String = row.get("status");
    Ok(ProcessExecution {
        id: row.get("id"),
        process_id: row.get("process_id"),
        process_type: row.get("process_type"),
        worker_url: row.get("worker_url"),
        status: ProcessStatus::parse(&status)
            .ok_or_else(|| StoreError::Database(format!("unknown process status {status}")))?,
        start_time: row.get("start_time"),
        close_time: row.get("close_time"),
        timeout_seconds: row.get("timeout_seconds"),
        running_state_executions: row.get("running_state_executions"),
        graceful_completion: from_json(row.get("graceful_completion"))?,
        state_execution_sequences: from_json(row.get("state_execution_sequences"))?
            .unwrap_or_default(),
        global_attribute_config: from_json(row.get("global_attribute_config"))?,
        result: from_json(row.get("result"))?,
        failure: from_json(row.get("failure"))?,
    })
}

pub(crate) fn state_from_row(row: &Row) -> Result<StateExecution, StoreError> {
    let status: String = row.get("status");
    Ok(StateExecution {
        process_execution_id: row.get("process_execution_id"),
        id: StateExecutionId {
            state_id: row.get("state_id"),
            number: row.get("state_execution_number"),
        },
        status: StateExecutionStatus::parse(&status)
            .ok_or_else(|| StoreError::Database(format!("unknown state status {status}")))?,
        version: row.get("version"),
        input: from_json(row.get("input"))?,
        config: from_json(row.get("config"))?.unwrap_or_default(),
        command_request: from_json(row.get("command_request"))?,
        command_progress: from_json(row.get("command_results"))?,
        created_at: row.get("created_at"),
    })
}

pub(crate) fn task_from_row(row: &Row) -> Result<Task, StoreError> {
    let task_type: String = row.get("task_type");
    let state_id: Option<String> = row.get("state_id");
    let number: Option<i32> = row.get("state_execution_number");
    Ok(Task {
        id: row.get("id"),
        task_type: TaskType::parse(&task_type)
            .ok_or_else(|| StoreError::Database(format!("unknown task type {task_type}")))?,
        fire_at: row.get("fire_at"),
        process_execution_id: row.get::<_, Uuid>("process_execution_id"),
        state: state_id
            .zip(number)
            .map(|(state_id, number)| StateExecutionId { state_id, number }),
        timer_index: row.get("timer_index"),
        attempt: row.get("attempt"),
        first_attempt_at: row.get("first_attempt_at"),
        traceparent: from_json::<TaskInfo>(row.get("info"))?.and_then(|info| info.traceparent),
    })
}

pub(crate) fn parse_execution_id(text: &str) -> Result<Uuid, StoreError> {
    Uuid::parse_str(text).map_err(|_| {
        StoreError::Decide(xdb_engine::decide::DecideError::Invalid(
            xdb_engine::validation::ValidationError::new("processExecutionId", "is not a UUID"),
        ))
    })
}
