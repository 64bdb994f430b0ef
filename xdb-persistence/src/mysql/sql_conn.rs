//! [`SqlConn`] on MySQL/MariaDB: prepared statements, UUIDs as their text, times as
//! UTC `DATETIME(6)`, JSON as text; columns read by position.

use chrono::{DateTime, NaiveDateTime, Utc};
use mysql_async::prelude::{FromValue, Queryable};
use mysql_async::{Params, Row, Value};
use serde::de::DeserializeOwned;
use uuid::Uuid;

use super::global_attributes::to_mysql;
use super::rows::{json_text, time_value};
use super::tables::{AffectedRows, MySqlRows};
use crate::columns::ColumnReader;
use crate::sql::{Param, SqlConn, SqlKind};
use crate::StoreError;

/// `param` as the MySQL value of its column's type.
fn mysql_value(param: &Param<'_>) -> Value {
    match param {
        Param::Uuid(id) => Value::from(id.to_string()),
        Param::Text(text) => Value::from(*text),
        Param::Int(value) => Value::from(*value),
        Param::BigInt(value) => Value::from(*value),
        Param::Time(time) => time.map_or(Value::NULL, time_value),
        Param::Json(value) => value.as_ref().map_or(Value::NULL, |v| json_text(v).into()),
        Param::Cell(value, kind) => to_mysql(value, *kind),
    }
}

pub(super) fn mysql_params(params: &[Param<'_>]) -> Params {
    if params.is_empty() {
        Params::Empty
    } else {
        Params::Positional(params.iter().map(mysql_value).collect())
    }
}

impl<Q: Queryable + AffectedRows + Sync> SqlConn for MySqlRows<Q> {
    type Row = Row;
    const KIND: SqlKind = SqlKind::MySql;

    async fn query(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>, StoreError> {
        Ok(self.conn.exec(sql, mysql_params(params)).await?)
    }

    async fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, StoreError> {
        self.conn.exec_drop(sql, mysql_params(params)).await?;
        Ok(self.conn.affected())
    }

    fn columns(row: &Row, at: usize) -> impl ColumnReader + '_ {
        Positional { row, at }
    }
}

/// A row's columns by position from `at` on.
struct Positional<'a> {
    row: &'a Row,
    at: usize,
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
