//! Row ↔ model conversions for the system tables.
//!
//! UUIDs travel as their hyphenated text, timestamps as UTC `DATETIME(6)`, JSON as text.

use chrono::{DateTime, NaiveDateTime, Utc};
use mysql_async::prelude::FromValue;
use mysql_async::{Row, Value};
use serde::de::DeserializeOwned;
use uuid::Uuid;

use crate::columns::ColumnReader;
use crate::StoreError;

/// A model value as JSON text for a JSON column.
pub(crate) fn json_text<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("model types serialize")
}

/// A UTC timestamp as a `DATETIME(6)` parameter.
pub(crate) fn time_value(time: DateTime<Utc>) -> Value {
    Value::from(time.naive_utc())
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
