//! Row ↔ model conversions for the system tables.
//!
//! UUIDs travel as their hyphenated text, timestamps as UTC `DATETIME(6)`, JSON as text.

use std::sync::LazyLock;

use chrono::{DateTime, NaiveDateTime, Utc};
use mysql_async::prelude::FromValue;
use mysql_async::{Row, Value};
use serde::de::DeserializeOwned;
use uuid::Uuid;
use xdb_engine::*;
use xdb_protocol::ProcessStatus;

pub(crate) use crate::columns::{PROCESS_COLUMNS, STATE_COLUMNS, TASK_COLUMNS};
use crate::trace_context::TaskInfo;
use crate::StoreError;

/// The value of `column`, or a "corrupt row" error naming it.
pub(crate) fn get<T: FromValue>(row: &Row, column: &str) -> Result<T, StoreError> {
    match row.get_opt::<T, _>(column) {
        Some(Ok(value)) => Ok(value),
        Some(Err(error)) => Err(StoreError::Database(format!(
            "corrupt row: column {column}: {error}"
        ))),
        None => Err(StoreError::Database(format!(
            "corrupt row: no column {column}"
        ))),
    }
}

pub(crate) fn get_uuid(row: &Row, column: &str) -> Result<Uuid, StoreError> {
    let text: String = get(row, column)?;
    Uuid::parse_str(&text)
        .map_err(|e| StoreError::Database(format!("corrupt row: column {column}: {e}")))
}

pub(crate) fn get_time(row: &Row, column: &str) -> Result<DateTime<Utc>, StoreError> {
    Ok(get::<NaiveDateTime>(row, column)?.and_utc())
}

pub(crate) fn get_opt_time(row: &Row, column: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
    Ok(get::<Option<NaiveDateTime>>(row, column)?.map(|t| t.and_utc()))
}

/// A JSON column parsed into `T`; SQL NULL and JSON `null` are `None`.
pub(crate) fn get_json<T: DeserializeOwned>(
    row: &Row,
    column: &str,
) -> Result<Option<T>, StoreError> {
    let Some(text) = get::<Option<String>>(row, column)? else {
        return Ok(None);
    };
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| StoreError::Database(format!("corrupt row: column {column}: {e}")))?;
    if value.is_null() {
        return Ok(None);
    }
    serde_json::from_value(value)
        .map(Some)
        .map_err(|e| StoreError::Database(format!("corrupt row: column {column}: {e}")))
}

/// A model value as JSON text for a JSON column.
pub(crate) fn json_text<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("model types serialize")
}

/// A UTC timestamp as a `DATETIME(6)` parameter.
pub(crate) fn time_value(time: DateTime<Utc>) -> Value {
    Value::from(time.naive_utc())
}

pub(crate) fn opt_time_value(time: Option<DateTime<Utc>>) -> Value {
    time.map_or(Value::NULL, time_value)
}

pub(crate) fn uuid_value(id: Uuid) -> Value {
    Value::from(id.to_string())
}

/// `?, ?, …` for an `IN` list of `len` values, padded to the next power of two (the
/// padding repeats the last value) so that only a handful of distinct statements reach
/// each connection's prepared-statement cache.
pub(crate) fn in_list(values: &mut Vec<Value>, len: usize) -> String {
    let padded = len.max(1).next_power_of_two();
    if let Some(last) = values.last().cloned() {
        values.extend(std::iter::repeat_n(last, padded - len));
    }
    vec!["?"; padded].join(", ")
}

pub(crate) fn process_from_row(row: &Row) -> Result<ProcessExecution, StoreError> {
    let status: String = get(row, "status")?;
    Ok(ProcessExecution {
        id: get_uuid(row, "id")?,
        process_id: get(row, "process_id")?,
        process_type: get(row, "process_type")?,
        worker_url: get(row, "worker_url")?,
        status: ProcessStatus::parse(&status)
            .ok_or_else(|| StoreError::Database(format!("unknown process status {status}")))?,
        start_time: get_time(row, "start_time")?,
        close_time: get_opt_time(row, "close_time")?,
        timeout_seconds: get(row, "timeout_seconds")?,
        running_state_executions: get(row, "running_state_executions")?,
        graceful_completion: get_json(row, "graceful_completion")?,
        state_execution_sequences: get_json(row, "state_execution_sequences")?.unwrap_or_default(),
        global_attribute_config: get_json(row, "global_attribute_config")?,
        result: get_json(row, "result")?,
        failure: get_json(row, "failure")?,
        paused: get_json(row, "paused")?,
    })
}

pub(crate) fn state_from_row(row: &Row) -> Result<StateExecution, StoreError> {
    state_from_named_row(row, &STATE_NAMES)
}

/// The state columns of a join, named `s_<column>` (see [`joined_process_and_state`]).
const JOINED_STATE_COLUMNS: &str = "s.process_execution_id AS s_process_execution_id, \
    s.state_id AS s_state_id, s.state_execution_number AS s_state_execution_number, \
    s.status AS s_status, s.version AS s_version, s.input AS s_input, s.config AS s_config, \
    s.command_request AS s_command_request, s.command_results AS s_command_results, \
    s.created_at AS s_created_at";

/// `SELECT` of execution `?` (`p`) and its state `?`, `?` (`s`, absent when the
/// execution has no such state), in one statement; locking its rows when `lock`.
pub(crate) fn joined_process_and_state(lock: bool) -> &'static str {
    static STATEMENTS: LazyLock<[String; 2]> = LazyLock::new(|| {
        let process_columns = crate::columns::qualified(PROCESS_COLUMNS, "p");
        let read = format!(
            "SELECT {process_columns}, {JOINED_STATE_COLUMNS} \
             FROM xdb_sys_process_executions p \
             LEFT JOIN xdb_sys_async_state_executions s ON s.process_execution_id = p.id \
               AND s.state_id = ? AND s.state_execution_number = ? \
             WHERE p.id = ?"
        );
        [read.clone(), read + " FOR UPDATE"]
    });
    &STATEMENTS[usize::from(lock)]
}

/// The execution and its state from a row of [`joined_process_and_state`].
pub(crate) fn process_and_state_from_row(
    row: &Row,
) -> Result<(ProcessExecution, Option<StateExecution>), StoreError> {
    let process = process_from_row(row)?;
    let state = match get::<Option<String>>(row, JOINED_STATE_NAMES.state_id)? {
        Some(_) => Some(state_from_named_row(row, &JOINED_STATE_NAMES)?),
        None => None,
    };
    Ok((process, state))
}

/// The names a state row's columns are read by.
struct StateColumnNames {
    process_execution_id: &'static str,
    state_id: &'static str,
    state_execution_number: &'static str,
    status: &'static str,
    version: &'static str,
    input: &'static str,
    config: &'static str,
    command_request: &'static str,
    command_results: &'static str,
    created_at: &'static str,
}

/// A state row selected by [`STATE_COLUMNS`].
const STATE_NAMES: StateColumnNames = StateColumnNames {
    process_execution_id: "process_execution_id",
    state_id: "state_id",
    state_execution_number: "state_execution_number",
    status: "status",
    version: "version",
    input: "input",
    config: "config",
    command_request: "command_request",
    command_results: "command_results",
    created_at: "created_at",
};

/// A state row of a join (see `JOINED_STATE_COLUMNS`).
const JOINED_STATE_NAMES: StateColumnNames = StateColumnNames {
    process_execution_id: "s_process_execution_id",
    state_id: "s_state_id",
    state_execution_number: "s_state_execution_number",
    status: "s_status",
    version: "s_version",
    input: "s_input",
    config: "s_config",
    command_request: "s_command_request",
    command_results: "s_command_results",
    created_at: "s_created_at",
};

fn state_from_named_row(row: &Row, names: &StateColumnNames) -> Result<StateExecution, StoreError> {
    let status: String = get(row, names.status)?;
    Ok(StateExecution {
        process_execution_id: get_uuid(row, names.process_execution_id)?,
        id: StateExecutionId {
            state_id: get(row, names.state_id)?,
            number: get(row, names.state_execution_number)?,
        },
        status: StateExecutionStatus::parse(&status)
            .ok_or_else(|| StoreError::Database(format!("unknown state status {status}")))?,
        version: get(row, names.version)?,
        input: get_json(row, names.input)?,
        config: get_json(row, names.config)?.unwrap_or_default(),
        command_request: get_json(row, names.command_request)?,
        command_progress: get_json(row, names.command_results)?,
        created_at: get_time(row, names.created_at)?,
    })
}

pub(crate) fn task_from_row(row: &Row) -> Result<Task, StoreError> {
    let task_type: String = get(row, "task_type")?;
    let state_id: Option<String> = get(row, "state_id")?;
    let number: Option<i32> = get(row, "state_execution_number")?;
    Ok(Task {
        id: get(row, "id")?,
        task_type: TaskType::parse(&task_type)
            .ok_or_else(|| StoreError::Database(format!("unknown task type {task_type}")))?,
        fire_at: get_time(row, "fire_at")?,
        process_execution_id: get_uuid(row, "process_execution_id")?,
        state: state_id
            .zip(number)
            .map(|(state_id, number)| StateExecutionId { state_id, number }),
        timer_index: get(row, "timer_index")?,
        attempt: get(row, "attempt")?,
        first_attempt_at: get_opt_time(row, "first_attempt_at")?,
        traceparent: get_json::<TaskInfo>(row, "info")?.and_then(|info| info.traceparent),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_lists_are_padded_to_powers_of_two() {
        let mut values: Vec<Value> = vec![1.into(), 2.into(), 3.into()];
        assert_eq!(in_list(&mut values, 3), "?, ?, ?, ?");
        assert_eq!(values, vec![1.into(), 2.into(), 3.into(), 3.into()]);
        let mut one: Vec<Value> = vec![1.into()];
        assert_eq!(in_list(&mut one, 1), "?");
        assert_eq!(one.len(), 1);
    }
}
