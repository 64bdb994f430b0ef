//! Checks a filter tree before any SQL is built: its size, every operator against its
//! field or column, every column against the table's real columns, every value against
//! its type. Pure: what it refuses names the path in the tree (`where.and[1].value`)
//! and what was expected, and reaches no database.

use chrono::{DateTime, Utc};
use xdb_engine::validation::{check_identifier, ValidationError};
use xdb_protocol::{
    priority, ColumnCondition, CountGroupBy, ExecutionField, FieldCondition, FilterNode, FilterOp,
    GroupField, ProcessStatus, MAX_FILTER_DEPTH, MAX_FILTER_NODES, MAX_IN_VALUES,
    MAX_JSON_PATH_KEYS,
};

use super::values::{relative_instant, TypedValue, ValueType};
use crate::TableColumn;

/// Longest key of a JSON path.
const MAX_PATH_KEY_CHARS: usize = 64;
/// Longest execution id, type or state id compared with (the system tables' columns).
const MAX_ID_CHARS: usize = xdb_protocol::limits::ID_CHARS_CEILING;

/// A process type's business table as a query sees it: its name, key and the columns
/// `information_schema` reports (read by the caller, who caches them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryTable {
    /// The table, optionally schema-qualified (`schema.table`).
    pub table_name: String,
    /// The primary-key column, which holds each row's process id.
    pub key_column: String,
    /// The table's columns; none when the table does not exist.
    pub columns: Vec<TableColumn>,
    /// MySQL compares column names without case; PostgreSQL (quoted) with.
    pub names_ignore_case: bool,
}

impl QueryTable {
    /// The column named `name`, as the table spells it.
    pub fn column(&self, name: &str) -> Option<&TableColumn> {
        self.columns.iter().find(|c| {
            if self.names_ignore_case {
                c.name.eq_ignore_ascii_case(name)
            } else {
                c.name == name
            }
        })
    }
}

/// A checked filter tree.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Checked {
    All(Vec<Checked>),
    Any(Vec<Checked>),
    Not(Box<Checked>),
    Test(Condition),
}

impl Checked {
    /// Whether the tree reads the business row (so the statement joins it).
    pub fn reads_row(&self) -> bool {
        match self {
            Checked::All(nodes) | Checked::Any(nodes) => nodes.iter().any(Checked::reads_row),
            Checked::Not(node) => node.reads_row(),
            Checked::Test(condition) => !matches!(condition.subject, Subject::Field(_)),
        }
    }
}

/// One checked comparison.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Condition {
    pub subject: Subject,
    pub test: Test,
}

/// What a condition compares.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Subject {
    Field(ExecutionField),
    /// A business column, as the table spells it.
    Column {
        name: String,
        ty: ValueType,
    },
    /// The JSON value at `keys` of a business column.
    JsonPath {
        name: String,
        keys: Vec<String>,
    },
}

/// How a condition compares; values are typed already.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Test {
    Compare(FilterOp, TypedValue),
    In(Vec<TypedValue>),
    /// `true`: IS NULL.
    Null(bool),
    /// Text that starts with, ends with or contains this text (unescaped).
    Like(TextMatch, String),
}

/// Where the text of a [`Test::Like`] is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextMatch {
    Prefix,
    Suffix,
    Contains,
}

/// What a count groups by, checked.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Group {
    Field(GroupField),
    Column { name: String, ty: ValueType },
}

/// Checks `tree`, found at `at` of the request, against `table` (when the request has
/// one). Relative times (`-1h`) count from `now`, the database's clock.
pub(crate) fn check_filter(
    at: &str,
    tree: &FilterNode,
    table: Option<&QueryTable>,
    now: DateTime<Utc>,
) -> Result<Checked, ValidationError> {
    let mut nodes = 0;
    measure(at, tree, 1, &mut nodes)?;
    check_node(at, tree, table, now)
}

/// Checks what a count groups by.
pub(crate) fn check_group(
    at: &str,
    group: &CountGroupBy,
    table: Option<&QueryTable>,
) -> Result<Group, ValidationError> {
    match group {
        CountGroupBy::Field(field) => Ok(Group::Field(field.field)),
        CountGroupBy::Column(column) => {
            let at = format!("{at}.column");
            let (name, ty) = column_of(&at, &column.column, table)?;
            if !ty.groups() {
                return Err(ValidationError::new(
                    at,
                    format!(
                        "counts cannot group by column '{name}' (a timestamp, floating-point, \
                         JSON or LONGTEXT column); group by an integer, decimal, text, \
                         boolean, date or uuid column"
                    ),
                ));
            }
            Ok(Group::Column { name, ty })
        }
    }
}

/// Refuses a tree deeper than [`MAX_FILTER_DEPTH`] or larger than [`MAX_FILTER_NODES`].
fn measure(
    at: &str,
    node: &FilterNode,
    depth: usize,
    nodes: &mut usize,
) -> Result<(), ValidationError> {
    *nodes += 1;
    if *nodes > MAX_FILTER_NODES {
        return Err(ValidationError::new(
            at,
            format!("the filter has more than {MAX_FILTER_NODES} nodes"),
        ));
    }
    if depth > MAX_FILTER_DEPTH {
        return Err(ValidationError::new(
            at,
            format!("the filter is nested deeper than {MAX_FILTER_DEPTH} levels"),
        ));
    }
    match node {
        FilterNode::And(and) => children(at, "and", &and.and, depth, nodes),
        FilterNode::Or(or) => children(at, "or", &or.or, depth, nodes),
        FilterNode::Not(not) => measure(&format!("{at}.not"), &not.not, depth + 1, nodes),
        FilterNode::Field(_) | FilterNode::Column(_) => Ok(()),
    }
}

fn children(
    at: &str,
    key: &str,
    list: &[FilterNode],
    depth: usize,
    nodes: &mut usize,
) -> Result<(), ValidationError> {
    for (i, child) in list.iter().enumerate() {
        measure(&format!("{at}.{key}[{i}]"), child, depth + 1, nodes)?;
    }
    Ok(())
}

fn check_node(
    at: &str,
    node: &FilterNode,
    table: Option<&QueryTable>,
    now: DateTime<Utc>,
) -> Result<Checked, ValidationError> {
    let list = |key: &str, nodes: &[FilterNode]| -> Result<Vec<Checked>, ValidationError> {
        let checked = nodes.iter().enumerate();
        checked
            .map(|(i, n)| check_node(&format!("{at}.{key}[{i}]"), n, table, now))
            .collect()
    };
    Ok(match node {
        FilterNode::And(and) => Checked::All(list("and", &and.and)?),
        FilterNode::Or(or) => Checked::Any(list("or", &or.or)?),
        FilterNode::Not(not) => Checked::Not(Box::new(check_node(
            &format!("{at}.not"),
            &not.not,
            table,
            now,
        )?)),
        FilterNode::Field(condition) => Checked::Test(check_field(at, condition, now)?),
        FilterNode::Column(condition) => Checked::Test(check_column(at, condition, table)?),
    })
}

/// The type of an execution field, and the operators it takes.
fn field_rules(field: ExecutionField) -> (ValueType, &'static [FilterOp]) {
    use FilterOp::*;
    let text = ValueType::Text { json_text: false };
    match field {
        ExecutionField::Status => (text, &[Eq, Ne, In]),
        ExecutionField::ProcessType | ExecutionField::ProcessId => {
            (text, &[Eq, Ne, In, Prefix, Suffix, Contains])
        }
        ExecutionField::StartTime => (ValueType::Instant, &[Eq, Ne, Lt, Le, Gt, Ge]),
        ExecutionField::CloseTime => (
            ValueType::Instant,
            &[Eq, Ne, Lt, Le, Gt, Ge, IsNull, IsNotNull],
        ),
        ExecutionField::Paused
        | ExecutionField::Parked
        | ExecutionField::BackingOff
        | ExecutionField::WaitingOnTimer => (ValueType::Bool, &[Eq, Ne]),
        ExecutionField::CurrentStateId | ExecutionField::WaitingOnQueue => (text, &[Eq, In]),
        ExecutionField::DeploymentName | ExecutionField::DeploymentVersion => {
            (text, &[Eq, Ne, In, IsNull, IsNotNull])
        }
        ExecutionField::Priority => (
            ValueType::Int { takes_bool: false },
            &[Eq, Ne, Lt, Le, Gt, Ge, In],
        ),
    }
}

fn check_field(
    at: &str,
    condition: &FieldCondition,
    now: DateTime<Utc>,
) -> Result<Condition, ValidationError> {
    let field = condition.field;
    let (ty, ops) = field_rules(field);
    if !ops.contains(&condition.op) {
        return Err(ValidationError::new(
            format!("{at}.op"),
            format!(
                "'{}' does not apply to field '{}' (it takes: {})",
                condition.op.as_str(),
                field.as_str(),
                names(ops)
            ),
        ));
    }
    let read = |at: &str, value: &serde_json::Value| -> Result<TypedValue, ValidationError> {
        let relative = match (ty, value) {
            (ValueType::Instant, serde_json::Value::String(text)) => relative_instant(text, now),
            _ => None,
        };
        let typed = match relative {
            Some(instant) => instant.map(TypedValue::Instant),
            None => TypedValue::read(ty, value),
        }
        .map_err(|e| ValidationError::new(at, format!("field '{}': {e}", field.as_str())))?;
        match (&typed, field) {
            (TypedValue::Text(status), ExecutionField::Status)
                if ProcessStatus::parse(status).is_none() =>
            {
                Err(ValidationError::new(
                    at,
                    format!(
                        "'{status}' is not a status (one of: {})",
                        ProcessStatus::ALL.map(ProcessStatus::as_str).join(", ")
                    ),
                ))
            }
            (TypedValue::Int(priority), ExecutionField::Priority)
                if !(i64::from(priority::HIGHEST)..=i64::from(priority::LOWEST))
                    .contains(priority) =>
            {
                Err(ValidationError::new(
                    at,
                    format!("priority {priority} does not exist (1, claimed first, to 5)"),
                ))
            }
            (TypedValue::Text(text), _) if text.chars().count() > MAX_ID_CHARS => Err(
                ValidationError::new(at, format!("longer than {MAX_ID_CHARS} characters")),
            ),
            _ => Ok(typed),
        }
    };
    let test = test_of(at, condition.op, &condition.value, &condition.values, read)?;
    Ok(Condition {
        subject: Subject::Field(field),
        test,
    })
}

fn check_column(
    at: &str,
    condition: &ColumnCondition,
    table: Option<&QueryTable>,
) -> Result<Condition, ValidationError> {
    let (name, ty) = column_of(&format!("{at}.column"), &condition.column, table)?;
    let op = condition.op;
    let op_at = format!("{at}.op");
    if let Some(path) = &condition.path {
        if !matches!(ty, ValueType::Json | ValueType::Text { json_text: true }) {
            return Err(ValidationError::new(
                format!("{at}.path"),
                format!("column '{name}' is not a JSON column"),
            ));
        }
        let keys = check_path(&format!("{at}.path"), path)?;
        let ops = [
            FilterOp::Eq,
            FilterOp::Ne,
            FilterOp::IsNull,
            FilterOp::IsNotNull,
            FilterOp::Prefix,
            FilterOp::Suffix,
            FilterOp::Contains,
        ];
        if !ops.contains(&op) {
            return Err(ValidationError::new(
                op_at,
                format!(
                    "'{}' does not apply to a JSON path (it takes: {})",
                    op.as_str(),
                    names(&ops)
                ),
            ));
        }
        let text_match = matches!(op, FilterOp::Prefix | FilterOp::Suffix | FilterOp::Contains);
        let read = |at: &str, value: &serde_json::Value| match (text_match, value) {
            (false, _) => Ok(TypedValue::Json(value.clone())),
            (true, serde_json::Value::String(text)) => super::values::text(text)
                .map(TypedValue::Text)
                .map_err(|e| ValidationError::new(at, format!("column '{name}': {e}"))),
            (true, other) => Err(ValidationError::new(
                at,
                format!(
                    "'{}' on a JSON path takes a string, found {}",
                    op.as_str(),
                    super::values::describe(other)
                ),
            )),
        };
        let test = test_of(at, op, &condition.value, &condition.values, read)?;
        return Ok(Condition {
            subject: Subject::JsonPath { name, keys },
            test,
        });
    }
    let applies = match op {
        FilterOp::IsNull | FilterOp::IsNotNull => true,
        _ if ty == ValueType::Json => false,
        FilterOp::Eq | FilterOp::Ne | FilterOp::In => true,
        FilterOp::Lt | FilterOp::Le | FilterOp::Gt | FilterOp::Ge => ty.is_ordered(),
        FilterOp::Prefix | FilterOp::Suffix | FilterOp::Contains => {
            matches!(ty, ValueType::Text { .. })
        }
    };
    if !applies {
        let hint = if ty == ValueType::Json {
            " (compare a JSON column through `path`)"
        } else {
            ""
        };
        return Err(ValidationError::new(
            op_at,
            format!(
                "'{}' does not apply to column '{name}', whose values are {}{hint}",
                op.as_str(),
                ty.expected()
            ),
        ));
    }
    let read = |at: &str, value: &serde_json::Value| {
        TypedValue::read(ty, value)
            .map_err(|e| ValidationError::new(at, format!("column '{name}': {e}")))
    };
    let test = test_of(at, op, &condition.value, &condition.values, read)?;
    Ok(Condition {
        subject: Subject::Column {
            name: name.clone(),
            ty,
        },
        test,
    })
}

/// The column `requested` names in `table`, as the table spells it, and its type.
fn column_of(
    at: &str,
    requested: &str,
    table: Option<&QueryTable>,
) -> Result<(String, ValueType), ValidationError> {
    check_identifier(at, requested)?;
    let Some(table) = table else {
        return Err(ValidationError::new(
            at,
            "a column needs the process type's business table: set processType, and \
             register the type's definition with its globalAttributes or pass businessTable",
        ));
    };
    let column = table.column(requested).ok_or_else(|| {
        ValidationError::new(
            at,
            format!("table '{}' has no column '{requested}'", table.table_name),
        )
    })?;
    let ty = ValueType::of_column(&column.data_type).ok_or_else(|| {
        ValidationError::new(
            at,
            format!(
                "column '{}' is {}, which filters cannot compare",
                column.name, column.data_type
            ),
        )
    })?;
    Ok((column.name.clone(), ty))
}

fn check_path(at: &str, path: &[String]) -> Result<Vec<String>, ValidationError> {
    if path.is_empty() || path.len() > MAX_JSON_PATH_KEYS {
        return Err(ValidationError::new(
            at,
            format!("a JSON path has 1 to {MAX_JSON_PATH_KEYS} keys"),
        ));
    }
    for (i, key) in path.iter().enumerate() {
        let valid = !key.is_empty()
            && key.len() <= MAX_PATH_KEY_CHARS
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !valid {
            return Err(ValidationError::new(
                format!("{at}[{i}]"),
                format!("a JSON path key is 1 to {MAX_PATH_KEY_CHARS} letters, digits, '_' or '-'"),
            ));
        }
    }
    Ok(path.to_vec())
}

/// The test of `op` with its operands, each read by `read`.
fn test_of(
    at: &str,
    op: FilterOp,
    value: &Option<serde_json::Value>,
    values: &Option<Vec<serde_json::Value>>,
    read: impl Fn(&str, &serde_json::Value) -> Result<TypedValue, ValidationError>,
) -> Result<Test, ValidationError> {
    let no = |name: &str, what: &str| {
        ValidationError::new(
            format!("{at}.{name}"),
            format!("'{}' takes {what}", op.as_str()),
        )
    };
    match op {
        FilterOp::IsNull | FilterOp::IsNotNull => {
            if value.is_some() {
                return Err(no("value", "no value"));
            }
            if values.is_some() {
                return Err(no("values", "no values"));
            }
            Ok(Test::Null(op == FilterOp::IsNull))
        }
        FilterOp::In => {
            if value.is_some() {
                return Err(no("value", "`values` (a list), not `value`"));
            }
            let Some(values) = values else {
                return Err(no("values", "`values`: a list of 1 to 100 values"));
            };
            if values.is_empty() || values.len() > MAX_IN_VALUES {
                return Err(ValidationError::new(
                    format!("{at}.values"),
                    format!(
                        "'IN' takes 1 to {MAX_IN_VALUES} values, found {}",
                        values.len()
                    ),
                ));
            }
            let mut typed = Vec::with_capacity(values.len());
            for (i, value) in values.iter().enumerate() {
                let at = format!("{at}.values[{i}]");
                if value.is_null() {
                    return Err(ValidationError::new(
                        at,
                        "null is not a value (use 'IS NULL' to find NULLs)",
                    ));
                }
                typed.push(read(&at, value)?);
            }
            Ok(Test::In(typed))
        }
        _ => {
            if values.is_some() {
                return Err(no("values", "`value`, not `values`"));
            }
            let Some(value) = value else {
                return Err(no("value", "a `value` (use 'IS NULL' to find NULLs)"));
            };
            let typed = read(&format!("{at}.value"), value)?;
            let text_match = match op {
                FilterOp::Prefix => TextMatch::Prefix,
                FilterOp::Suffix => TextMatch::Suffix,
                FilterOp::Contains => TextMatch::Contains,
                _ => return Ok(Test::Compare(op, typed)),
            };
            match typed {
                TypedValue::Text(text) => Ok(Test::Like(text_match, text)),
                _ => Err(no("value", "a string")),
            }
        }
    }
}

fn names(ops: &[FilterOp]) -> String {
    ops.iter()
        .map(|op| op.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;
