//! [`SqlConn`] on MySQL/MariaDB: prepared statements, UUIDs as their text, times as
//! UTC `DATETIME(6)`, JSON as text; columns read by position.
//!
//! Several statements run together ([`SqlConn::execute_all`]) go as one multi-statement
//! text, one round trip instead of one each: MariaDB's cost is per statement, and most
//! of a transition's time was spent waiting for its statements' answers one by one. The
//! binary protocol has no such form, so their parameters go as literals, quoted by the
//! driver's own `Value::as_sql` under the `sql_mode` every session sets (see
//! `session_setup`: backslashes escape).

use mysql_async::prelude::Queryable;
use mysql_async::{Params, Row, Value};

use super::global_attributes::to_mysql;
use super::rows::{json_text, time_value, Positional};
use super::tables::{AffectedRows, MySqlRows};
use crate::columns::ColumnReader;
use crate::sql::{one_by_one, Answers, Executed, Param, SqlConn, SqlKind, Statement};
use crate::StoreError;

/// `param` as the MySQL value of its column's type.
fn mysql_value(param: &Param<'_>) -> Value {
    match param {
        Param::Uuid(id) => Value::from(id.to_string()),
        Param::Text(text) => Value::from(*text),
        Param::String(text) => Value::from(text.as_str()),
        Param::Int(value) => Value::from(*value),
        Param::BigInt(value) => Value::from(*value),
        Param::Time(time) => time.map_or(Value::NULL, time_value),
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

    async fn execute_all(
        &mut self,
        statements: &[Statement<'_>],
    ) -> Result<Vec<Executed<Row>>, StoreError> {
        if statements.len() < 2 {
            return one_by_one(self, statements).await;
        }
        let mut text = String::new();
        for statement in statements {
            if !text.is_empty() {
                text.push_str(";\n");
            }
            text.push_str(&with_literals(&statement.sql, &statement.params)?);
        }
        let told = self.tells_inserted_ids();
        let mut result = self.conn.query_iter(text).await?;
        let mut done = Vec::with_capacity(statements.len());
        for statement in statements {
            // This statement's answer; collecting its rows moves on to the next one's
            // (and surfaces its error).
            let (matched, first_id) = (result.affected_rows(), result.last_insert_id());
            let rows: Vec<Row> = result.collect().await?;
            done.push(match statement.answers {
                Answers::Matched => Executed::Matched(matched),
                Answers::Rows => Executed::Rows(rows),
                Answers::Ids(inserted) => {
                    let first = first_id
                        .ok_or_else(|| StoreError::Database("the insert returned no id".into()))?
                        as i64;
                    let told = if told { inserted } else { 1 };
                    Executed::Ids((first..first + told as i64).collect())
                }
            });
        }
        Ok(done)
    }
}

/// Whether the sessions' `sql_mode` has `NO_BACKSLASH_ESCAPES`: it has not, as
/// `session_setup` sets it.
const NO_BACKSLASH_ESCAPES: bool = false;

/// `sql` with each `?` placeholder (outside quoted text) replaced by its parameter as a
/// literal, quoted by the driver; an error when the counts differ.
fn with_literals(sql: &str, params: &[Param<'_>]) -> Result<String, StoreError> {
    let mut text = String::with_capacity(sql.len() + params.len() * 16);
    let (mut quoted, mut next) = (false, params.iter());
    for c in sql.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                text.push(c);
            }
            '?' if !quoted => {
                let param = next.next().ok_or_else(|| {
                    StoreError::Database(format!(
                        "a statement has more placeholders than parameters: {sql}"
                    ))
                })?;
                text.push_str(&mysql_value(param).as_sql(NO_BACKSLASH_ESCAPES));
            }
            _ => text.push(c),
        }
    }
    if next.next().is_some() {
        return Err(StoreError::Database(format!(
            "a statement has fewer placeholders than parameters: {sql}"
        )));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn placeholders_become_quoted_literals() {
        let time = chrono::Utc
            .with_ymd_and_hms(2026, 11, 27, 16, 20, 51)
            .unwrap();
        let params = [
            Param::Text(Some("it's a \\ \"test\"\n")),
            Param::BigInt(Some(-7)),
            Param::Int(None),
            Param::Time(Some(time)),
        ];
        assert_eq!(
            with_literals(
                "UPDATE t SET a = ?, b = '?' WHERE c = ? AND d = ? OR e = ?",
                &params
            )
            .unwrap(),
            "UPDATE t SET a = 'it\\'s a \\\\ \\\"test\\\"\\n', b = '?' WHERE c = -7 \
             AND d = NULL OR e = '2026-11-27 16:20:51'"
        );
    }

    #[test]
    fn placeholders_and_parameters_must_agree() {
        assert!(with_literals("SELECT ?", &[]).is_err());
        assert!(with_literals("SELECT 1", &[Param::Int(Some(1))]).is_err());
    }

    #[test]
    fn sessions_escape_with_backslashes_as_literals_assume() {
        let setup = super::super::session_setup(std::time::Duration::from_secs(1)).join(" ");
        assert!(
            setup.contains("sql_mode = '"),
            "the session sets its sql_mode"
        );
        assert_eq!(setup.contains("NO_BACKSLASH_ESCAPES"), NO_BACKSLASH_ESCAPES);
    }
}
