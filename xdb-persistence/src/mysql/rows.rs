//! Row ↔ model conversions for the system tables.
//!
//! UUIDs travel as their hyphenated text, timestamps as UTC `DATETIME(6)`, JSON as text.

use chrono::{DateTime, NaiveDateTime, Utc};
use mysql_async::prelude::FromValue;
use mysql_async::{Row, Value};
use serde::de::DeserializeOwned;
use uuid::Uuid;
use xdb_engine::{ProcessExecution, StateExecution, Task};

use crate::columns::{read_process, read_state, read_task, ColumnReader, PROCESS_COLUMN_COUNT};
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

pub(crate) fn process_from_row(row: &Row) -> Result<ProcessExecution, StoreError> {
    read_process(&mut Positional { row, at: 0 })
}

/// `SELECT` of `count` executions (`p`) and one state (`s`) of each, both locked, in
/// the order of the executions' ids (the execution rows drive the join, so each is
/// locked before its state, as in every transaction). Parameters: the executions' ids,
/// then each state's execution id, state id and number.
pub(crate) fn lock_processes_and_states(count: usize) -> String {
    let process_columns = crate::columns::qualified(PROCESS_COLUMNS, "p");
    let state_columns = crate::columns::qualified(STATE_COLUMNS, "s");
    let ids = vec!["?"; count].join(", ");
    let states = vec!["(?, ?, ?)"; count].join(", ");
    format!(
        "SELECT STRAIGHT_JOIN {process_columns}, {state_columns} \
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
    let state = match row.get_opt::<Option<String>, usize>(PROCESS_COLUMN_COUNT + 1) {
        Some(Ok(Some(_))) => Some(read_state(&mut Positional {
            row,
            at: PROCESS_COLUMN_COUNT,
        })?),
        _ => None,
    };
    Ok((process, state))
}

pub(crate) fn task_from_row(row: &Row) -> Result<Task, StoreError> {
    read_task(&mut Positional { row, at: 0 })
}

/// A row's columns by position from `at` on.
pub(super) struct Positional<'a> {
    pub(super) row: &'a Row,
    pub(super) at: usize,
}

impl Positional<'_> {
    fn next<T: FromValue>(&mut self) -> Result<T, StoreError> {
        self.at += 1;
        match self.row.get_opt::<T, usize>(self.at - 1) {
            Some(Ok(value)) => Ok(value),
            Some(Err(error)) => Err(corrupt(self.at - 1, error)),
            None => Err(StoreError::Database(format!(
                "corrupt row: no column {}",
                self.at - 1
            ))),
        }
    }
}

fn corrupt(column: usize, error: impl std::fmt::Display) -> StoreError {
    StoreError::Database(format!("corrupt row: column {column}: {error}"))
}

impl ColumnReader for Positional<'_> {
    fn uuid(&mut self) -> Result<Uuid, StoreError> {
        let text: String = self.next()?;
        Uuid::parse_str(&text).map_err(|e| corrupt(self.at - 1, e))
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
        Ok(self.next::<NaiveDateTime>()?.and_utc())
    }
    fn optional_time(&mut self) -> Result<Option<DateTime<Utc>>, StoreError> {
        Ok(self.next::<Option<NaiveDateTime>>()?.map(|t| t.and_utc()))
    }
    fn json<T: DeserializeOwned>(&mut self) -> Result<Option<T>, StoreError> {
        let Some(text) = self.next::<Option<String>>()? else {
            return Ok(None);
        };
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| corrupt(self.at - 1, e))?;
        if value.is_null() {
            return Ok(None);
        }
        serde_json::from_value(value)
            .map(Some)
            .map_err(|e| corrupt(self.at - 1, e))
    }
}
