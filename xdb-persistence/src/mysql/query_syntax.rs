//! The query statements' pieces on MariaDB and MySQL (see [`QuerySyntax`]): parameters
//! bound as the driver's values (cast where MySQL would otherwise compare as doubles),
//! JSON paths as `$."key"` text, the keyset spelled out (MySQL does not range-scan a row
//! comparison), and the time limit in the statement itself: MariaDB's
//! `SET STATEMENT max_statement_time = … FOR`, MySQL's `MAX_EXECUTION_TIME` hint.

use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::query::{quoted, QuerySyntax, TypedValue, ValueType};

/// MariaDB's [`QuerySyntax`] (10.7 or later: `JSON_EQUALS`).
pub(crate) struct MariaDbSyntax;

/// MySQL 8's [`QuerySyntax`]. No MySQL 8 server runs in this project's tests.
pub(crate) struct MySqlSyntax;

fn placeholder(ty: ValueType) -> &'static str {
    match ty {
        ValueType::Decimal => "CAST(? AS DECIMAL(65, 30))",
        ValueType::Naive => "CAST(? AS DATETIME(6))",
        ValueType::Date => "CAST(? AS DATE)",
        _ => "?",
    }
}

/// The JSON path text of `keys`: `$."a"."b"` (keys are letters, digits, `_`, `-`).
fn json_path(keys: &[String]) -> String {
    let mut path = String::from("$");
    for key in keys {
        path.push_str(&format!(".\"{key}\""));
    }
    path
}

fn json_at(column: &str, keys: &[String]) -> (String, Vec<TypedValue>) {
    (
        format!("JSON_EXTRACT({column}, ?)"),
        vec![TypedValue::Text(json_path(keys))],
    )
}

fn json_text_at(column: &str, keys: &[String]) -> (String, Vec<TypedValue>) {
    let path = TypedValue::Text(json_path(keys));
    (
        format!(
            "(CASE WHEN JSON_TYPE(JSON_EXTRACT({column}, ?)) = 'STRING' \
             THEN JSON_UNQUOTE(JSON_EXTRACT({column}, ?)) END)"
        ),
        vec![path.clone(), path],
    )
}

/// A command's entry in `queuesReceived` is null until its messages came; the queue
/// name is compared byte for byte, as XDB's own columns compare.
fn waits_on_queue(placeholders: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM xdb_sys_async_state_executions s, \
         JSON_TABLE(s.command_request, '$.localQueueCommands[*]' COLUMNS (n FOR ORDINALITY, \
           queue_name VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin \
           PATH '$.queueName')) q \
         WHERE s.process_execution_id = p.id AND s.status = 'WAITING_COMMANDS' \
         AND q.queue_name IN ({placeholders}) \
         AND COALESCE(JSON_TYPE(JSON_EXTRACT(s.command_results, \
           CONCAT('$.queuesReceived[', q.n - 1, ']'))), 'NULL') <> 'ARRAY')"
    )
}

/// The business row's key equal to the process id, written twice, once in each column's
/// collation: MySQL compares two collations of one coercibility only when one side is
/// converted, and a converted column's index cannot serve the lookup. With both forms
/// the optimizer may start from either table: from the executions (the key looked up in
/// the business table's index) or from a selective business condition (the process id
/// looked up in XDB's index). Both are exact binary comparisons but for the key's own
/// collation, so together they mean what the key column's comparison means, narrowed
/// to the exact process id. A key that is not text is compared as binary text.
/// `xdb_collation` is the collation of XDB's own text columns.
fn key_is_process_id(
    key: &str,
    key_is_text: bool,
    collation: Option<(&str, &str)>,
    xdb_collation: &str,
) -> String {
    match (key_is_text, collation) {
        (true, Some((charset, collation))) => format!(
            "{key} = CONVERT(p.process_id USING {charset}) COLLATE {collation} \
             AND CONVERT({key} USING utf8mb4) COLLATE {xdb_collation} = p.process_id"
        ),
        (true, None) => format!("{key} = p.process_id"),
        (false, _) => format!(
            "CAST({key} AS CHAR CHARACTER SET utf8mb4) COLLATE {xdb_collation} = p.process_id"
        ),
    }
}

fn keyset_before(start: DateTime<Utc>, id: Uuid) -> (&'static str, Vec<TypedValue>) {
    (
        "(p.start_time < ? OR (p.start_time = ? AND p.id < ?))",
        vec![
            TypedValue::Instant(start),
            TypedValue::Instant(start),
            TypedValue::Uuid(id),
        ],
    )
}

impl QuerySyntax for MariaDbSyntax {
    fn quote(&self, identifier: &str) -> String {
        quoted('`', identifier)
    }

    fn placeholder(&self, ty: ValueType) -> &'static str {
        placeholder(ty)
    }

    fn json_at(&self, column: &str, keys: &[String]) -> (String, Vec<TypedValue>) {
        json_at(column, keys)
    }

    fn json_equals(&self, left: &str) -> String {
        // `= 1`: MariaDB 10.11 takes a bare JSON_EQUALS that is NULL (a missing path) as
        // true in a WHERE clause; compared, NULL stays unknown.
        format!("JSON_EQUALS({left}, ?) = 1")
    }

    fn json_text_at(&self, column: &str, keys: &[String]) -> (String, Vec<TypedValue>) {
        json_text_at(column, keys)
    }

    fn waits_on_queue(&self, placeholders: &str) -> String {
        waits_on_queue(placeholders)
    }

    fn now(&self) -> &'static str {
        "UTC_TIMESTAMP(6)"
    }

    fn as_text(&self, expr: &str) -> String {
        format!("CAST({expr} AS CHAR)")
    }

    fn as_bigint(&self, expr: &str) -> String {
        format!("CAST({expr} AS SIGNED)")
    }

    fn key_is_process_id(
        &self,
        key: &str,
        key_is_text: bool,
        collation: Option<(&str, &str)>,
    ) -> String {
        key_is_process_id(key, key_is_text, collation, "utf8mb4_nopad_bin")
    }

    fn keyset_before(&self, start: DateTime<Utc>, id: Uuid) -> (&'static str, Vec<TypedValue>) {
        keyset_before(start, id)
    }

    fn explain_prefix(&self) -> &'static str {
        "EXPLAIN FORMAT=JSON "
    }

    fn time_limited(&self, select: String, limit: Duration) -> String {
        // Seconds, to the millisecond: a number of ours, not a client's.
        let seconds = limit.as_millis().max(1) as f64 / 1000.0;
        format!("SET STATEMENT max_statement_time = {seconds:.3} FOR {select}")
    }
}

impl QuerySyntax for MySqlSyntax {
    fn quote(&self, identifier: &str) -> String {
        quoted('`', identifier)
    }

    fn placeholder(&self, ty: ValueType) -> &'static str {
        match ty {
            ValueType::Json => "CAST(? AS JSON)",
            other => placeholder(other),
        }
    }

    fn json_at(&self, column: &str, keys: &[String]) -> (String, Vec<TypedValue>) {
        json_at(column, keys)
    }

    fn json_equals(&self, left: &str) -> String {
        format!("{left} = CAST(? AS JSON)")
    }

    fn json_text_at(&self, column: &str, keys: &[String]) -> (String, Vec<TypedValue>) {
        json_text_at(column, keys)
    }

    fn waits_on_queue(&self, placeholders: &str) -> String {
        waits_on_queue(placeholders)
    }

    fn now(&self) -> &'static str {
        "UTC_TIMESTAMP(6)"
    }

    fn as_text(&self, expr: &str) -> String {
        format!("CAST({expr} AS CHAR)")
    }

    fn as_bigint(&self, expr: &str) -> String {
        format!("CAST({expr} AS SIGNED)")
    }

    fn key_is_process_id(
        &self,
        key: &str,
        key_is_text: bool,
        collation: Option<(&str, &str)>,
    ) -> String {
        key_is_process_id(key, key_is_text, collation, "utf8mb4_0900_bin")
    }

    fn keyset_before(&self, start: DateTime<Utc>, id: Uuid) -> (&'static str, Vec<TypedValue>) {
        keyset_before(start, id)
    }

    fn explain_prefix(&self) -> &'static str {
        "EXPLAIN FORMAT=JSON "
    }

    fn time_limited(&self, select: String, limit: Duration) -> String {
        let millis = limit.as_millis().max(1);
        match select.strip_prefix("SELECT ") {
            Some(rest) => format!("SELECT /*+ MAX_EXECUTION_TIME({millis}) */ {rest}"),
            None => select,
        }
    }
}
