//! [`QuerySyntax`]: what a dialect supplies so that the query statements are rendered
//! once (`render.rs`) — identifier quoting, typed placeholders, JSON paths, the keyset
//! comparison, casts to text, and how a statement is given a time limit. Each dialect
//! implements it beside its other statements (`postgres/query_syntax.rs`,
//! `mysql/query_syntax.rs`); nothing here names a dialect.

use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::render::Statement;
use super::values::{TypedValue, ValueType};

/// The pieces of query SQL that differ between dialects.
pub(crate) trait QuerySyntax: Send + Sync + 'static {
    /// `identifier` (already checked as an identifier) quoted, its quote marks doubled.
    fn quote(&self, identifier: &str) -> String;
    /// How one parameter of `ty` is written, typed to the column's type, e.g.
    /// `CAST(? AS BIGINT)`; it binds [`TypedValue::param`].
    fn placeholder(&self, ty: ValueType) -> &'static str;
    /// The JSON value at `keys` of the JSON column `column` (quoted and qualified), as an
    /// expression, and the parameters it binds in order.
    fn json_at(&self, column: &str, keys: &[String]) -> (String, Vec<TypedValue>);
    /// Whether the JSON expression `left` equals one JSON parameter (unknown when
    /// `left` is NULL).
    fn json_equals(&self, left: &str) -> String;
    /// The JSON string at `keys` of the JSON column `column` as text (NULL when the path
    /// is missing or holds no string), and the parameters it binds in order.
    fn json_text_at(&self, column: &str, keys: &[String]) -> (String, Vec<TypedValue>);
    /// Whether the execution `p` has a state waiting on a local queue named by one of
    /// `placeholders` (text parameters, e.g. `?, ?`): a `WAITING_COMMANDS` state with a
    /// command of its `command_request` on that queue whose entry in `command_results`
    /// is not complete. The queue names live only in that JSON, so this reads it.
    fn waits_on_queue(&self, placeholders: &str) -> String;
    /// The database's clock now, as an instant comparable with XDB's time columns.
    fn now(&self) -> &'static str;
    /// `expr` as text.
    fn as_text(&self, expr: &str) -> String;
    /// The join condition of the business table's key `key` (quoted and qualified) and
    /// the execution's process id: compared as the key's text, in the key column's
    /// `collation` (character set, collation) where the dialect needs it named, so that
    /// the key's index serves the lookup.
    fn key_is_process_id(
        &self,
        key: &str,
        key_is_text: bool,
        collation: Option<(&str, &str)>,
    ) -> String;
    /// `expr`, a sum, as a 64-bit integer.
    fn as_bigint(&self, expr: &str) -> String;
    /// The condition on `p` (the execution) that keeps rows before `(start, id)` in the
    /// list's order (start time, then id, descending), and its parameters.
    fn keyset_before(&self, start: DateTime<Utc>, id: Uuid) -> (&'static str, Vec<TypedValue>);
    /// `select` bounded by `limit`, where the dialect bounds one statement in its text.
    fn time_limited(&self, select: String, limit: Duration) -> String;
    /// What goes before a statement so that it answers its plan as JSON, in one row,
    /// without running.
    fn explain_prefix(&self) -> &'static str;
}

impl dyn QuerySyntax {
    /// `statement`'s plan, asked of the database (`EXPLAIN` without running it).
    pub(crate) fn explain(&self, statement: &Statement) -> Statement {
        Statement {
            sql: format!("{}{}", self.explain_prefix(), statement.sql),
            values: statement.values.clone(),
        }
    }
}

/// `identifier` between `mark`s, with `mark` doubled inside.
pub(crate) fn quoted(mark: char, identifier: &str) -> String {
    let doubled = identifier.replace(mark, &format!("{mark}{mark}"));
    format!("{mark}{doubled}{mark}")
}
