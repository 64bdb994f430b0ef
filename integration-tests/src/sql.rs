//! Dialect-neutral reads of the test database: [`SqlClient`] runs one SQL text on
//! PostgreSQL or MySQL/MariaDB and answers rows of [`Cell`]s, so every row reader and
//! every assertion works on both.
//!
//! SQL is written once, in PostgreSQL's spelling (`$1` placeholders, `"quoted"`
//! identifiers); [`to_mysql`] turns it into MySQL's (`?`, `` `quoted` ``). Placeholders
//! must be numbered in the order they appear (the MySQL form is positional).

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use serde_json::Value;
use tokio_postgres::types::{ToSql, Type};
use uuid::Uuid;
use xdb_test_util::mysql_async::{self, prelude::Queryable};
use xdb_test_util::{Dialect, TestDatabase};

/// A parameter of a query.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    Text(String),
    Int(i64),
    /// An execution id: `UUID` on PostgreSQL, `CHAR(36)` on MySQL.
    Uuid(Uuid),
}

impl From<&str> for Arg {
    fn from(value: &str) -> Self {
        Arg::Text(value.to_string())
    }
}

impl From<&String> for Arg {
    fn from(value: &String) -> Self {
        Arg::Text(value.clone())
    }
}

impl From<String> for Arg {
    fn from(value: String) -> Self {
        Arg::Text(value)
    }
}

impl From<i64> for Arg {
    fn from(value: i64) -> Self {
        Arg::Int(value)
    }
}

impl From<Uuid> for Arg {
    fn from(value: Uuid) -> Self {
        Arg::Uuid(value)
    }
}

/// One value of a result row, decoded the same way for both dialects.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Int(i64),
    Float(f64),
    /// Text, and on MySQL also JSON, UUIDs and (text protocol) timestamps: the typed
    /// getters of [`Row`] parse it.
    Text(String),
    Time(DateTime<Utc>),
    Json(Value),
}

/// A result row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row(pub Vec<Cell>);

impl Row {
    fn cell(&self, i: usize) -> &Cell {
        self.0
            .get(i)
            .unwrap_or_else(|| panic!("no column {i} in {self:?}"))
    }

    pub fn is_null(&self, i: usize) -> bool {
        matches!(self.cell(i), Cell::Null)
    }

    pub fn opt_text(&self, i: usize) -> Option<String> {
        match self.cell(i) {
            Cell::Null => None,
            Cell::Text(text) => Some(text.clone()),
            Cell::Int(n) => Some(n.to_string()),
            other => panic!("column {i} is not text: {other:?}"),
        }
    }

    pub fn text(&self, i: usize) -> String {
        self.opt_text(i)
            .unwrap_or_else(|| panic!("column {i} is NULL in {self:?}"))
    }

    pub fn opt_i64(&self, i: usize) -> Option<i64> {
        match self.cell(i) {
            Cell::Null => None,
            Cell::Int(n) => Some(*n),
            Cell::Text(text) => Some(
                text.parse()
                    .unwrap_or_else(|e| panic!("column {i} {text:?} is not a number: {e}")),
            ),
            other => panic!("column {i} is not an integer: {other:?}"),
        }
    }

    pub fn i64(&self, i: usize) -> i64 {
        self.opt_i64(i)
            .unwrap_or_else(|| panic!("column {i} is NULL in {self:?}"))
    }

    pub fn opt_i32(&self, i: usize) -> Option<i32> {
        self.opt_i64(i).map(|n| {
            i32::try_from(n).unwrap_or_else(|_| panic!("column {i} ({n}) does not fit an i32"))
        })
    }

    pub fn i32(&self, i: usize) -> i32 {
        self.opt_i32(i)
            .unwrap_or_else(|| panic!("column {i} is NULL in {self:?}"))
    }

    pub fn uuid(&self, i: usize) -> Uuid {
        let text = self.text(i);
        Uuid::parse_str(&text).unwrap_or_else(|e| panic!("column {i} {text:?} is no UUID: {e}"))
    }

    pub fn opt_json(&self, i: usize) -> Option<Value> {
        match self.cell(i) {
            Cell::Null => None,
            Cell::Json(value) => Some(value.clone()),
            // MySQL answers JSON columns as text (MariaDB's JSON is LONGTEXT).
            Cell::Text(text) => Some(
                serde_json::from_str(text)
                    .unwrap_or_else(|e| panic!("column {i} is not JSON ({e}): {text:?}")),
            ),
            other => panic!("column {i} is not JSON: {other:?}"),
        }
    }

    pub fn json(&self, i: usize) -> Value {
        self.opt_json(i)
            .unwrap_or_else(|| panic!("column {i} is NULL in {self:?}"))
    }

    pub fn opt_time(&self, i: usize) -> Option<DateTime<Utc>> {
        match self.cell(i) {
            Cell::Null => None,
            Cell::Time(time) => Some(*time),
            // MySQL's text protocol: DATETIME(6) in UTC, `YYYY-MM-DD HH:MM:SS[.ffffff]`.
            Cell::Text(text) => Some(
                NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f")
                    .unwrap_or_else(|e| panic!("column {i} {text:?} is no timestamp: {e}"))
                    .and_utc(),
            ),
            other => panic!("column {i} is not a timestamp: {other:?}"),
        }
    }

    pub fn time(&self, i: usize) -> DateTime<Utc> {
        self.opt_time(i)
            .unwrap_or_else(|| panic!("column {i} is NULL in {self:?}"))
    }
}

/// A connection to the test database of either dialect, for assertions and fixtures.
pub enum SqlClient {
    Postgres(tokio_postgres::Client),
    MySql(mysql_async::Pool),
}

impl SqlClient {
    /// Connects to `db`.
    pub async fn connect(db: &TestDatabase) -> SqlClient {
        match db.dialect() {
            Dialect::Postgres => SqlClient::Postgres(db.client().await),
            Dialect::MySql => SqlClient::MySql(db.mysql_pool()),
        }
    }

    pub fn dialect(&self) -> Dialect {
        match self {
            SqlClient::Postgres(_) => Dialect::Postgres,
            SqlClient::MySql(_) => Dialect::MySql,
        }
    }

    /// Runs `sql` (PostgreSQL spelling, see the module docs) with `args`; panics with the
    /// SQL on failure.
    pub async fn query(&self, sql: &str, args: &[Arg]) -> Vec<Row> {
        match self {
            SqlClient::Postgres(client) => {
                let params = postgres_params(args);
                let refs: Vec<&(dyn ToSql + Sync)> = params
                    .iter()
                    .map(|p| p.as_ref() as &(dyn ToSql + Sync))
                    .collect();
                client
                    .query(sql, &refs)
                    .await
                    .unwrap_or_else(|e| panic!("query failed: {e:?}\n{sql}"))
                    .iter()
                    .map(postgres_row)
                    .collect()
            }
            SqlClient::MySql(pool) => {
                let mysql = to_mysql(sql);
                let mut conn = pool
                    .get_conn()
                    .await
                    .unwrap_or_else(|e| panic!("no connection to the test database: {e}"));
                let rows: Vec<mysql_async::Row> = conn
                    .exec(mysql.as_str(), mysql_params(args))
                    .await
                    .unwrap_or_else(|e| panic!("query failed: {e}\n{mysql}"));
                rows.into_iter().map(mysql_row).collect()
            }
        }
    }

    /// Runs `sql` (one or more statements, PostgreSQL spelling) as a fixture.
    pub async fn execute(&self, sql: &str) {
        match self {
            SqlClient::Postgres(client) => client
                .batch_execute(sql)
                .await
                .unwrap_or_else(|e| panic!("fixture SQL failed: {e:?}\n{sql}")),
            SqlClient::MySql(pool) => {
                let mysql = to_mysql(sql);
                let mut conn = pool
                    .get_conn()
                    .await
                    .unwrap_or_else(|e| panic!("no connection to the test database: {e}"));
                conn.query_drop(mysql.as_str())
                    .await
                    .unwrap_or_else(|e| panic!("fixture SQL failed: {e}\n{mysql}"));
            }
        }
    }
}

/// One connection of its own to the test database, for a test that plays a concurrent
/// transaction (holds locks while the services work). Statements answer their error
/// instead of panicking, since a test may expect one (a deadlock, a lock timeout).
pub enum SqlSession {
    Postgres(tokio_postgres::Client),
    MySql(mysql_async::Conn),
}

impl SqlSession {
    /// A new connection to `db`.
    pub async fn open(db: &TestDatabase) -> SqlSession {
        match db.dialect() {
            Dialect::Postgres => SqlSession::Postgres(db.client().await),
            Dialect::MySql => SqlSession::MySql(db.mysql_conn().await),
        }
    }

    /// Runs `sql` (PostgreSQL spelling) with `args`.
    pub async fn query(&mut self, sql: &str, args: &[Arg]) -> Result<Vec<Row>, String> {
        match self {
            SqlSession::Postgres(client) => {
                let params = postgres_params(args);
                let refs: Vec<&(dyn ToSql + Sync)> = params
                    .iter()
                    .map(|p| p.as_ref() as &(dyn ToSql + Sync))
                    .collect();
                client
                    .query(sql, &refs)
                    .await
                    .map(|rows| rows.iter().map(postgres_row).collect())
                    .map_err(|e| match e.as_db_error() {
                        Some(db) => format!("{}: {}", db.code().code(), db.message()),
                        None => e.to_string(),
                    })
            }
            SqlSession::MySql(conn) => {
                let rows: Vec<mysql_async::Row> = conn
                    .exec(to_mysql(sql).as_str(), mysql_params(args))
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(rows.into_iter().map(mysql_row).collect())
            }
        }
    }

    /// Runs `sql` (one or more statements without parameters, PostgreSQL spelling).
    pub async fn execute(&mut self, sql: &str) -> Result<(), String> {
        match self {
            SqlSession::Postgres(client) => {
                client.batch_execute(sql).await.map_err(|e| e.to_string())
            }
            SqlSession::MySql(conn) => conn
                .query_drop(to_mysql(sql).as_str())
                .await
                .map_err(|e| e.to_string()),
        }
    }
}

fn postgres_params(args: &[Arg]) -> Vec<Box<dyn ToSql + Sync + Send>> {
    args.iter()
        .map(|arg| -> Box<dyn ToSql + Sync + Send> {
            match arg {
                Arg::Text(text) => Box::new(text.clone()),
                Arg::Int(n) => Box::new(*n),
                Arg::Uuid(uuid) => Box::new(*uuid),
            }
        })
        .collect()
}

fn mysql_params(args: &[Arg]) -> mysql_async::Params {
    if args.is_empty() {
        return mysql_async::Params::Empty;
    }
    mysql_async::Params::Positional(
        args.iter()
            .map(|arg| match arg {
                Arg::Text(text) => mysql_async::Value::from(text.as_str()),
                Arg::Int(n) => mysql_async::Value::Int(*n),
                Arg::Uuid(uuid) => mysql_async::Value::from(uuid.to_string()),
            })
            .collect(),
    )
}

fn postgres_row(row: &tokio_postgres::Row) -> Row {
    let cells = row
        .columns()
        .iter()
        .enumerate()
        .map(|(i, column)| {
            let t = column.type_();
            let cell = if *t == Type::TEXT || *t == Type::VARCHAR || *t == Type::NAME {
                row.get::<_, Option<String>>(i).map(Cell::Text)
            } else if *t == Type::INT2 {
                row.get::<_, Option<i16>>(i).map(|n| Cell::Int(n.into()))
            } else if *t == Type::INT4 {
                row.get::<_, Option<i32>>(i).map(|n| Cell::Int(n.into()))
            } else if *t == Type::INT8 {
                row.get::<_, Option<i64>>(i).map(Cell::Int)
            } else if *t == Type::FLOAT8 {
                row.get::<_, Option<f64>>(i).map(Cell::Float)
            } else if *t == Type::UUID {
                row.get::<_, Option<Uuid>>(i)
                    .map(|u| Cell::Text(u.to_string()))
            } else if *t == Type::TIMESTAMPTZ {
                row.get::<_, Option<DateTime<Utc>>>(i).map(Cell::Time)
            } else if *t == Type::JSONB || *t == Type::JSON {
                row.get::<_, Option<Value>>(i).map(Cell::Json)
            } else {
                panic!(
                    "column {} has a type the readers do not know: {t}",
                    column.name()
                )
            };
            cell.unwrap_or(Cell::Null)
        })
        .collect();
    Row(cells)
}

fn mysql_row(row: mysql_async::Row) -> Row {
    let cells = row
        .unwrap()
        .into_iter()
        .map(|value| match value {
            mysql_async::Value::NULL => Cell::Null,
            mysql_async::Value::Int(n) => Cell::Int(n),
            mysql_async::Value::UInt(n) => {
                Cell::Int(i64::try_from(n).expect("an unsigned value that fits an i64"))
            }
            mysql_async::Value::Float(f) => Cell::Float(f.into()),
            mysql_async::Value::Double(f) => Cell::Float(f),
            mysql_async::Value::Bytes(bytes) => Cell::Text(
                String::from_utf8(bytes).unwrap_or_else(|e| panic!("a column is not UTF-8: {e}")),
            ),
            mysql_async::Value::Date(year, month, day, hour, minute, second, micros) => {
                let time = NaiveDate::from_ymd_opt(year.into(), month.into(), day.into())
                    .and_then(|date| {
                        date.and_hms_micro_opt(hour.into(), minute.into(), second.into(), micros)
                    })
                    .unwrap_or_else(|| panic!("not a timestamp: {value:?}"));
                Cell::Time(time.and_utc())
            }
            mysql_async::Value::Time(..) => panic!("TIME columns are not read: {value:?}"),
        })
        .collect();
    Row(cells)
}

/// `sql` in MySQL's spelling: `$1`, `$2`, ... become `?` and `"identifiers"` become
/// `` `identifiers` ``; text in single quotes is left alone.
pub fn to_mysql(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if c == '\'' {
                // `''` inside a string is an escaped quote: the string goes on.
                if chars.peek() == Some(&'\'') {
                    out.push(chars.next().unwrap());
                } else {
                    in_string = false;
                }
            }
            continue;
        }
        match c {
            '\'' => {
                in_string = true;
                out.push(c);
            }
            '"' => out.push('`'),
            '$' if chars.peek().is_some_and(char::is_ascii_digit) => {
                while chars.peek().is_some_and(char::is_ascii_digit) {
                    chars.next();
                }
                out.push('?');
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn to_mysql_rewrites_placeholders_and_quotes_outside_strings() {
        assert_eq!(
            to_mysql("SELECT \"key\" FROM t WHERE a = $1 AND b = $12"),
            "SELECT `key` FROM t WHERE a = ? AND b = ?"
        );
        assert_eq!(
            to_mysql("INSERT INTO \"user\" VALUES ('{\"a\":\"$1\"}', 'it''s \"x\"')"),
            "INSERT INTO `user` VALUES ('{\"a\":\"$1\"}', 'it''s \"x\"')"
        );
        assert_eq!(to_mysql("SELECT $ FROM t"), "SELECT $ FROM t");
    }

    #[test]
    fn cells_are_read_alike() {
        let row = Row(vec![
            Cell::Text("{\"a\": 1}".into()),
            Cell::Json(serde_json::json!({"a": 1})),
            Cell::Text("2024-05-06 07:08:09.123456".into()),
            Cell::Int(7),
            Cell::Null,
        ]);
        assert_eq!(row.json(0), row.json(1));
        assert_eq!(row.time(2).to_rfc3339(), "2024-05-06T07:08:09.123456+00:00");
        assert_eq!(row.i32(3), 7);
        assert_eq!(row.opt_text(4), None);
        assert!(row.is_null(4));
    }
}
