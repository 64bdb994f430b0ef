//! The types a filter compares, and the checked values it binds.
//!
//! A business column's type comes from what `information_schema` reports for it
//! ([`ValueType::of_column`], one table of names for both dialects: their names do not
//! collide). A filter value is read into a [`TypedValue`] of that type, or refused with
//! what was expected; it is only ever bound as a parameter, never spliced into SQL.

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use crate::sql::Param;

/// Longest text value a filter may compare with, in characters.
pub const MAX_TEXT_VALUE_CHARS: usize = 4096;

/// How a column's (or an execution field's) values compare and bind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    /// Integer columns (MySQL's `TINYINT`, its BOOLEAN, also takes `true`/`false`).
    Int {
        takes_bool: bool,
    },
    /// Floating-point columns.
    Float,
    /// Exact numerics (`NUMERIC`, `DECIMAL`), bound as their text.
    Decimal,
    /// Character columns; MariaDB's JSON is `LONGTEXT`, so `json_text` says whether a
    /// JSON path may be read from it too.
    Text {
        json_text: bool,
    },
    Bool,
    /// An instant: PostgreSQL's `timestamptz`, MySQL's `TIMESTAMP` (sessions run in UTC).
    Instant,
    /// A time without zone (`timestamp`, `DATETIME`), compared as UTC.
    Naive,
    Date,
    Uuid,
    /// `json`, `jsonb`: compared through a JSON path only.
    Json,
}

impl ValueType {
    /// The type of a column `information_schema` reports as `data_type`, or `None`
    /// when filters cannot compare it (arrays, enums, binary, geometry…).
    pub fn of_column(data_type: &str) -> Option<Self> {
        let t = data_type.to_ascii_lowercase();
        Some(match t.as_str() {
            "tinyint" => ValueType::Int { takes_bool: true },
            "smallint" | "integer" | "int" | "bigint" | "mediumint" => {
                ValueType::Int { takes_bool: false }
            }
            "real" | "double precision" | "float" | "double" => ValueType::Float,
            "numeric" | "decimal" => ValueType::Decimal,
            "longtext" => ValueType::Text { json_text: true },
            "text" | "character varying" | "character" | "varchar" | "char" | "tinytext"
            | "mediumtext" => ValueType::Text { json_text: false },
            "boolean" => ValueType::Bool,
            "timestamp with time zone" | "timestamp" => ValueType::Instant,
            "timestamp without time zone" | "datetime" => ValueType::Naive,
            "date" => ValueType::Date,
            "uuid" => ValueType::Uuid,
            "json" | "jsonb" => ValueType::Json,
            _ => return None,
        })
    }

    /// What a value of this type is, for messages.
    pub fn expected(self) -> &'static str {
        match self {
            ValueType::Int { takes_bool: false } => "an integer",
            ValueType::Int { takes_bool: true } => "an integer or a boolean",
            ValueType::Float => "a number",
            ValueType::Decimal => "a number (or its decimal text)",
            ValueType::Text { .. } => "a string",
            ValueType::Bool => "a boolean",
            ValueType::Instant | ValueType::Naive => {
                "RFC 3339 text (e.g. 2026-01-31T12:00:00Z) or milliseconds since the epoch"
            }
            ValueType::Date => "a date as YYYY-MM-DD",
            ValueType::Uuid => "a UUID string",
            ValueType::Json => "any JSON value",
        }
    }

    /// Whether `<`, `<=`, `>`, `>=` order values of this type.
    pub fn is_ordered(self) -> bool {
        !matches!(self, ValueType::Bool | ValueType::Uuid | ValueType::Json)
    }

    /// Whether a count may group by columns of this type (not JSON, which MariaDB keeps
    /// as `LONGTEXT`; not times or floats, whose groups would be one row each).
    pub fn groups(self) -> bool {
        !matches!(
            self,
            ValueType::Json
                | ValueType::Text { json_text: true }
                | ValueType::Instant
                | ValueType::Naive
                | ValueType::Float
        )
    }
}

/// A filter value checked against its type, owned until it is bound.
#[derive(Debug, Clone, PartialEq)]
pub enum TypedValue {
    Int(i64),
    Float(f64),
    /// Decimal text, e.g. `-12.50`.
    Decimal(String),
    Text(String),
    Bool(bool),
    Instant(DateTime<Utc>),
    /// UTC wall-clock time as `YYYY-MM-DD HH:MM:SS.ffffff`.
    Naive(String),
    /// `YYYY-MM-DD`.
    Date(String),
    Uuid(Uuid),
    Json(Value),
}

impl TypedValue {
    /// `value` as a value of `ty`, or what was expected.
    pub fn read(ty: ValueType, value: &Value) -> Result<Self, String> {
        let refused = || format!("expected {}, found {}", ty.expected(), describe(value));
        match ty {
            ValueType::Int { takes_bool } => match value {
                Value::Bool(b) if takes_bool => Ok(TypedValue::Int(i64::from(*b))),
                _ => value.as_i64().map(TypedValue::Int).ok_or_else(refused),
            },
            ValueType::Float => value
                .as_f64()
                .filter(|f| f.is_finite())
                .map(TypedValue::Float)
                .ok_or_else(refused),
            ValueType::Decimal => match value {
                Value::Number(n) => Ok(TypedValue::Decimal(n.to_string())),
                Value::String(s) if is_decimal_text(s) => Ok(TypedValue::Decimal(s.clone())),
                _ => Err(refused()),
            },
            ValueType::Text { .. } => match value {
                Value::String(s) => text(s).map(TypedValue::Text),
                _ => Err(refused()),
            },
            ValueType::Bool => value.as_bool().map(TypedValue::Bool).ok_or_else(refused),
            ValueType::Instant => instant(value).map(TypedValue::Instant).ok_or_else(refused),
            ValueType::Naive => instant(value)
                .map(|t| {
                    TypedValue::Naive(t.naive_utc().format("%Y-%m-%d %H:%M:%S%.6f").to_string())
                })
                .ok_or_else(refused),
            ValueType::Date => value
                .as_str()
                .and_then(|s| NaiveDate::parse_from_str(s, "%Y-%m-%d").ok())
                .map(|d| TypedValue::Date(d.format("%Y-%m-%d").to_string()))
                .ok_or_else(refused),
            ValueType::Uuid => value
                .as_str()
                .and_then(|s| Uuid::parse_str(s).ok())
                .map(TypedValue::Uuid)
                .ok_or_else(refused),
            ValueType::Json => Ok(TypedValue::Json(value.clone())),
        }
    }

    /// The statement parameter.
    pub(crate) fn param(&self) -> Param<'_> {
        match self {
            TypedValue::Int(v) => Param::BigInt(Some(*v)),
            TypedValue::Float(v) => Param::Double(Some(*v)),
            TypedValue::Decimal(s)
            | TypedValue::Text(s)
            | TypedValue::Naive(s)
            | TypedValue::Date(s) => Param::Text(Some(s)),
            TypedValue::Bool(b) => Param::Bool(Some(*b)),
            TypedValue::Instant(t) => Param::Time(Some(*t)),
            TypedValue::Uuid(id) => Param::Uuid(*id),
            TypedValue::Json(v) => Param::JsonRef(Some(v)),
        }
    }

    /// The type this value binds as.
    pub fn value_type(&self) -> ValueType {
        match self {
            TypedValue::Int(_) => ValueType::Int { takes_bool: false },
            TypedValue::Float(_) => ValueType::Float,
            TypedValue::Decimal(_) => ValueType::Decimal,
            TypedValue::Text(_) => ValueType::Text { json_text: false },
            TypedValue::Bool(_) => ValueType::Bool,
            TypedValue::Instant(_) => ValueType::Instant,
            TypedValue::Naive(_) => ValueType::Naive,
            TypedValue::Date(_) => ValueType::Date,
            TypedValue::Uuid(_) => ValueType::Uuid,
            TypedValue::Json(_) => ValueType::Json,
        }
    }
}

/// Text a filter may compare with: bounded, no NUL (which neither database stores).
pub(crate) fn text(s: &str) -> Result<String, String> {
    if s.chars().count() > MAX_TEXT_VALUE_CHARS {
        return Err(format!(
            "text longer than {MAX_TEXT_VALUE_CHARS} characters"
        ));
    }
    if s.contains('\0') {
        return Err("text must not contain U+0000".into());
    }
    Ok(s.to_string())
}

/// An instant from RFC 3339 text (UTC when it names no offset) or epoch milliseconds.
pub(crate) fn instant(value: &Value) -> Option<DateTime<Utc>> {
    match value {
        Value::Number(n) => n.as_i64().and_then(DateTime::from_timestamp_millis),
        Value::String(s) => DateTime::parse_from_rfc3339(s)
            .map(|t| t.with_timezone(&Utc))
            .ok()
            .or_else(|| {
                ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
                    .iter()
                    .find_map(|f| NaiveDateTime::parse_from_str(s, f).ok())
                    .map(|t| t.and_utc())
            }),
        _ => None,
    }
}

/// Longest duration from now a filter takes, in days (about a century).
const MAX_RELATIVE_DAYS: i64 = 36_600;

/// An instant `text` names relative to `now`: a sign, a whole number and a unit (`s`,
/// `m`, `h`, `d`), e.g. `-1h` an hour before `now`. `None` when `text` does not start
/// with a sign (it is no relative time); `Some(Err)` says what is wrong with one.
pub(crate) fn relative_instant(
    text: &str,
    now: DateTime<Utc>,
) -> Option<Result<DateTime<Utc>, String>> {
    let (sign, rest) = match text.as_bytes().first() {
        Some(b'-') => (-1, &text[1..]),
        Some(b'+') => (1, &text[1..]),
        _ => return None,
    };
    let refused = || {
        format!(
            "'{}' is not a duration from now (a sign, a whole number and a unit s, m, h or d, \
             e.g. -1h, -30m, -2d)",
            text.chars().take(32).collect::<String>()
        )
    };
    let unit = rest.chars().last().filter(char::is_ascii_alphabetic);
    let seconds = match unit {
        Some('s') => 1,
        Some('m') => 60,
        Some('h') => 3_600,
        Some('d') => 86_400,
        _ => return Some(Err(refused())),
    };
    let digits = &rest[..rest.len() - 1];
    if digits.is_empty() || digits.len() > 12 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Some(Err(refused()));
    }
    let amount: i64 = digits.parse().expect("at most 12 digits");
    let total = amount * seconds;
    if total > MAX_RELATIVE_DAYS * 86_400 {
        return Some(Err(format!(
            "'{text}' is further from now than {MAX_RELATIVE_DAYS} days"
        )));
    }
    Some(Ok(now + chrono::TimeDelta::seconds(sign * total)))
}

fn is_decimal_text(s: &str) -> bool {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    !whole.is_empty()
        && whole.len() <= 65
        && fraction.len() <= 30
        && whole.bytes().all(|b| b.is_ascii_digit())
        && fraction.bytes().all(|b| b.is_ascii_digit())
}

/// What a JSON value is, for messages (never the value itself, which may be large).
pub fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a fractional number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn columns_are_typed_from_both_dialects_names() {
        assert_eq!(
            ValueType::of_column("integer"),
            Some(ValueType::Int { takes_bool: false })
        );
        assert_eq!(
            ValueType::of_column("TINYINT"),
            Some(ValueType::Int { takes_bool: true })
        );
        assert_eq!(
            ValueType::of_column("timestamp with time zone"),
            Some(ValueType::Instant)
        );
        assert_eq!(ValueType::of_column("datetime"), Some(ValueType::Naive));
        assert_eq!(
            ValueType::of_column("longtext"),
            Some(ValueType::Text { json_text: true })
        );
        assert_eq!(ValueType::of_column("jsonb"), Some(ValueType::Json));
        assert_eq!(ValueType::of_column("bytea"), None);
        assert_eq!(ValueType::of_column("USER-DEFINED"), None);
    }

    #[test]
    fn values_are_checked_against_the_type() {
        let int = ValueType::Int { takes_bool: false };
        assert_eq!(TypedValue::read(int, &json!(5)), Ok(TypedValue::Int(5)));
        let refused = TypedValue::read(int, &json!("5")).unwrap_err();
        assert_eq!(refused, "expected an integer, found a string");
        assert!(TypedValue::read(int, &json!(1.5)).is_err());
        assert!(TypedValue::read(int, &json!(true)).is_err());
        let tiny = ValueType::Int { takes_bool: true };
        assert_eq!(TypedValue::read(tiny, &json!(true)), Ok(TypedValue::Int(1)));
        assert_eq!(
            TypedValue::read(ValueType::Decimal, &json!("-12.50")),
            Ok(TypedValue::Decimal("-12.50".into()))
        );
        assert!(TypedValue::read(ValueType::Decimal, &json!("1; DROP")).is_err());
        assert!(TypedValue::read(ValueType::Bool, &json!(1)).is_err());
        assert!(TypedValue::read(ValueType::Uuid, &json!("nope")).is_err());
        assert!(TypedValue::read(ValueType::Date, &json!("2026-02-30")).is_err());
        let long = "x".repeat(MAX_TEXT_VALUE_CHARS + 1);
        let text = ValueType::Text { json_text: false };
        assert!(TypedValue::read(text, &json!(long)).is_err());
        assert!(TypedValue::read(text, &json!("a\u{0}b")).is_err());
    }

    #[test]
    fn times_read_from_text_or_millis() {
        let at = DateTime::from_timestamp_millis(1_767_225_600_000).unwrap();
        for value in [
            json!(1_767_225_600_000_i64),
            json!("2026-01-01T00:00:00Z"),
            json!("2026-01-01T01:00:00+01:00"),
            json!("2026-01-01T00:00:00"),
        ] {
            assert_eq!(
                TypedValue::read(ValueType::Instant, &value),
                Ok(TypedValue::Instant(at)),
                "{value}"
            );
        }
        assert_eq!(
            TypedValue::read(ValueType::Naive, &json!("2026-01-01T01:00:00+01:00")),
            Ok(TypedValue::Naive("2026-01-01 00:00:00.000000".into()))
        );
        assert!(TypedValue::read(ValueType::Instant, &json!("yesterday")).is_err());
    }

    #[test]
    fn relative_times_count_from_now() {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let at = |text: &str| relative_instant(text, now);
        assert_eq!(at("-1h"), Some(Ok(now - chrono::TimeDelta::hours(1))));
        assert_eq!(at("-30m"), Some(Ok(now - chrono::TimeDelta::minutes(30))));
        assert_eq!(at("+2d"), Some(Ok(now + chrono::TimeDelta::days(2))));
        assert_eq!(at("-0s"), Some(Ok(now)));
        assert_eq!(at("2026-01-01T00:00:00Z"), None);
        assert_eq!(at(""), None);
        for bad in [
            "-",
            "-h",
            "-1",
            "-1w",
            "-1.5h",
            "- 1h",
            "-1hh",
            "-99999999999999d",
            "+é",
        ] {
            assert!(matches!(at(bad), Some(Err(_))), "{bad}");
        }
        let error = at("-40000d").unwrap().unwrap_err();
        assert!(error.contains("further from now"), "{error}");
    }
}
