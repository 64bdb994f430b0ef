//! The query API: a filter tree over executions and their business rows, for `list` and
//! `count`.
//!
//! A filter is JSON data, never SQL text: the service checks every column name against
//! the table's real columns and every value against the column's type, then renders the
//! tree to a parameterized statement. What a filter may hold is bounded
//! ([`MAX_FILTER_DEPTH`], [`MAX_FILTER_NODES`], [`MAX_IN_VALUES`]).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Deepest filter tree accepted (the root is depth 1).
pub const MAX_FILTER_DEPTH: usize = 8;
/// Most nodes (groups, negations and conditions) a filter tree may hold.
pub const MAX_FILTER_NODES: usize = 100;
/// Most values of one `IN` condition.
pub const MAX_IN_VALUES: usize = 100;
/// Most keys of a JSON path.
pub const MAX_JSON_PATH_KEYS: usize = 8;
/// Most groups a count answers; more set `truncated`.
pub const MAX_COUNT_GROUPS: usize = 1000;

/// A node of a filter tree: a group (`and`, `or`), a negation (`not`), a condition on
/// an execution field (`field`) or a condition on a column of the business row
/// (`column`). Conditions compare with SQL's three-valued logic: a condition on a NULL
/// column is unknown, `not` of unknown is unknown, and only rows where the whole tree is
/// true match; use `IS NULL` to find NULLs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
#[schema(example = json!({"and": [
    {"field": "status", "op": "=", "value": "RUNNING"},
    {"column": "amount", "op": ">=", "value": 100},
    {"not": {"column": "tier", "op": "IN", "values": ["gold", "silver"]}}
]}))]
pub enum FilterNode {
    And(FilterAnd),
    Or(FilterOr),
    Not(FilterNot),
    Field(FieldCondition),
    Column(ColumnCondition),
}

/// Every node must match (an empty list matches everything).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(no_recursion)]
pub struct FilterAnd {
    #[schema(max_items = 100)]
    pub and: Vec<FilterNode>,
}

/// At least one node must match (an empty list matches nothing).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(no_recursion)]
pub struct FilterOr {
    #[schema(max_items = 100)]
    pub or: Vec<FilterNode>,
}

/// The node must not match (unknown stays unknown).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(no_recursion)]
pub struct FilterNot {
    pub not: Box<FilterNode>,
}

/// A field of the execution itself.
/// - `status`: a `ProcessStatus` name; `=`, `!=`, `IN`.
/// - `processType`, `processId`: text; `=`, `!=`, `IN`, `PREFIX`, `SUFFIX`, `CONTAINS`.
/// - `startTime`, `closeTime`: milliseconds since the epoch, RFC 3339 text, or a
///   duration from now on the database's clock (`-1h`, `-30m`, `-2d`, `+10s`; negative
///   is in the past); `=`, `!=`, `<`, `<=`, `>`, `>=`; `closeTime` also `IS NULL`,
///   `IS NOT NULL`.
/// - `paused`: a boolean; `=`, `!=` (paused means paused by an operator and running).
/// - `currentStateId`: a state id; `=`, `IN`: the execution has an unfinished state
///   execution of that state (one of its running threads).
/// - `parked`: a boolean; `=`, `!=`: the execution has a task set aside for an operator
///   (its transition refused by the database, or a non-retryable worker error; not a
///   pause).
/// - `backingOff`: a boolean; `=`, `!=`: a state call of the execution failed and waits
///   for its next attempt, due later by the database's clock.
/// - `waitingOnTimer`: a boolean; `=`, `!=`: the execution has a durable timer that has
///   not fired.
/// - `waitingOnQueue`: a local queue name; `=`, `IN`: a state of the execution waits for
///   messages of that queue (its command on the queue is not complete).
/// - `deploymentName`, `deploymentVersion`: text; `=`, `!=`, `IN`, `IS NULL`,
///   `IS NOT NULL`: the registered deployment the execution runs on (the newest
///   registration of its type at its worker URL); NULL when none registered that URL.
/// - `priority`: 1 to 5 (`processStartConfig.priority`); `=`, `!=`, `<`, `<=`, `>`,
///   `>=`, `IN`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum ExecutionField {
    Status,
    ProcessType,
    ProcessId,
    StartTime,
    CloseTime,
    Paused,
    CurrentStateId,
    Parked,
    BackingOff,
    WaitingOnTimer,
    WaitingOnQueue,
    DeploymentName,
    DeploymentVersion,
    Priority,
}

impl ExecutionField {
    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionField::Status => "status",
            ExecutionField::ProcessType => "processType",
            ExecutionField::ProcessId => "processId",
            ExecutionField::StartTime => "startTime",
            ExecutionField::CloseTime => "closeTime",
            ExecutionField::Paused => "paused",
            ExecutionField::CurrentStateId => "currentStateId",
            ExecutionField::Parked => "parked",
            ExecutionField::BackingOff => "backingOff",
            ExecutionField::WaitingOnTimer => "waitingOnTimer",
            ExecutionField::WaitingOnQueue => "waitingOnQueue",
            ExecutionField::DeploymentName => "deploymentName",
            ExecutionField::DeploymentVersion => "deploymentVersion",
            ExecutionField::Priority => "priority",
        }
    }
}

/// How a condition compares. `IN` takes `values`; `IS NULL` and `IS NOT NULL` take no
/// value; every other operator takes `value`. `PREFIX`, `SUFFIX` and `CONTAINS` match
/// text starting with, ending with or containing `value` (no wildcards: `%` and `_` are
/// plain characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
pub enum FilterOp {
    #[serde(rename = "=")]
    Eq,
    #[serde(rename = "!=")]
    Ne,
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
    #[serde(rename = "IN")]
    In,
    #[serde(rename = "IS NULL")]
    IsNull,
    #[serde(rename = "IS NOT NULL")]
    IsNotNull,
    #[serde(rename = "PREFIX")]
    Prefix,
    #[serde(rename = "SUFFIX")]
    Suffix,
    #[serde(rename = "CONTAINS")]
    Contains,
}

impl FilterOp {
    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            FilterOp::Eq => "=",
            FilterOp::Ne => "!=",
            FilterOp::Lt => "<",
            FilterOp::Le => "<=",
            FilterOp::Gt => ">",
            FilterOp::Ge => ">=",
            FilterOp::In => "IN",
            FilterOp::IsNull => "IS NULL",
            FilterOp::IsNotNull => "IS NOT NULL",
            FilterOp::Prefix => "PREFIX",
            FilterOp::Suffix => "SUFFIX",
            FilterOp::Contains => "CONTAINS",
        }
    }
}

/// A condition on a field of the execution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FieldCondition {
    pub field: ExecutionField,
    pub op: FilterOp,
    /// The value compared with (absent for `IN`, `IS NULL`, `IS NOT NULL`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = any_value)]
    pub value: Option<serde_json::Value>,
    /// The values of `IN`, at most 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_items = 100)]
    pub values: Option<Vec<serde_json::Value>>,
}

/// A condition on a column of the business row: the row of the table whose primary key
/// equals the execution's process id. An execution without such a row never matches a
/// column condition. Values are checked against the column's type: a number for integer
/// and decimal columns, a string for text, a boolean for boolean columns, RFC 3339 text
/// (or milliseconds since the epoch) for timestamps, `YYYY-MM-DD` for dates. With `path`
/// (a JSON column), the JSON value at that path of object keys is compared with `value`
/// as JSON (`=`, `!=`), matched as text by `PREFIX`, `SUFFIX`, `CONTAINS` (a string
/// `value`; unknown where the path holds no string), or tested with `IS NULL` /
/// `IS NOT NULL` (missing or JSON null is not told apart from SQL NULL).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ColumnCondition {
    /// A column of the business table (checked against the table's columns).
    pub column: String,
    /// Object keys into a JSON column, outermost first (letters, digits, `_`, `-`; at
    /// most 8 keys).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_items = 8)]
    pub path: Option<Vec<String>>,
    pub op: FilterOp,
    /// The value compared with (absent for `IN`, `IS NULL`, `IS NOT NULL`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = any_value)]
    pub value: Option<serde_json::Value>,
    /// The values of `IN`, at most 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_items = 100)]
    pub values: Option<Vec<serde_json::Value>>,
}

/// Any JSON value; null reads as absent.
fn any_value() -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    // `integer` before `number`: a generated client (Python's) keeps an integer an
    // integer rather than sending 50 as 50.0, which an integer column refuses.
    let any = [
        Type::String,
        Type::Integer,
        Type::Number,
        Type::Boolean,
        Type::Object,
        Type::Array,
        Type::Null,
    ];
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter(any))
        .description(Some(
            "The value compared with (absent for `IN`, `IS NULL`, `IS NOT NULL`; null \
             reads as absent).",
        ))
        .build()
}

/// The business table of a process type, for a query that names columns when the type
/// has no registered definition declaring its table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BusinessTableRef {
    /// The table, optionally schema-qualified (`schema.table`).
    pub table_name: String,
    /// Its primary-key column, which holds the process id of each row's process.
    pub primary_key_column: String,
}

/// What a count groups by: an execution field or a column of the business row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum CountGroupBy {
    Field(GroupByField),
    Column(GroupByColumn),
}

/// Groups by `status`, `processType`, `currentStateId` or `priority`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupByField {
    pub field: GroupField,
}

/// The execution fields a count can group by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum GroupField {
    Status,
    ProcessType,
    /// The state a running execution is in; an execution running several states
    /// (parallel threads) counts once, under the first of their ids in byte order, and
    /// one running none (between states, or closed) in the `null` group.
    CurrentStateId,
    /// The start's priority (a number).
    Priority,
}

/// Groups by a column of the business row (integer, decimal, text, boolean, date or
/// uuid columns; not timestamps, floating-point, JSON or `LONGTEXT`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupByColumn {
    pub column: String,
}

/// `POST .../count`: how many executions match, exactly, in one statement; optionally
/// per group.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionCountRequest {
    /// Only executions of this type. Needed for `column` conditions and groups, whose
    /// table is the type's.
    #[serde(default)]
    pub process_type: Option<String>,
    /// Only executions matching this filter tree; absent: every execution.
    #[serde(default, rename = "where")]
    pub where_: Option<FilterNode>,
    /// The type's business table, when no registered definition declares it (the
    /// definition's table is used when there is one).
    #[serde(default)]
    pub business_table: Option<BusinessTableRef>,
    /// Counts per value of this field or column; absent: one total.
    #[serde(default)]
    pub group_by: Option<CountGroupBy>,
    /// Answers the database's plan for the count's statement (`plan`) instead of
    /// running it (`count` 0): which indexes serve the filter and the groups, and which
    /// to create when none does.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[schema(default = false)]
    pub explain: bool,
}

/// The executions of one group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CountGroup {
    /// The group's value: text for execution fields, a number for `priority`; for a
    /// column, a number, boolean or text as the column holds it; null for rows where it
    /// is NULL.
    pub value: serde_json::Value,
    pub count: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionCountResponse {
    /// Every matching execution.
    pub count: u64,
    /// With `groupBy`: the largest groups first, at most 1000.
    #[serde(default)]
    #[schema(default = json!([]))]
    pub groups: Vec<CountGroup>,
    /// Whether there were more groups than `groups` holds (`count` still counts all).
    #[serde(default)]
    #[schema(default = false)]
    pub truncated: bool,
    /// The plan, when the request asked to `explain` it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<crate::QueryPlan>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_tree_reads_from_its_json() {
        let tree: FilterNode = serde_json::from_value(json!({"and": [
            {"field": "status", "op": "=", "value": "RUNNING"},
            {"or": [{"column": "tier", "op": "IS NULL"},
                    {"column": "doc", "path": ["a"], "op": "=", "value": {"b": 1}}]},
            {"not": {"column": "amount", "op": "IN", "values": [1, 2]}}
        ]}))
        .unwrap();
        let FilterNode::And(and) = &tree else {
            panic!("{tree:?}")
        };
        assert!(matches!(&and.and[0], FilterNode::Field(c) if c.op == FilterOp::Eq));
        assert!(matches!(&and.and[1], FilterNode::Or(or) if or.or.len() == 2));
        assert!(matches!(&and.and[2], FilterNode::Not(_)));
        let again: FilterNode =
            serde_json::from_value(serde_json::to_value(&tree).unwrap()).unwrap();
        assert_eq!(again, tree);
    }

    #[test]
    fn the_newer_fields_and_text_operators_read_by_their_wire_names() {
        for (name, field) in [
            ("parked", ExecutionField::Parked),
            ("backingOff", ExecutionField::BackingOff),
            ("waitingOnTimer", ExecutionField::WaitingOnTimer),
            ("waitingOnQueue", ExecutionField::WaitingOnQueue),
            ("deploymentName", ExecutionField::DeploymentName),
            ("deploymentVersion", ExecutionField::DeploymentVersion),
        ] {
            let read: FieldCondition =
                serde_json::from_value(json!({"field": name, "op": "=", "value": true})).unwrap();
            assert_eq!((read.field, field.as_str()), (field, name));
        }
        for (name, op) in [
            ("SUFFIX", FilterOp::Suffix),
            ("CONTAINS", FilterOp::Contains),
        ] {
            let read: ColumnCondition =
                serde_json::from_value(json!({"column": "a", "op": name, "value": "x"})).unwrap();
            assert_eq!((read.op, op.as_str()), (op, name));
        }
    }

    #[test]
    fn unknown_keys_and_operators_are_refused() {
        for bad in [
            json!({"and": [], "or": []}),
            json!({"column": "a", "op": "LIKE", "value": "x"}),
            json!({"field": "color", "op": "=", "value": "x"}),
            json!({"column": "a", "op": "=", "value": 1, "sql": "1=1"}),
        ] {
            assert!(
                serde_json::from_value::<FilterNode>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }
}
