//! Statements as data: what a dialect supplies to operations written once.
//!
//! A dialect runs a statement's text with [`Param`]s and hands back rows read by
//! position through [`crate::columns::ColumnReader`]; the per-table traits implemented
//! over [`SqlConn`] (in `sql_tables/`) hold the logic once and pick only the text. The
//! text is written with `?` placeholders; PostgreSQL's connection numbers them.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::business_table::ColumnKind;
use crate::columns::ColumnReader;
use crate::steps::{run_each, Step};
use crate::tables::Answer;

/// A statement parameter, converted by each dialect to its driver's type (a UUID is a
/// `uuid` on PostgreSQL and its hyphenated text on MySQL, a time a `timestamptz` or a
/// UTC `DATETIME(6)`, JSON a `jsonb` or text).
#[derive(Debug, Clone)]
pub(crate) enum Param<'a> {
    Uuid(Uuid),
    OptionalUuid(Option<Uuid>),
    Text(Option<&'a str>),
    /// Text made for the statement (a key's rendering), where none can be borrowed.
    OwnedText(String),
    Int(Option<i32>),
    BigInt(Option<i64>),
    Time(Option<DateTime<Utc>>),
    Bool(Option<bool>),
    Double(Option<f64>),
    Json(Option<serde_json::Value>),
    /// JSON borrowed from the row's source (a payload is not copied to be bound).
    JsonRef(Option<&'a serde_json::Value>),
    /// A JSON value for a column of the user's business table, of the kind given:
    /// MySQL binds it converted by the kind, PostgreSQL as `jsonb`.
    Cell(&'a serde_json::Value, ColumnKind),
}

impl<'a> From<&'a str> for Param<'a> {
    fn from(text: &'a str) -> Self {
        Param::Text(Some(text))
    }
}

impl From<Uuid> for Param<'_> {
    fn from(id: Uuid) -> Self {
        Param::Uuid(id)
    }
}

impl From<i32> for Param<'_> {
    fn from(value: i32) -> Self {
        Param::Int(Some(value))
    }
}

impl From<Option<i32>> for Param<'_> {
    fn from(value: Option<i32>) -> Self {
        Param::Int(value)
    }
}

impl From<i64> for Param<'_> {
    fn from(value: i64) -> Self {
        Param::BigInt(Some(value))
    }
}

impl From<DateTime<Utc>> for Param<'_> {
    fn from(time: DateTime<Utc>) -> Self {
        Param::Time(Some(time))
    }
}

/// `value` as a JSON parameter's value; the types stored as JSON always serialize.
pub(crate) fn json<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).expect("stored values serialize to JSON")
}

/// Which SQL a connection speaks, for the few statements whose text differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SqlKind {
    Postgres,
    MySql,
}

impl SqlKind {
    /// `postgres` or `mysql`, whichever this dialect speaks.
    pub fn pick<T>(self, postgres: T, mysql: T) -> T {
        match self {
            SqlKind::Postgres => postgres,
            SqlKind::MySql => mysql,
        }
    }
}

/// A connection (or transaction) that runs statements: the one thing a dialect
/// implements for the operations of `sql_tables/`.
pub(crate) trait SqlConn: Send {
    /// A row as the driver returns it.
    type Row: Send + Sync;
    /// The SQL this connection speaks.
    const KIND: SqlKind;

    /// The rows `sql` returns.
    fn query(&mut self, sql: &str, params: &[Param<'_>]) -> impl Answer<Vec<Self::Row>>;
    /// The rows `sql` returns, for a statement built for one request (a filter) that
    /// should not stay in a per-connection statement cache without bound.
    fn query_once(&mut self, sql: &str, params: &[Param<'_>]) -> impl Answer<Vec<Self::Row>> {
        self.query(sql, params)
    }
    /// Runs `sql`; the rows it matched.
    fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> impl Answer<u64>;
    /// `row`'s columns from position `at` on.
    fn columns(row: &Self::Row, at: usize) -> impl ColumnReader + '_;
    /// Runs `sql`, an `INSERT` of `rows` rows into a table numbered by its `id` column:
    /// the rows' ids in order when [`SqlConn::tells_inserted_ids`], else the first's.
    fn insert_numbered(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        rows: usize,
    ) -> impl Answer<Vec<i64>>;
    /// Whether [`SqlConn::insert_numbered`] tells every row's id of a multi-row insert
    /// (not on MySQL whose `innodb_autoinc_lock_mode` lets other inserts' ids interleave).
    fn tells_inserted_ids(&self) -> bool;
    /// Runs `steps` in order, each required to do what it expects; the ids of each
    /// [`crate::steps::Expect::Ids`] step, in order. One round trip each unless the
    /// dialect sends them together.
    fn run_in_order(&mut self, steps: &[Step<'_>]) -> impl Answer<Vec<Vec<i64>>>
    where
        Self: Sized,
    {
        run_each(self, steps)
    }
}

/// The one number `sql`, a `SELECT COUNT(*) …`, answers.
pub(crate) async fn count<C: SqlConn>(
    conn: &mut C,
    sql: &str,
    params: &[Param<'_>],
) -> Result<i64, crate::StoreError> {
    let rows = conn.query(sql, params).await?;
    let row = rows
        .first()
        .ok_or_else(|| crate::StoreError::Database("COUNT(*) answered no row".into()))?;
    let counted = C::columns(row, 0).bigint()?;
    Ok(counted)
}

/// `sql` with its `?` placeholders numbered `$1`, `$2`, … (PostgreSQL's form); `?`
/// inside quoted text is left alone.
pub(crate) fn numbered_placeholders(sql: &str) -> Cow<'_, str> {
    if !sql.contains('?') {
        return Cow::Borrowed(sql);
    }
    let mut numbered = String::with_capacity(sql.len() + 16);
    let (mut quoted, mut next) = (false, 1);
    for c in sql.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                numbered.push(c);
            }
            '?' if !quoted => {
                numbered.push('$');
                numbered.push_str(&next.to_string());
                next += 1;
            }
            _ => numbered.push(c),
        }
    }
    Cow::Owned(numbered)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_outside_quotes() {
        assert_eq!(
            numbered_placeholders("SELECT a FROM t WHERE b = ? AND c = '?' AND d IN (?, ?)"),
            "SELECT a FROM t WHERE b = $1 AND c = '?' AND d IN ($2, $3)"
        );
        assert!(matches!(
            numbered_placeholders("SELECT 1"),
            Cow::Borrowed("SELECT 1")
        ));
    }
}
