//! Renders a checked filter to one parameterized statement over any [`QuerySyntax`]:
//! the list page (keyset-paged, newest first, as the plain list pages) and the count
//! (with its groups and their total from the same statement).
//!
//! Only fixed SQL and identifiers that were checked against the table's columns (then
//! quoted) go into the text; every value is a parameter.

use chrono::{DateTime, Utc};
use uuid::Uuid;
use xdb_protocol::{ExecutionField, FilterOp, GroupField};

use super::check::{Checked, Condition, Group, Subject, Test, TextMatch};
use super::syntax::QuerySyntax;
use super::values::{TypedValue, ValueType};

/// State executions that have not finished: a process's running threads.
const OPEN_STATE_STATUSES: &str = "('WAIT_UNTIL_RUNNING', 'WAITING_COMMANDS', 'EXECUTE_RUNNING')";
/// The list's columns, as `process_rows::summary_of` reads them, of the executions
/// aliased `p`. The last says whether a state call of a running execution waits for a
/// retry (due or not), so that only such rows cost the page a look at their tasks.
pub(crate) const SUMMARY_COLUMNS: &str = "p.id, p.process_id, p.process_type, p.status, \
    p.start_time, p.close_time, \
    CASE WHEN p.status = 'RUNNING' AND p.paused IS NOT NULL THEN \
      CASE WHEN EXISTS (SELECT 1 FROM xdb_sys_run_slots r \
        WHERE r.process_execution_id = p.id AND r.admitted = 0) THEN 2 ELSE 1 END \
    ELSE 0 END, \
    CASE WHEN p.status = 'RUNNING' AND EXISTS (SELECT 1 FROM xdb_sys_tasks t \
      WHERE t.process_execution_id = p.id AND t.task_type IN ('WAIT_UNTIL', 'EXECUTE') \
        AND t.attempt > 1 AND t.lease_owner IS NULL) THEN 1 ELSE 0 END, \
    p.priority";
/// Whether an execution is paused: by an operator, while running.
const PAUSED: &str = "(p.status = 'RUNNING' AND p.paused IS NOT NULL)";
/// Whether an execution has a task set aside for an operator (not held by a pause).
const PARKED: &str = "EXISTS (SELECT 1 FROM xdb_sys_parked_tasks k \
    WHERE k.process_execution_id = p.id AND k.reason <> 'PAUSED')";
/// Whether an execution has a timer that has not fired: its task waits in the task
/// table, or set aside (by a pause, or parked).
const WAITING_ON_TIMER: &str = "(EXISTS (SELECT 1 FROM xdb_sys_tasks t \
    WHERE t.process_execution_id = p.id AND t.task_type = 'TIMER') \
    OR EXISTS (SELECT 1 FROM xdb_sys_parked_tasks k \
    WHERE k.process_execution_id = p.id AND k.task_type = 'TIMER'))";
/// The registration an execution runs on: the newest of its type at its worker URL.
const DEPLOYMENT_OF: &str = "FROM xdb_sys_process_definitions d \
    WHERE d.process_type = p.process_type AND d.worker_url = p.worker_url \
    ORDER BY d.revision DESC LIMIT 1";

/// The business table a statement joins (as `b`): its name's parts and key column, as
/// the table spells them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Join {
    pub table: Vec<String>,
    pub key: String,
    /// Whether the key is text, compared with the process id as it is (else as text).
    pub key_is_text: bool,
    /// The key column's character set and collation, checked as identifiers (MySQL).
    pub key_collation: Option<(String, String)>,
}

/// A statement and the values it binds, in order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Statement {
    pub sql: String,
    pub values: Vec<TypedValue>,
}

/// The page of executions `filter` matches before `after`, newest first; `limit` rows.
pub(crate) fn list(
    syntax: &dyn QuerySyntax,
    filter: &Checked,
    join: Option<&Join>,
    after: Option<(DateTime<Utc>, Uuid)>,
    limit: i64,
) -> Statement {
    let mut out = Renderer::new(syntax);
    out.sql = format!("SELECT {SUMMARY_COLUMNS} ");
    out.push_tables(join);
    out.sql.push_str(" WHERE ");
    out.node(filter);
    if let Some((start, id)) = after {
        let (condition, values) = syntax.keyset_before(start, id);
        out.sql.push_str(" AND ");
        out.sql.push_str(condition);
        out.values.extend(values);
    }
    out.sql
        .push_str(" ORDER BY p.start_time DESC, p.id DESC LIMIT ?");
    out.values.push(TypedValue::Int(limit));
    out.finish()
}

/// How many executions `filter` matches: one row `(count)`; or with `group`, a row
/// `(value as text, count, total)` per group, the largest first, at most `limit`.
pub(crate) fn count(
    syntax: &dyn QuerySyntax,
    filter: &Checked,
    join: Option<&Join>,
    group: Option<&Group>,
    limit: i64,
) -> Statement {
    let mut out = Renderer::new(syntax);
    let key = group.map(|group| match group {
        Group::Field(GroupField::Status) => "p.status".to_string(),
        Group::Field(GroupField::ProcessType) => "p.process_type".to_string(),
        Group::Field(GroupField::Priority) => "p.priority".to_string(),
        Group::Field(GroupField::CurrentStateId) => format!(
            "(SELECT MIN(s.state_id) FROM xdb_sys_async_state_executions s \
             WHERE s.process_execution_id = p.id AND s.status IN {OPEN_STATE_STATUSES})"
        ),
        Group::Column { name, .. } => format!("b.{}", syntax.quote(name)),
    });
    out.sql = match &key {
        None => "SELECT COUNT(*) ".to_string(),
        Some(key) => format!(
            "SELECT {}, COUNT(*), {} ",
            syntax.as_text(key),
            syntax.as_bigint("SUM(COUNT(*)) OVER ()")
        ),
    };
    out.push_tables(join);
    out.sql.push_str(" WHERE ");
    out.node(filter);
    if let Some(key) = key {
        out.sql
            .push_str(&format!(" GROUP BY {key} ORDER BY 2 DESC, 1 LIMIT ?"));
        out.values.push(TypedValue::Int(limit));
    }
    out.finish()
}

struct Renderer<'s> {
    syntax: &'s dyn QuerySyntax,
    sql: String,
    values: Vec<TypedValue>,
}

impl<'s> Renderer<'s> {
    fn new(syntax: &'s dyn QuerySyntax) -> Self {
        Self {
            syntax,
            sql: String::new(),
            values: Vec::new(),
        }
    }

    fn finish(self) -> Statement {
        Statement {
            sql: self.sql,
            values: self.values,
        }
    }

    fn push_tables(&mut self, join: Option<&Join>) {
        self.sql.push_str("FROM xdb_sys_process_executions p");
        let Some(join) = join else {
            return;
        };
        let table: Vec<String> = join.table.iter().map(|p| self.syntax.quote(p)).collect();
        let key = format!("b.{}", self.syntax.quote(&join.key));
        let collation = join
            .key_collation
            .as_ref()
            .map(|(charset, collation)| (charset.as_str(), collation.as_str()));
        let on = self
            .syntax
            .key_is_process_id(&key, join.key_is_text, collation);
        self.sql
            .push_str(&format!(" JOIN {} b ON {on}", table.join(".")));
    }

    fn node(&mut self, node: &Checked) {
        match node {
            Checked::All(nodes) => self.list(nodes, " AND ", "1 = 1"),
            Checked::Any(nodes) => self.list(nodes, " OR ", "1 = 0"),
            Checked::Not(node) => {
                self.sql.push_str("NOT (");
                self.node(node);
                self.sql.push(')');
            }
            Checked::Test(condition) => self.condition(condition),
        }
    }

    fn list(&mut self, nodes: &[Checked], separator: &str, empty: &str) {
        if nodes.is_empty() {
            self.sql.push_str(empty);
            return;
        }
        self.sql.push('(');
        for (i, node) in nodes.iter().enumerate() {
            if i > 0 {
                self.sql.push_str(separator);
            }
            self.node(node);
        }
        self.sql.push(')');
    }

    fn condition(&mut self, condition: &Condition) {
        let expression = match &condition.subject {
            Subject::Field(ExecutionField::Paused) => {
                return self.flag(PAUSED, &condition.test);
            }
            Subject::Field(ExecutionField::Parked) => {
                return self.flag(PARKED, &condition.test);
            }
            Subject::Field(ExecutionField::BackingOff) => {
                let backing_off = format!(
                    "EXISTS (SELECT 1 FROM xdb_sys_tasks t \
                     WHERE t.process_execution_id = p.id \
                     AND t.task_type IN ('WAIT_UNTIL', 'EXECUTE') AND t.attempt > 1 \
                     AND t.lease_owner IS NULL AND t.fire_at > {})",
                    self.syntax.now()
                );
                return self.flag(&backing_off, &condition.test);
            }
            Subject::Field(ExecutionField::WaitingOnTimer) => {
                return self.flag(WAITING_ON_TIMER, &condition.test);
            }
            Subject::Field(ExecutionField::CurrentStateId) => {
                return self.current_state(&condition.test)
            }
            Subject::Field(ExecutionField::WaitingOnQueue) => {
                return self.waiting_on_queue(&condition.test)
            }
            Subject::Field(ExecutionField::DeploymentName) => {
                format!("(SELECT d.deployment_name {DEPLOYMENT_OF})")
            }
            Subject::Field(ExecutionField::DeploymentVersion) => {
                format!("(SELECT d.deployment_version {DEPLOYMENT_OF})")
            }
            Subject::Field(field) => field_column(*field).to_string(),
            Subject::Column { name, .. } => format!("b.{}", self.syntax.quote(name)),
            Subject::JsonPath { name, keys } => {
                let column = format!("b.{}", self.syntax.quote(name));
                let (expression, values) = match &condition.test {
                    Test::Like(..) => self.syntax.json_text_at(&column, keys),
                    _ => self.syntax.json_at(&column, keys),
                };
                self.values.extend(values);
                if let Test::Compare(op, value) = &condition.test {
                    let equals = self.syntax.json_equals(&expression);
                    match op {
                        FilterOp::Ne => self.sql.push_str(&format!("NOT ({equals})")),
                        _ => self.sql.push_str(&equals),
                    }
                    self.values.push(value.clone());
                    return;
                }
                expression
            }
        };
        self.test(&expression, &condition.test);
    }

    fn test(&mut self, expression: &str, test: &Test) {
        match test {
            Test::Compare(op, value) => {
                let placeholder = self.syntax.placeholder(value.value_type());
                let op = sql_operator(*op);
                self.sql
                    .push_str(&format!("{expression} {op} {placeholder}"));
                self.values.push(value.clone());
            }
            Test::In(values) => {
                let placeholders: Vec<&str> = values
                    .iter()
                    .map(|v| self.syntax.placeholder(v.value_type()))
                    .collect();
                self.sql
                    .push_str(&format!("{expression} IN ({})", placeholders.join(", ")));
                self.values.extend(values.iter().cloned());
            }
            Test::Null(true) => self.sql.push_str(&format!("{expression} IS NULL")),
            Test::Null(false) => self.sql.push_str(&format!("{expression} IS NOT NULL")),
            Test::Like(kind, text) => {
                let placeholder = self
                    .syntax
                    .placeholder(ValueType::Text { json_text: false });
                self.sql
                    .push_str(&format!("{expression} LIKE {placeholder} ESCAPE '!'"));
                self.values
                    .push(TypedValue::Text(like_pattern(*kind, text)));
            }
        }
    }

    /// A boolean field, true when `condition` holds: true or false, never unknown
    /// (`condition` is never NULL).
    fn flag(&mut self, condition: &str, test: &Test) {
        let wanted = match test {
            Test::Compare(FilterOp::Eq, TypedValue::Bool(b)) => *b,
            Test::Compare(FilterOp::Ne, TypedValue::Bool(b)) => !*b,
            other => unreachable!("checked: a flag takes = and != a boolean, not {other:?}"),
        };
        let not = if wanted { "" } else { "NOT " };
        self.sql.push_str(&format!("{not}{condition}"));
    }

    /// Whether a state of the execution waits on one of the queues.
    fn waiting_on_queue(&mut self, test: &Test) {
        let queues: Vec<TypedValue> = match test {
            Test::Compare(FilterOp::Eq, queue) => vec![queue.clone()],
            Test::In(queues) => queues.clone(),
            other => unreachable!("checked: waitingOnQueue takes = and IN, not {other:?}"),
        };
        let placeholder = self
            .syntax
            .placeholder(ValueType::Text { json_text: false });
        let placeholders = vec![placeholder; queues.len()].join(", ");
        self.sql
            .push_str(&self.syntax.waits_on_queue(&placeholders));
        self.values.extend(queues);
    }

    /// Whether the execution has an unfinished state execution of one of the states.
    fn current_state(&mut self, test: &Test) {
        let states: Vec<TypedValue> = match test {
            Test::Compare(FilterOp::Eq, state) => vec![state.clone()],
            Test::In(states) => states.clone(),
            other => unreachable!("checked: currentStateId takes = and IN, not {other:?}"),
        };
        let placeholder = self
            .syntax
            .placeholder(ValueType::Text { json_text: false });
        let placeholders = vec![placeholder; states.len()].join(", ");
        self.sql.push_str(&format!(
            "EXISTS (SELECT 1 FROM xdb_sys_async_state_executions s \
             WHERE s.process_execution_id = p.id AND s.status IN {OPEN_STATE_STATUSES} \
             AND s.state_id IN ({placeholders}))"
        ));
        self.values.extend(states);
    }
}

fn field_column(field: ExecutionField) -> &'static str {
    match field {
        ExecutionField::Status => "p.status",
        ExecutionField::ProcessType => "p.process_type",
        ExecutionField::ProcessId => "p.process_id",
        ExecutionField::StartTime => "p.start_time",
        ExecutionField::CloseTime => "p.close_time",
        ExecutionField::Priority => "p.priority",
        ExecutionField::Paused
        | ExecutionField::CurrentStateId
        | ExecutionField::Parked
        | ExecutionField::BackingOff
        | ExecutionField::WaitingOnTimer
        | ExecutionField::WaitingOnQueue
        | ExecutionField::DeploymentName
        | ExecutionField::DeploymentVersion => {
            unreachable!("rendered as their own conditions")
        }
    }
}

fn sql_operator(op: FilterOp) -> &'static str {
    match op {
        FilterOp::Eq => "=",
        FilterOp::Ne => "<>",
        FilterOp::Lt => "<",
        FilterOp::Le => "<=",
        FilterOp::Gt => ">",
        FilterOp::Ge => ">=",
        other => unreachable!("checked: {} is not a comparison", other.as_str()),
    }
}

/// A `LIKE` pattern matching text that starts with, ends with or contains `text`,
/// escaped with `!` (a character neither dialect's string literals treat specially).
pub(crate) fn like_pattern(kind: TextMatch, text: &str) -> String {
    let mut pattern = String::with_capacity(text.len() + 2);
    if kind != TextMatch::Prefix {
        pattern.push('%');
    }
    for c in text.chars() {
        if matches!(c, '!' | '%' | '_') {
            pattern.push('!');
        }
        pattern.push(c);
    }
    if kind != TextMatch::Suffix {
        pattern.push('%');
    }
    pattern
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;
