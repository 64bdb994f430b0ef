//! [`SqlConn`] on MySQL/MariaDB: prepared statements, UUIDs as their text, times as
//! UTC `DATETIME(6)`, JSON as text; columns read by position.

use mysql_async::prelude::Queryable;
use mysql_async::{Params, Row, Value};

use super::compound::run_compound;
use super::global_attributes::to_mysql;
use super::rows::{json_text, time_value, Positional};
use super::tables::{AffectedRows, MySqlRows};
use crate::columns::ColumnReader;
use crate::sql::{Param, SqlConn, SqlKind};
use crate::steps::{run_each, Step};
use crate::StoreError;

/// `param` as the MySQL value of its column's type.
pub(super) fn mysql_value(param: &Param<'_>) -> Value {
    match param {
        Param::Uuid(id) => Value::from(id.to_string()),
        Param::OptionalUuid(id) => id.map_or(Value::NULL, |id| Value::from(id.to_string())),
        Param::Text(text) => Value::from(*text),
        Param::OwnedText(text) => Value::from(text.as_str()),
        Param::Int(value) => Value::from(*value),
        Param::BigInt(value) => Value::from(*value),
        Param::Time(time) => time.map_or(Value::NULL, time_value),
        Param::Bool(value) => value.map_or(Value::NULL, |b| Value::Int(i64::from(b))),
        Param::Double(value) => value.map_or(Value::NULL, Value::Double),
        Param::Json(value) => value.as_ref().map_or(Value::NULL, |v| json_text(v).into()),
        Param::JsonRef(value) => value.map_or(Value::NULL, |v| json_text(v).into()),
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

    async fn query_once(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Vec<Row>, StoreError> {
        // Through the connection's statement cache, as any statement: it keeps the
        // least recently used out past its size, so filters of ever new shapes cannot
        // grow it, and a repeated one is not prepared again (a round trip, and MariaDB's
        // first-execution work).
        self.query(sql, params).await
    }

    async fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, StoreError> {
        self.conn.exec_drop(sql, mysql_params(params)).await?;
        Ok(self.conn.affected())
    }

    fn columns(row: &Row, at: usize) -> impl ColumnReader + '_ {
        Positional { row, at }
    }

    async fn insert_numbered(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        rows: usize,
    ) -> Result<Vec<i64>, StoreError> {
        self.conn.exec_drop(sql, mysql_params(params)).await?;
        let first = self
            .conn
            .last_id()
            .ok_or_else(|| StoreError::Database("the insert returned no id".into()))?
            as i64;
        let told = if self.tells_inserted_ids() { rows } else { 1 };
        Ok((first..first + told as i64).collect())
    }

    fn tells_inserted_ids(&self) -> bool {
        self.store.consecutive_insert_ids()
    }

    async fn run_in_order(&mut self, steps: &[Step<'_>]) -> Result<Vec<Vec<i64>>, StoreError> {
        if steps.len() < 2 || !self.store.is_mariadb() {
            return run_each(self, steps).await;
        }
        let tells_ids = self.tells_inserted_ids();
        run_compound(&mut self.conn, steps, tells_ids).await
    }
}
