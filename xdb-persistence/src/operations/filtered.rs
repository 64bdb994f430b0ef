//! Filtered list and count: a request's filter tree checked, rendered to one statement
//! and run under a time limit, so a filter over an
//! unindexed business column costs the user's database at most that long.
//!
//! Pages use the plain list's tokens (`operations::list`): the last row's
//! `(start time µs, id)`, read again as a keyset condition.

use std::time::Duration;

use xdb_engine::decide::DecideError;
use xdb_engine::validation::{check_identifier, split_table_name, ValidationError};
use xdb_protocol::{
    CountGroup, ExecutionField, FilterOp, ProcessExecutionCountRequest,
    ProcessExecutionCountResponse, ProcessExecutionListFilter, ProcessExecutionListRequest,
    ProcessExecutionListResponse, MAX_COUNT_GROUPS,
};

use super::list::{decode_token, encode_token, millis, page_size};
use crate::columns::ColumnReader;
use crate::query::{
    self, check_filter, check_group, Checked, Condition, Group, Join, QueryTable, Statement,
    Subject, Test, TypedValue, ValueType,
};
use crate::sql::{Param, SqlConn};
use crate::sql_tables::process_rows::summary_of;
use crate::tables::{Dialect, Lane, Listed};
use crate::StoreError;

/// A page of the executions `request` (with its `where` tree) matches, newest first.
pub(crate) async fn list_matching<D: Dialect>(
    store: &D,
    request: &ProcessExecutionListRequest,
    table: Option<&QueryTable>,
    limit: Duration,
) -> Result<ProcessExecutionListResponse, StoreError> {
    let page_size = page_size(request.page_size)?;
    let after = request
        .next_page_token
        .as_deref()
        .map(decode_token)
        .transpose()?;
    let mut all = plain_filter(&request.filter)?;
    if let Some(tree) = &request.where_ {
        let now = store.database_clock().now();
        all.push(check_filter("where", tree, table, now).map_err(invalid)?);
    }
    let filter = Checked::All(all);
    let join = join_for(&filter, None, request.filter.process_type.as_deref(), table)?;
    let syntax = store.query_syntax();
    let rows = i64::from(page_size) + 1;
    let statement = query::list(syntax, &filter, join.as_ref(), after, rows);
    if request.explain {
        let business_table = join.as_ref().map(|j| j.table.as_slice());
        // Not run, so not given the dialect's time limit in its text.
        let plan = read(store, &syntax.explain(&statement), limit, Plan).await?;
        return Ok(ProcessExecutionListResponse {
            executions: Vec::new(),
            next_page_token: None,
            plan: Some(query::read_plan(plan, &filter, business_table, syntax)),
        });
    }
    let mut page = bounded(store, &statement, limit, Page).await?;
    let page_size = page_size as usize;
    let next_page_token = (page.len() > page_size)
        .then(|| &page[page_size - 1])
        .map(|row| encode_token(row.start, &row.summary.process_execution_id));
    page.truncate(page_size);
    let executions = super::backing_off::marked(store, page).await?;
    Ok(ProcessExecutionListResponse {
        executions,
        next_page_token,
        plan: None,
    })
}

/// How many executions `request` matches, in total and per group.
pub(crate) async fn count_matching<D: Dialect>(
    store: &D,
    request: &ProcessExecutionCountRequest,
    table: Option<&QueryTable>,
    limit: Duration,
) -> Result<ProcessExecutionCountResponse, StoreError> {
    let plain = ProcessExecutionListFilter {
        process_type: request.process_type.clone(),
        ..Default::default()
    };
    let mut all = plain_filter(&plain)?;
    if let Some(tree) = &request.where_ {
        let now = store.database_clock().now();
        all.push(check_filter("where", tree, table, now).map_err(invalid)?);
    }
    let filter = Checked::All(all);
    let group = request
        .group_by
        .as_ref()
        .map(|group| check_group("groupBy", group, table))
        .transpose()
        .map_err(invalid)?;
    let join = join_for(
        &filter,
        group.as_ref(),
        request.process_type.as_deref(),
        table,
    )?;
    let syntax = store.query_syntax();
    let rows = MAX_COUNT_GROUPS as i64 + 1;
    let statement = query::count(syntax, &filter, join.as_ref(), group.as_ref(), rows);
    if request.explain {
        let business_table = join.as_ref().map(|j| j.table.as_slice());
        let plan = read(store, &syntax.explain(&statement), limit, Plan).await?;
        return Ok(ProcessExecutionCountResponse {
            count: 0,
            groups: Vec::new(),
            truncated: false,
            plan: Some(query::read_plan(plan, &filter, business_table, syntax)),
        });
    }
    bounded(store, &statement, limit, Counts(group.as_ref())).await
}

/// Reads a statement's rows into an answer, whatever connection they came from.
trait Decode {
    type Answer;
    fn decode<C: SqlConn>(&self, rows: &[C::Row]) -> Result<Self::Answer, StoreError>;
}

/// A list's rows.
struct Page;

impl Decode for Page {
    type Answer = Vec<Listed>;

    fn decode<C: SqlConn>(&self, rows: &[C::Row]) -> Result<Self::Answer, StoreError> {
        rows.iter().map(summary_of::<C>).collect()
    }
}

/// `EXPLAIN`'s one row: the plan as JSON.
struct Plan;

impl Decode for Plan {
    type Answer = serde_json::Value;

    fn decode<C: SqlConn>(&self, rows: &[C::Row]) -> Result<Self::Answer, StoreError> {
        Ok(match rows.first() {
            Some(row) => C::columns(row, 0).json()?.unwrap_or_default(),
            None => serde_json::Value::Null,
        })
    }
}

/// A count's rows: one total, or a row per group with the total beside each.
struct Counts<'a>(Option<&'a Group>);

impl Decode for Counts<'_> {
    type Answer = ProcessExecutionCountResponse;

    fn decode<C: SqlConn>(&self, rows: &[C::Row]) -> Result<Self::Answer, StoreError> {
        let Some(group) = self.0 else {
            let count = match rows.first() {
                Some(row) => C::columns(row, 0).bigint()?,
                None => 0,
            };
            return Ok(ProcessExecutionCountResponse {
                count: count.max(0) as u64,
                groups: Vec::new(),
                truncated: false,
                plan: None,
            });
        };
        let mut groups = Vec::with_capacity(rows.len());
        let mut total = 0;
        for row in rows {
            let mut columns = C::columns(row, 0);
            let value = group_value(group, columns.optional_text()?);
            let count = columns.bigint()?.max(0) as u64;
            total = columns.bigint()?.max(0) as u64;
            groups.push(CountGroup { value, count });
        }
        let truncated = groups.len() > MAX_COUNT_GROUPS;
        groups.truncate(MAX_COUNT_GROUPS);
        Ok(ProcessExecutionCountResponse {
            count: total,
            groups,
            truncated,
            plan: None,
        })
    }
}

/// The plain list filters as checked conditions, so that one statement holds them all.
fn plain_filter(filter: &ProcessExecutionListFilter) -> Result<Vec<Checked>, StoreError> {
    let mut all = Vec::new();
    let mut equal = |field, value: TypedValue| {
        all.push(Checked::Test(Condition {
            subject: Subject::Field(field),
            test: Test::Compare(FilterOp::Eq, value),
        }))
    };
    if let Some(status) = filter.status {
        equal(
            ExecutionField::Status,
            TypedValue::Text(status.as_str().into()),
        );
    }
    if let Some(process_type) = &filter.process_type {
        equal(
            ExecutionField::ProcessType,
            TypedValue::Text(process_type.clone()),
        );
    }
    if let Some(process_id) = &filter.process_id {
        equal(
            ExecutionField::ProcessId,
            TypedValue::Text(process_id.clone()),
        );
    }
    let bounds = [
        (filter.start_time_min_ms, "startTimeMinMs", FilterOp::Ge),
        (filter.start_time_max_ms, "startTimeMaxMs", FilterOp::Lt),
    ];
    for (ms, field, op) in bounds {
        if let Some(ms) = ms {
            all.push(Checked::Test(Condition {
                subject: Subject::Field(ExecutionField::StartTime),
                test: Test::Compare(op, TypedValue::Instant(millis(field, ms)?)),
            }));
        }
    }
    Ok(all)
}

/// The business table to join when the filter or the group reads it: only for one
/// process type (the table is that type's), keyed by the process id.
fn join_for(
    filter: &Checked,
    group: Option<&Group>,
    process_type: Option<&str>,
    table: Option<&QueryTable>,
) -> Result<Option<Join>, StoreError> {
    let reads_row = filter.reads_row() || matches!(group, Some(Group::Column { .. }));
    if !reads_row {
        return Ok(None);
    }
    if process_type.is_none() {
        return Err(invalid(ValidationError::new(
            "processType",
            "is needed to compare columns of the business row (the table is the type's)",
        )));
    }
    let Some(table) = table else {
        return Err(invalid(ValidationError::new(
            "businessTable",
            "is needed to compare columns: register the type's definition with its \
             globalAttributes, or pass businessTable",
        )));
    };
    let parts = split_table_name("businessTable.tableName", &table.table_name).map_err(invalid)?;
    let key = table.column(&table.key_column).ok_or_else(|| {
        invalid(ValidationError::new(
            "businessTable.primaryKeyColumn",
            format!(
                "table '{}' has no column '{}'",
                table.table_name, table.key_column
            ),
        ))
    })?;
    let key_is_text = matches!(
        ValueType::of_column(&key.data_type),
        Some(ValueType::Text { .. })
    );
    // Spliced into the statement (a collation cannot be a parameter): identifiers only.
    let key_collation = key.collation.clone().filter(|(charset, collation)| {
        check_identifier("", charset).is_ok() && check_identifier("", collation).is_ok()
    });
    Ok(Some(Join {
        table: parts.into_iter().map(str::to_string).collect(),
        key: key.name.clone(),
        key_is_text,
        key_collation,
    }))
}

/// Runs `statement`, bounded by `limit`, and decodes its rows: the dialect bounds it in
/// its text (`QuerySyntax::time_limited`) or by cancelling it (`Dialect::read_bounded`).
async fn bounded<D: Dialect, R: Decode>(
    store: &D,
    statement: &Statement,
    limit: Duration,
    decode: R,
) -> Result<R::Answer, StoreError> {
    let sql = store
        .query_syntax()
        .time_limited(statement.sql.clone(), limit);
    let statement = Statement {
        sql,
        values: statement.values.clone(),
    };
    read(store, &statement, limit, decode).await
}

/// Runs `statement` as it is, cancelled past `limit` where the store does that.
async fn read<D: Dialect, R: Decode>(
    store: &D,
    statement: &Statement,
    limit: Duration,
    decode: R,
) -> Result<R::Answer, StoreError> {
    let params: Vec<Param<'_>> = statement.values.iter().map(TypedValue::param).collect();
    let rows = store
        .read_bounded(Lane::Query, &statement.sql, &params, limit)
        .await?;
    decode.decode::<D::Session>(&rows)
}

/// A group's value as JSON, from its text: numbers and booleans as such.
fn group_value(group: &Group, text: Option<String>) -> serde_json::Value {
    use serde_json::Value;
    let Some(text) = text else {
        return Value::Null;
    };
    let ty = match group {
        Group::Field(xdb_protocol::GroupField::Priority) => ValueType::Int { takes_bool: false },
        Group::Field(_) => return Value::String(text),
        Group::Column { ty, .. } => *ty,
    };
    match ty {
        ValueType::Int { .. } => text.parse::<i64>().map(Value::from).ok(),
        ValueType::Bool => match text.as_str() {
            "true" | "t" | "1" => Some(Value::Bool(true)),
            "false" | "f" | "0" => Some(Value::Bool(false)),
            _ => None,
        },
        _ => None,
    }
    .unwrap_or(Value::String(text))
}

fn invalid(error: ValidationError) -> StoreError {
    StoreError::Decide(DecideError::Invalid(error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_values_keep_their_type() {
        let int = Group::Column {
            name: "n".into(),
            ty: ValueType::Int { takes_bool: false },
        };
        assert_eq!(group_value(&int, Some("42".into())), serde_json::json!(42));
        assert_eq!(group_value(&int, None), serde_json::Value::Null);
        let flag = Group::Column {
            name: "b".into(),
            ty: ValueType::Bool,
        };
        assert_eq!(
            group_value(&flag, Some("true".into())),
            serde_json::json!(true)
        );
        let status = Group::Field(xdb_protocol::GroupField::Status);
        assert_eq!(
            group_value(&status, Some("RUNNING".into())),
            serde_json::json!("RUNNING")
        );
    }

    #[test]
    fn a_column_needs_a_type_and_a_table() {
        let column = Checked::Test(Condition {
            subject: Subject::Column {
                name: "n".into(),
                ty: ValueType::Int { takes_bool: false },
            },
            test: Test::Null(true),
        });
        let refused = join_for(&column, None, None, None).unwrap_err();
        assert!(refused.to_string().contains("processType"), "{refused}");
        let refused = join_for(&column, None, Some("T"), None).unwrap_err();
        assert!(refused.to_string().contains("businessTable"), "{refused}");
        let plain = Checked::All(Vec::new());
        assert_eq!(join_for(&plain, None, None, None).unwrap(), None);
    }
}
