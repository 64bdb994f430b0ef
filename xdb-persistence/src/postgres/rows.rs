//! Row ↔ model conversions for the system tables.

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_postgres::Row;
use uuid::Uuid;
use xdb_engine::{ProcessExecution, StateExecution, Task};

pub(crate) use crate::columns::*;
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

/// A row's columns by position from `at` on (cheaper than by name, and a statement may
/// return several tables' columns side by side).
pub(crate) struct Columns<'a> {
    pub(crate) row: &'a Row,
    pub(crate) at: usize,
}

impl Columns<'_> {
    fn next<T: tokio_postgres::types::FromSqlOwned>(&mut self) -> T {
        self.at += 1;
        self.row.get(self.at - 1)
    }
}

impl ColumnReader for Columns<'_> {
    fn uuid(&mut self) -> Result<Uuid, StoreError> {
        Ok(self.next())
    }
    fn text(&mut self) -> Result<String, StoreError> {
        Ok(self.next())
    }
    fn optional_text(&mut self) -> Result<Option<String>, StoreError> {
        Ok(self.next())
    }
    fn int(&mut self) -> Result<i32, StoreError> {
        Ok(self.next())
    }
    fn optional_int(&mut self) -> Result<Option<i32>, StoreError> {
        Ok(self.next())
    }
    fn bigint(&mut self) -> Result<i64, StoreError> {
        Ok(self.next())
    }
    fn time(&mut self) -> Result<DateTime<Utc>, StoreError> {
        Ok(self.next())
    }
    fn optional_time(&mut self) -> Result<Option<DateTime<Utc>>, StoreError> {
        Ok(self.next())
    }
    fn json<T: DeserializeOwned>(&mut self) -> Result<Option<T>, StoreError> {
        let value = self.next();
        from_json(value)
    }
}

/// The process whose [`PROCESS_COLUMNS`] start at column `at`.
pub(crate) fn process_at(row: &Row, at: usize) -> Result<ProcessExecution, StoreError> {
    read_process(&mut Columns { row, at })
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
    read_state(&mut Columns { row, at })
}

pub(crate) fn task_from_row(row: &Row) -> Result<Task, StoreError> {
    task_at(row, 0)
}

/// The task whose [`TASK_COLUMNS`] start at column `at`.
pub(crate) fn task_at(row: &Row, at: usize) -> Result<Task, StoreError> {
    read_task(&mut Columns { row, at })
}
