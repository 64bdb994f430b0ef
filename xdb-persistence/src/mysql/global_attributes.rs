//! The user's business table on MySQL: the column kinds and value conversions that the
//! statements of [`crate::sql_tables::business_rows`] bind and read with.
//!
//! MySQL cannot convert a JSON document to a row the way PostgreSQL's
//! `jsonb_populate_record` does, so each JSON value is mapped to a MySQL value by the
//! column's type, read from `information_schema` and cached per table:
//! - string → string (for date/time columns, ISO-8601 text, with or without an offset,
//!   is parsed first; for binary columns, `\x`-prefixed hex is decoded);
//! - number → integer or double; bool → 1/0; null → NULL;
//! - object/array → JSON text; and *any* value bound to a JSON column is its JSON text,
//!   so a string stays a JSON string there.
//!
//! Reads convert back: JSON columns are parsed, `TINYINT(1)` (MySQL's BOOLEAN) reads as
//! a bool, DECIMAL as a number, date/time types as ISO-8601 text (TIMESTAMP with
//! `+00:00`, like PostgreSQL's `timestamptz`), binary types as `\x`-prefixed hex (like
//! `bytea`).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use chrono::{DateTime, NaiveDate, NaiveDateTime};
use mysql_async::prelude::Queryable;
use mysql_async::{Row, Value};
use serde_json::{Number, Value as J};

use super::rows::Positional;
use super::tables::{AffectedRows, MySqlRows};
use super::MySqlStore;
use crate::business_table::{kind_of, BusinessTable, ColumnKind, ColumnKinds};
use crate::columns::ColumnReader;
use crate::sql_tables::business_rows::BusinessConn;
use crate::StoreError;

/// How long a table's column types are trusted before they are read again (a missing
/// column is looked up again at once).
const COLUMN_TYPES_TTL: Duration = Duration::from_secs(60);

/// A column's kind from what `information_schema` says of its type.
fn classify(data_type: &str, column_type: &str, json_check: bool) -> ColumnKind {
    let data_type = data_type.to_ascii_lowercase();
    match data_type.as_str() {
        "json" => ColumnKind::Json,
        _ if json_check => ColumnKind::Json,
        "tinyint" if column_type.to_ascii_lowercase().starts_with("tinyint(1)") => ColumnKind::Bool,
        "decimal" | "numeric" => ColumnKind::Decimal,
        "date" => ColumnKind::Date,
        "datetime" => ColumnKind::DateTime,
        "timestamp" => ColumnKind::Timestamp,
        "binary" | "varbinary" | "tinyblob" | "blob" | "mediumblob" | "longblob" => {
            ColumnKind::Binary
        }
        _ => ColumnKind::Other,
    }
}

/// Column kinds per table, keyed by `schema.table`, with the time they were read.
#[derive(Default)]
pub(crate) struct ColumnCache {
    tables: Mutex<HashMap<String, (Instant, ColumnKinds)>>,
}

/// Where `information_schema` lists `table`'s columns: its schema (the connection's
/// database unless named) and its name.
fn schema_and_name<'a>(store: &'a MySqlStore, table: &BusinessTable<'a>) -> (&'a str, &'a str) {
    match table.parts.as_slice() {
        [schema, name] => (schema, name),
        [name] => (&store.database, name),
        _ => unreachable!("split_table_name returns one or two parts"),
    }
}

/// The kinds of `columns` of `table`, from the cache when fresh and complete.
async fn column_kinds(
    conn: &mut impl Queryable,
    store: &MySqlStore,
    table: &BusinessTable<'_>,
    columns: &[&str],
) -> Result<ColumnKinds, StoreError> {
    let (schema, name) = schema_and_name(store, table);
    let key = format!("{schema}.{name}");
    {
        let cache = store.columns.tables.lock().expect("column cache poisoned");
        if let Some((loaded, kinds)) = cache.get(&key) {
            let complete = columns
                .iter()
                .all(|c| kinds.contains_key(&c.to_ascii_lowercase()));
            if complete && loaded.elapsed() < COLUMN_TYPES_TTL {
                return Ok(kinds.clone());
            }
        }
    }
    // MariaDB's JSON is LONGTEXT plus a column CHECK (json_valid(`col`)); MySQL 8's
    // CHECK_CONSTRAINTS has no TABLE_NAME, and its JSON columns say so themselves.
    let json_check = if store.mariadb {
        "EXISTS (SELECT 1 FROM information_schema.CHECK_CONSTRAINTS k \
           WHERE k.CONSTRAINT_SCHEMA = c.TABLE_SCHEMA AND k.TABLE_NAME = c.TABLE_NAME \
           AND k.CHECK_CLAUSE = CONCAT('json_valid(`', c.COLUMN_NAME, '`)'))"
    } else {
        "0"
    };
    let rows: Vec<Row> = conn
        .exec(
            format!(
                "SELECT c.COLUMN_NAME, c.DATA_TYPE, c.COLUMN_TYPE, {json_check} AS json_check \
                 FROM information_schema.COLUMNS c \
                 WHERE c.TABLE_SCHEMA = ? AND c.TABLE_NAME = ?"
            ),
            (schema, name),
        )
        .await?;
    let mut kinds = HashMap::new();
    for row in &rows {
        let mut columns = Positional { row, at: 0 };
        let (name, data_type) = (columns.text()?, columns.text()?);
        let (column_type, json_check) = (columns.text()?, columns.bigint()?);
        kinds.insert(
            name.to_ascii_lowercase(),
            classify(&data_type, &column_type, json_check != 0),
        );
    }
    // A missing table is not cached: the statement that follows reports it.
    if !kinds.is_empty() {
        store
            .columns
            .tables
            .lock()
            .expect("column cache poisoned")
            .insert(key, (Instant::now(), kinds.clone()));
    }
    Ok(kinds)
}

/// A JSON value as the parameter for a column of `kind`.
pub(crate) fn to_mysql(value: &serde_json::Value, kind: ColumnKind) -> Value {
    match (value, kind) {
        (J::Null, _) => Value::NULL,
        (_, ColumnKind::Json) => Value::from(value.to_string()),
        (J::Bool(b), _) => Value::Int(i64::from(*b)),
        (J::Number(n), _) => {
            if let Some(i) = n.as_i64() {
                Value::Int(i)
            } else if let Some(u) = n.as_u64() {
                Value::UInt(u)
            } else {
                Value::Double(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        (J::String(s), ColumnKind::Date | ColumnKind::DateTime | ColumnKind::Timestamp) => {
            parse_time(s).map_or_else(|| Value::from(s.as_str()), Value::from)
        }
        (J::String(s), ColumnKind::Binary) => match decode_hex(s) {
            Some(bytes) => Value::Bytes(bytes),
            None => Value::from(s.as_str()),
        },
        (J::String(s), _) => Value::from(s.as_str()),
        (J::Array(_) | J::Object(_), _) => Value::from(value.to_string()),
    }
}

/// ISO-8601 date/time text as a UTC date-time; `None` leaves the text to MySQL.
fn parse_time(text: &str) -> Option<NaiveDateTime> {
    if let Ok(time) = DateTime::parse_from_rfc3339(text) {
        return Some(time.naive_utc());
    }
    for format in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"] {
        if let Ok(time) = NaiveDateTime::parse_from_str(text, format) {
            return Some(time);
        }
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|date| date.and_hms_opt(0, 0, 0))
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    let hex = text.strip_prefix("\\x")?;
    if hex.len() % 2 != 0 {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A value read from a column of `kind` as JSON.
pub(crate) fn from_mysql(value: Value, kind: ColumnKind) -> serde_json::Value {
    match value {
        Value::NULL => J::Null,
        Value::Int(i) if kind == ColumnKind::Bool => J::Bool(i != 0),
        Value::Int(i) => J::from(i),
        Value::UInt(u) if kind == ColumnKind::Bool => J::Bool(u != 0),
        Value::UInt(u) => J::from(u),
        Value::Float(f) => Number::from_f64(f64::from(f)).map_or(J::Null, J::Number),
        Value::Double(d) => Number::from_f64(d).map_or(J::Null, J::Number),
        Value::Bytes(bytes) => match kind {
            ColumnKind::Json => serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| J::String(String::from_utf8_lossy(&bytes).into_owned())),
            ColumnKind::Decimal => {
                let text = String::from_utf8_lossy(&bytes);
                match serde_json::from_str::<Number>(&text) {
                    Ok(number) => J::Number(number),
                    Err(_) => J::String(text.into_owned()),
                }
            }
            ColumnKind::Binary => {
                let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
                J::String(format!("\\x{hex}"))
            }
            _ => J::String(String::from_utf8_lossy(&bytes).into_owned()),
        },
        Value::Date(year, month, day, hour, minute, second, micros) => {
            let date = format!("{year:04}-{month:02}-{day:02}");
            if kind == ColumnKind::Date {
                return J::String(date);
            }
            let fraction = if micros > 0 {
                format!(".{micros:06}")
            } else {
                String::new()
            };
            let offset = if kind == ColumnKind::Timestamp {
                "+00:00"
            } else {
                ""
            };
            J::String(format!(
                "{date}T{hour:02}:{minute:02}:{second:02}{fraction}{offset}"
            ))
        }
        Value::Time(negative, days, hours, minutes, seconds, micros) => {
            let sign = if negative { "-" } else { "" };
            let hours = u64::from(days) * 24 + u64::from(hours);
            let fraction = if micros > 0 {
                format!(".{micros:06}")
            } else {
                String::new()
            };
            J::String(format!(
                "{sign}{hours:02}:{minutes:02}:{seconds:02}{fraction}"
            ))
        }
    }
}

impl<Q: Queryable + AffectedRows + Sync> BusinessConn for MySqlRows<Q> {
    async fn column_kinds(
        &mut self,
        table: &BusinessTable<'_>,
        columns: &[&str],
    ) -> Result<ColumnKinds, StoreError> {
        column_kinds(&mut self.conn, &self.store, table, columns).await
    }

    fn json_cells(row: &Row, kinds: &ColumnKinds) -> Result<Vec<(String, J)>, StoreError> {
        let cells = row.columns_ref().iter().enumerate().map(|(at, column)| {
            let name = column.name_str().into_owned();
            let value = row.as_ref(at).cloned().unwrap_or(Value::NULL);
            let kind = kind_of(kinds, &name);
            (name, from_mysql(value, kind))
        });
        Ok(cells.collect())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn json_values_map_to_mysql_values_by_column_kind() {
        use ColumnKind::*;
        assert_eq!(to_mysql(&json!("a"), Other), Value::from("a"));
        assert_eq!(to_mysql(&json!(7), Other), Value::Int(7));
        assert_eq!(to_mysql(&json!(u64::MAX), Other), Value::UInt(u64::MAX));
        assert_eq!(to_mysql(&json!(1.5), Other), Value::Double(1.5));
        assert_eq!(to_mysql(&json!(true), Bool), Value::Int(1));
        assert_eq!(to_mysql(&json!(null), Json), Value::NULL);
        assert_eq!(to_mysql(&json!("a"), Json), Value::from("\"a\""));
        assert_eq!(
            to_mysql(&json!({"k": [1]}), Other),
            Value::from("{\"k\":[1]}")
        );
        assert_eq!(
            to_mysql(&json!("2024-05-06T07:08:09.5+02:00"), Timestamp),
            Value::Date(2024, 5, 6, 5, 8, 9, 500_000)
        );
        assert_eq!(
            to_mysql(&json!("2024-05-06"), Date),
            Value::Date(2024, 5, 6, 0, 0, 0, 0)
        );
        assert_eq!(
            to_mysql(&json!("\\x00ff"), Binary),
            Value::Bytes(vec![0, 255])
        );
        assert_eq!(to_mysql(&json!("soon"), DateTime), Value::from("soon"));
    }

    #[test]
    fn mysql_values_read_back_as_json() {
        use ColumnKind::*;
        assert_eq!(from_mysql(Value::Int(1), Bool), json!(true));
        assert_eq!(from_mysql(Value::Int(1), Other), json!(1));
        assert_eq!(from_mysql(Value::from("{\"a\":1}"), Json), json!({"a": 1}));
        assert_eq!(from_mysql(Value::from("12.50"), Decimal), json!(12.5));
        assert_eq!(
            from_mysql(Value::Bytes(vec![0, 255]), Binary),
            json!("\\x00ff")
        );
        assert_eq!(
            from_mysql(Value::Date(2024, 5, 6, 7, 8, 9, 0), Timestamp),
            json!("2024-05-06T07:08:09+00:00")
        );
        assert_eq!(
            from_mysql(Value::Date(2024, 5, 6, 7, 8, 9, 120), DateTime),
            json!("2024-05-06T07:08:09.000120")
        );
        assert_eq!(
            from_mysql(Value::Date(2024, 5, 6, 0, 0, 0, 0), Date),
            json!("2024-05-06")
        );
        assert_eq!(
            from_mysql(Value::Time(false, 1, 2, 3, 4, 0), Other),
            json!("26:03:04")
        );
        assert_eq!(from_mysql(Value::NULL, Json), json!(null));
    }

    #[test]
    fn column_kinds_from_information_schema() {
        use ColumnKind::*;
        assert_eq!(classify("json", "json", false), Json);
        assert_eq!(classify("longtext", "longtext", true), Json);
        assert_eq!(classify("tinyint", "tinyint(1)", false), Bool);
        assert_eq!(classify("tinyint", "tinyint(4)", false), Other);
        assert_eq!(classify("decimal", "decimal(10,2)", false), Decimal);
        assert_eq!(classify("varbinary", "varbinary(8)", false), Binary);
        assert_eq!(classify("varchar", "varchar(8)", false), Other);
    }
}
