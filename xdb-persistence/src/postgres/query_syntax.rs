//! The query statements' pieces on PostgreSQL (see [`QuerySyntax`]): parameters cast to
//! the column's type (text first where the driver binds no such Rust type), JSON read
//! as `jsonb`, the keyset as a row comparison (which walks the `(start_time, id)`
//! index), and `SET LOCAL statement_timeout` in the query's transaction.

use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::query::{quoted, QuerySyntax, TypedValue, ValueType};

/// PostgreSQL's [`QuerySyntax`].
pub(crate) struct PostgresSyntax;

impl QuerySyntax for PostgresSyntax {
    fn quote(&self, identifier: &str) -> String {
        quoted('"', identifier)
    }

    fn placeholder(&self, ty: ValueType) -> &'static str {
        match ty {
            ValueType::Int { .. } => "CAST(? AS BIGINT)",
            ValueType::Float => "CAST(? AS DOUBLE PRECISION)",
            ValueType::Decimal => "CAST(CAST(? AS TEXT) AS NUMERIC)",
            ValueType::Text { .. } => "CAST(? AS TEXT)",
            ValueType::Bool => "CAST(? AS BOOLEAN)",
            ValueType::Instant => "CAST(? AS TIMESTAMPTZ)",
            ValueType::Naive => "CAST(CAST(? AS TEXT) AS TIMESTAMP)",
            ValueType::Date => "CAST(CAST(? AS TEXT) AS DATE)",
            ValueType::Uuid => "CAST(? AS UUID)",
            ValueType::Json => "CAST(? AS JSONB)",
        }
    }

    fn json_at(&self, column: &str, keys: &[String]) -> (String, Vec<TypedValue>) {
        let keys_sql = vec!["CAST(? AS TEXT)"; keys.len()].join(", ");
        let values = keys.iter().cloned().map(TypedValue::Text).collect();
        (
            format!("jsonb_extract_path(CAST({column} AS JSONB), {keys_sql})"),
            values,
        )
    }

    fn json_equals(&self, left: &str) -> String {
        format!("{left} = CAST(? AS JSONB)")
    }

    fn json_text_at(&self, column: &str, keys: &[String]) -> (String, Vec<TypedValue>) {
        let (value, mut values) = self.json_at(column, keys);
        let (text, again) = self.json_at(column, keys);
        values.extend(again);
        (
            format!("(CASE WHEN jsonb_typeof({value}) = 'string' THEN {text} #>> '{{}}' END)"),
            values,
        )
    }

    fn waits_on_queue(&self, placeholders: &str) -> String {
        // A command's entry in `queuesReceived` is null until its messages came.
        format!(
            "EXISTS (SELECT 1 FROM xdb_sys_async_state_executions s \
             CROSS JOIN LATERAL jsonb_array_elements(s.command_request -> 'localQueueCommands') \
             WITH ORDINALITY AS q(command, n) \
             WHERE s.process_execution_id = p.id AND s.status = 'WAITING_COMMANDS' \
             AND q.command ->> 'queueName' IN ({placeholders}) \
             AND jsonb_typeof(s.command_results -> 'queuesReceived' -> CAST(q.n - 1 AS INT)) \
             IS DISTINCT FROM 'array')"
        )
    }

    fn now(&self) -> &'static str {
        "clock_timestamp()"
    }

    fn as_text(&self, expr: &str) -> String {
        format!("CAST({expr} AS TEXT)")
    }

    fn key_is_process_id(
        &self,
        key: &str,
        key_is_text: bool,
        _collation: Option<(&str, &str)>,
    ) -> String {
        // Deterministic collations compare equal text equal, whatever they are.
        match key_is_text {
            true => format!("{key} = p.process_id"),
            false => format!("CAST({key} AS TEXT) = p.process_id"),
        }
    }

    fn as_bigint(&self, expr: &str) -> String {
        format!("CAST({expr} AS BIGINT)")
    }

    fn keyset_before(&self, start: DateTime<Utc>, id: Uuid) -> (&'static str, Vec<TypedValue>) {
        (
            "(p.start_time, p.id) < (?, ?)",
            vec![TypedValue::Instant(start), TypedValue::Uuid(id)],
        )
    }

    fn explain_prefix(&self) -> &'static str {
        "EXPLAIN (FORMAT JSON) "
    }

    /// The text as it is: the store cancels a statement past its limit
    /// (`Dialect::read_bounded`).
    fn time_limited(&self, select: String, _limit: Duration) -> String {
        select
    }
}
