//! Row ↔ model conversions for the system tables.
//!
//! UUIDs travel as their hyphenated text, timestamps as UTC `DATETIME(6)`, JSON as text.

use std::sync::LazyLock;

use chrono::{DateTime, NaiveDateTime, Utc};
use mysql_async::prelude::FromValue;
use mysql_async::{Row, Value};
use serde::de::DeserializeOwned;
use uuid::Uuid;
use xdb_engine::{ProcessExecution, StateExecution, Task};

use crate::columns::{read_process, read_state, read_task, ColumnReader};
pub(crate) use crate::columns::{PROCESS_COLUMNS, STATE_COLUMNS, TASK_COLUMNS};
pub(crate) use crate::sql_tables::in_list::in_list;
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

/// The values of an execution row, in the column order of its inserts.
pub(crate) fn execution_values(execution: &ProcessExecution) -> Vec<Value> {
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
    ]
}

/// A row's columns by name, in the order of `names` (a `*_COLUMNS` list's).
struct Named<'a, N> {
    row: &'a Row,
    names: N,
}

impl<'n, N: Iterator<Item = &'n str>> Named<'_, N> {
    fn name(&mut self) -> Result<&'n str, StoreError> {
        self.names
            .next()
            .ok_or_else(|| StoreError::Database("corrupt row: too few columns".into()))
    }

    fn next<T: FromValue>(&mut self) -> Result<T, StoreError> {
        let name = self.name()?;
        get(self.row, name)
    }
}

impl<'n, N: Iterator<Item = &'n str>> ColumnReader for Named<'_, N> {
    fn uuid(&mut self) -> Result<Uuid, StoreError> {
        let name = self.name()?;
        get_uuid(self.row, name)
    }
    fn text(&mut self) -> Result<String, StoreError> {
        self.next()
    }
    fn optional_text(&mut self) -> Result<Option<String>, StoreError> {
        self.next()
    }
    fn int(&mut self) -> Result<i32, StoreError> {
        self.next()
    }
    fn optional_int(&mut self) -> Result<Option<i32>, StoreError> {
        self.next()
    }
    fn bigint(&mut self) -> Result<i64, StoreError> {
        self.next()
    }
    fn time(&mut self) -> Result<DateTime<Utc>, StoreError> {
        let name = self.name()?;
        get_time(self.row, name)
    }
    fn optional_time(&mut self) -> Result<Option<DateTime<Utc>>, StoreError> {
        let name = self.name()?;
        get_opt_time(self.row, name)
    }
    fn json<T: DeserializeOwned>(&mut self) -> Result<Option<T>, StoreError> {
        let name = self.name()?;
        get_json(self.row, name)
    }
}

/// `row`'s columns named as in `columns` (a `*_COLUMNS` list).
fn named<'a>(row: &'a Row, columns: &'static str) -> Named<'a, impl Iterator<Item = &'static str>> {
    Named {
        row,
        names: columns.split(", "),
    }
}

pub(crate) fn process_from_row(row: &Row) -> Result<ProcessExecution, StoreError> {
    read_process(&mut named(row, PROCESS_COLUMNS))
}

/// The state columns of a join, named `s_<column>` (see [`lock_processes_and_states`]).
const JOINED_STATE_COLUMNS: &str = "s.process_execution_id AS s_process_execution_id, \
    s.state_id AS s_state_id, s.state_execution_number AS s_state_execution_number, \
    s.status AS s_status, s.version AS s_version, s.input AS s_input, s.config AS s_config, \
    s.command_request AS s_command_request, s.command_results AS s_command_results, \
    s.created_at AS s_created_at";

/// `SELECT` of `count` executions (`p`) and one state (`s`) of each, both locked, in
/// the order of the executions' ids (the execution rows drive the join, so each is
/// locked before its state, as in every transaction). Parameters: the executions' ids,
/// then each state's execution id, state id and number.
pub(crate) fn lock_processes_and_states(count: usize) -> String {
    let process_columns = crate::columns::qualified(PROCESS_COLUMNS, "p");
    let ids = vec!["?"; count].join(", ");
    let states = vec!["(?, ?, ?)"; count].join(", ");
    format!(
        "SELECT STRAIGHT_JOIN {process_columns}, {JOINED_STATE_COLUMNS} \
         FROM xdb_sys_process_executions p \
         JOIN xdb_sys_async_state_executions s ON s.process_execution_id = p.id \
         WHERE p.id IN ({ids}) \
           AND (s.process_execution_id, s.state_id, s.state_execution_number) IN ({states}) \
         ORDER BY p.id FOR UPDATE"
    )
}

/// An execution and its state from a row of [`lock_processes_and_states`].
pub(crate) fn process_and_state_from_row(
    row: &Row,
) -> Result<(ProcessExecution, Option<StateExecution>), StoreError> {
    let process = process_from_row(row)?;
    let state = match get::<Option<String>>(row, "s_state_id")? {
        Some(_) => {
            let names = JOINED_STATE_NAMES.iter().map(String::as_str);
            Some(read_state(&mut Named { row, names })?)
        }
        None => None,
    };
    Ok((process, state))
}

/// The names of a join's state columns (see `JOINED_STATE_COLUMNS`), in
/// [`STATE_COLUMNS`] order.
static JOINED_STATE_NAMES: LazyLock<Vec<String>> = LazyLock::new(|| {
    STATE_COLUMNS
        .split(", ")
        .map(|column| format!("s_{column}"))
        .collect()
});

pub(crate) fn task_from_row(row: &Row) -> Result<Task, StoreError> {
    read_task(&mut named(row, TASK_COLUMNS))
}
