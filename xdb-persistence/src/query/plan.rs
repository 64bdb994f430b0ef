//! What a filtered list's plan says about indexes: whether an index of the business
//! table serves the columns the filter compares, which tables the database reads in
//! full, and what to do about it. Pure: the plan is the JSON `EXPLAIN` gives,
//! PostgreSQL's (`"Alias"`, `"Node Type"`, `"Index Cond"`) or MySQL's and MariaDB's
//! (`"table_name"` holding the alias, `"access_type"`, `"used_key_parts"`).
//!
//! Without such an index the database walks the type's executions newest first and
//! looks up each one's row by its key until the page is full: every execution of the
//! type when few rows match. A hint, not a proof: an index can serve one side of an `OR`
//! and not the other.

use serde_json::{Map, Value};
use xdb_protocol::QueryPlan;

use super::check::{Checked, Subject};
use super::syntax::QuerySyntax;

/// The aliases the statements give their tables (see `render`).
const EXECUTIONS_ALIAS: &str = "p";
const BUSINESS_ALIAS: &str = "b";
const EXECUTIONS_TABLE: &str = "xdb_sys_process_executions";

/// The plan of a statement over `filter`, whose business table (if joined) is
/// `business_table`, its name's parts in order; the advice's SQL in `syntax`'s quoting.
pub(crate) fn read_plan(
    plan: Value,
    filter: &Checked,
    business_table: Option<&[String]>,
    syntax: &dyn QuerySyntax,
) -> QueryPlan {
    let mut reads = Vec::new();
    table_reads(&plan, &mut reads);
    let mut columns = Vec::new();
    row_columns(filter, &mut columns);
    let mut full_scans = Vec::new();
    let mut advice = Vec::new();
    if let Some(parts) = business_table.filter(|_| !columns.is_empty()) {
        let table = parts.join(".");
        let business: Vec<&TableRead> =
            reads.iter().filter(|r| r.alias == BUSINESS_ALIAS).collect();
        if business.iter().any(|r| r.full) {
            full_scans.push(table.clone());
        }
        let served = business.iter().any(|r| {
            columns
                .iter()
                .any(|c| r.index_columns.iter().any(|i| i == c))
        });
        if !served {
            advice.push(format!(
                "no index of {table} serves the columns the filter compares ({}): the \
                 database reads the type's executions one by one and checks each one's row; \
                 index the most selective of them, e.g. {}",
                columns.join(", "),
                create_index(parts, &columns[0], syntax),
            ));
        }
    }
    if reads.iter().any(|r| r.alias == EXECUTIONS_ALIAS && r.full) {
        full_scans.push(EXECUTIONS_TABLE.to_string());
        advice.push(
            "the database reads every execution: narrow the filter by processType, status \
             or startTime, which XDB's indexes serve"
                .to_string(),
        );
    }
    QueryPlan {
        full_scans,
        advice,
        plan,
    }
}

/// `CREATE INDEX` on `column` of the table `parts` names, every identifier quoted (a
/// table may be called `user`) and the index named, as MySQL requires.
fn create_index(parts: &[String], column: &str, syntax: &dyn QuerySyntax) -> String {
    let table: Vec<String> = parts.iter().map(|p| syntax.quote(p)).collect();
    let last = parts.last().map(String::as_str).unwrap_or_default();
    format!(
        "CREATE INDEX {} ON {} ({})",
        syntax.quote(&format!("{last}_{column}")),
        table.join("."),
        syntax.quote(column)
    )
}

/// How the plan reads one table (by its alias).
#[derive(Debug, PartialEq)]
struct TableRead {
    alias: String,
    /// Read in full: no index at all.
    full: bool,
    /// The columns an index condition of the read names.
    index_columns: Vec<String>,
}

/// Every table read of `plan`, in the order found.
fn table_reads(plan: &Value, reads: &mut Vec<TableRead>) {
    match plan {
        Value::Object(node) => {
            if let Some(read) = postgres_read(node).or_else(|| mysql_read(node)) {
                reads.push(read);
            }
            node.values().for_each(|child| table_reads(child, reads));
        }
        Value::Array(items) => items.iter().for_each(|child| table_reads(child, reads)),
        _ => {}
    }
}

/// A PostgreSQL plan node that reads a table: a scan with an `"Alias"`.
fn postgres_read(node: &Map<String, Value>) -> Option<TableRead> {
    let kind = node.get("Node Type")?.as_str()?;
    let alias = node.get("Alias")?.as_str()?.to_string();
    let conditions = ["Index Cond", "Recheck Cond"]
        .iter()
        .filter_map(|key| node.get(*key).and_then(Value::as_str));
    Some(TableRead {
        alias,
        full: kind == "Seq Scan",
        index_columns: conditions.flat_map(words).collect(),
    })
}

/// A MySQL or MariaDB `"table"` object.
fn mysql_read(node: &Map<String, Value>) -> Option<TableRead> {
    let access = node.get("access_type")?.as_str()?;
    let alias = node.get("table_name")?.as_str()?.to_string();
    let parts = node.get("used_key_parts").and_then(Value::as_array);
    Some(TableRead {
        alias,
        full: access == "ALL",
        index_columns: parts
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
    })
}

/// The identifier-like words of a condition's text (`(b.customer = $2)` → b, customer).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// The business columns `filter` compares, each once, in the order written.
fn row_columns(filter: &Checked, columns: &mut Vec<String>) {
    match filter {
        Checked::All(nodes) | Checked::Any(nodes) => {
            nodes.iter().for_each(|node| row_columns(node, columns))
        }
        Checked::Not(node) => row_columns(node, columns),
        Checked::Test(condition) => {
            let name = match &condition.subject {
                Subject::Field(_) => return,
                Subject::Column { name, .. } | Subject::JsonPath { name, .. } => name,
            };
            if !columns.contains(name) {
                columns.push(name.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use xdb_protocol::FilterOp;

    use super::*;
    use crate::mysql::query_syntax::MariaDbSyntax;
    use crate::postgres::query_syntax::PostgresSyntax;
    use crate::query::{Condition, Test, TypedValue, ValueType};

    fn table(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|p| p.to_string()).collect()
    }

    fn column(name: &str) -> Checked {
        Checked::Test(Condition {
            subject: Subject::Column {
                name: name.into(),
                ty: ValueType::Int { takes_bool: false },
            },
            test: Test::Compare(FilterOp::Eq, TypedValue::Int(1)),
        })
    }

    #[test]
    fn a_postgres_index_on_a_compared_column_serves_the_filter() {
        let plan = json!([{"Plan": {"Node Type": "Nested Loop", "Plans": [
            {"Node Type": "Index Scan", "Alias": "b", "Index Cond": "(customer = $2)"},
            {"Node Type": "Index Scan", "Alias": "p", "Index Cond": "(process_id = b.id)"},
            {"Node Type": "Seq Scan", "Alias": "t"}
        ]}}]);
        let orders = table(&["orders"]);
        let read = read_plan(
            plan.clone(),
            &column("customer"),
            Some(&orders),
            &PostgresSyntax,
        );
        assert!(read.full_scans.is_empty(), "{read:?}");
        assert!(read.advice.is_empty(), "{read:?}");
        assert_eq!(read.plan, plan);
    }

    #[test]
    fn a_postgres_key_lookup_with_a_filter_asks_for_an_index_of_its_columns() {
        let plan = json!([{"Plan": {"Node Type": "Nested Loop", "Plans": [
            {"Node Type": "Index Scan", "Alias": "p", "Index Cond": "(process_type = $1)"},
            {"Node Type": "Index Scan", "Alias": "b", "Index Cond": "(id = p.process_id)",
             "Filter": "(amount = $2)"}
        ]}}]);
        let filter = Checked::All(vec![column("amount"), column("region"), column("amount")]);
        let user = table(&["shop", "user"]);
        let read = read_plan(plan, &filter, Some(&user), &PostgresSyntax);
        assert!(read.full_scans.is_empty());
        assert_eq!(read.advice.len(), 1);
        let advice = &read.advice[0];
        assert!(advice.contains("no index of shop.user serves"), "{advice}");
        assert!(advice.contains("(amount, region)"), "{advice}");
        assert!(
            advice.contains(r#"CREATE INDEX "user_amount" ON "shop"."user" ("amount")"#),
            "{advice}"
        );
    }

    #[test]
    fn mysql_full_reads_are_named_and_a_used_key_part_serves() {
        let plan = json!({"query_block": {"nested_loop": [
            {"table": {"table_name": "p", "access_type": "ALL"}},
            {"table": {"table_name": "b", "access_type": "ALL"}}
        ]}});
        let orders = table(&["orders"]);
        let read = read_plan(plan, &column("amount"), Some(&orders), &MariaDbSyntax);
        assert_eq!(read.full_scans, ["orders", EXECUTIONS_TABLE]);
        assert_eq!(read.advice.len(), 2);
        assert!(read.advice[0].contains("CREATE INDEX `orders_amount` ON `orders` (`amount`)"));
        assert!(read.advice[1].contains("processType, status or startTime"));

        let plan = json!({"query_block": {"nested_loop": [
            {"table": {"table_name": "b", "access_type": "ref", "key": "by_customer",
                       "used_key_parts": ["customer"]}},
            {"table": {"table_name": "p", "access_type": "ref", "used_key_parts": ["process_id"]}}
        ]}});
        let read = read_plan(plan, &column("customer"), Some(&orders), &MariaDbSyntax);
        assert!(
            read.full_scans.is_empty() && read.advice.is_empty(),
            "{read:?}"
        );
    }

    #[test]
    fn execution_fields_alone_need_no_business_index() {
        let plan = json!([{"Plan": {"Node Type": "Index Scan", "Alias": "p"}}]);
        let status = Checked::Test(Condition {
            subject: Subject::Field(xdb_protocol::ExecutionField::Status),
            test: Test::Compare(FilterOp::Eq, TypedValue::Text("RUNNING".into())),
        });
        let read = read_plan(plan, &status, None, &PostgresSyntax);
        assert!(read.full_scans.is_empty() && read.advice.is_empty());
    }
}
