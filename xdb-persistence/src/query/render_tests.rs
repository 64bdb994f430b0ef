use serde_json::json;

use super::*;
use crate::mysql::query_syntax::{MariaDbSyntax, MySqlSyntax};
use crate::postgres::query_syntax::PostgresSyntax;
use crate::query::{check_filter, QueryTable};
use crate::TableColumn;

fn table() -> QueryTable {
    let column = |name: &str, data_type: &str| TableColumn {
        name: name.into(),
        data_type: data_type.into(),
        collation: None,
    };
    QueryTable {
        table_name: "app.orders".into(),
        key_column: "id".into(),
        columns: vec![
            column("id", "character varying"),
            column("amount", "integer"),
            column("note", "text"),
            column("doc", "jsonb"),
            column("order", "integer"),
        ],
        names_ignore_case: false,
    }
}

fn join() -> Join {
    Join {
        table: vec!["app".into(), "orders".into()],
        key: "id".into(),
        key_is_text: true,
        key_collation: None,
    }
}

fn checked(tree: serde_json::Value) -> Checked {
    let tree = serde_json::from_value(tree).unwrap();
    check_filter("where", &tree, Some(&table())).unwrap()
}

#[test]
fn a_tree_renders_to_one_parameterized_statement() {
    let filter = checked(json!({"and": [
        {"field": "status", "op": "=", "value": "RUNNING"},
        {"or": [
            {"column": "amount", "op": "IN", "values": [1, 2]},
            {"not": {"column": "note", "op": "PREFIX", "value": "50%_!"}}
        ]},
        {"column": "order", "op": "IS NULL"}
    ]}));
    let statement = list(&PostgresSyntax, &filter, Some(&join()), None, 11);
    assert_eq!(
        statement.sql,
        format!(
            "SELECT {SUMMARY_COLUMNS} FROM xdb_sys_process_executions p \
             JOIN \"app\".\"orders\" b ON b.\"id\" = p.process_id \
             WHERE (p.status = CAST(? AS TEXT) AND (b.\"amount\" IN (CAST(? AS BIGINT), \
             CAST(? AS BIGINT)) OR NOT (b.\"note\" LIKE CAST(? AS TEXT) ESCAPE '!')) \
             AND b.\"order\" IS NULL) \
             ORDER BY p.start_time DESC, p.id DESC LIMIT ?"
        )
    );
    assert_eq!(
        statement.values,
        [
            TypedValue::Text("RUNNING".into()),
            TypedValue::Int(1),
            TypedValue::Int(2),
            TypedValue::Text("50!%!_!!%".into()),
            TypedValue::Int(11),
        ]
    );
    let placeholders = statement.sql.matches('?').count();
    assert_eq!(placeholders, statement.values.len());
}

#[test]
fn each_dialect_supplies_its_pieces() {
    let filter = checked(json!({"and": [
        {"column": "doc", "path": ["customer", "tier"], "op": "!=", "value": "gold"},
        {"field": "startTime", "op": ">=", "value": 0}
    ]}));
    let after = Some((chrono::DateTime::UNIX_EPOCH, uuid::Uuid::nil()));
    let mariadb = list(&MariaDbSyntax, &filter, Some(&join()), after, 2);
    assert!(
        mariadb.sql.contains(
            "WHERE (NOT (JSON_EQUALS(JSON_EXTRACT(b.`doc`, ?), ?) = 1) AND p.start_time >= ?) \
             AND (p.start_time < ? OR (p.start_time = ? AND p.id < ?))"
        ),
        "{}",
        mariadb.sql
    );
    assert_eq!(
        mariadb.values[0],
        TypedValue::Text("$.\"customer\".\"tier\"".into())
    );
    assert_eq!(mariadb.values[1], TypedValue::Json(json!("gold")));
    assert_eq!(mariadb.sql.matches('?').count(), mariadb.values.len());
    let postgres = list(&PostgresSyntax, &filter, Some(&join()), after, 2);
    assert!(
        postgres.sql.contains(
            "NOT (jsonb_extract_path(CAST(b.\"doc\" AS JSONB), CAST(? AS TEXT), \
             CAST(? AS TEXT)) = CAST(? AS JSONB))"
        ),
        "{}",
        postgres.sql
    );
    assert!(postgres.sql.contains("AND (p.start_time, p.id) < (?, ?)"));
    assert_eq!(postgres.sql.matches('?').count(), postgres.values.len());
    let mysql = list(&MySqlSyntax, &filter, Some(&join()), after, 2);
    assert!(mysql
        .sql
        .contains("JSON_EXTRACT(b.`doc`, ?) = CAST(? AS JSON)"));
    // MySQL compares the process id in the key column's collation, named.
    let mut collated = join();
    collated.key_collation = Some(("latin1".into(), "latin1_swedish_ci".into()));
    let mariadb = list(&MariaDbSyntax, &filter, Some(&collated), None, 2);
    assert!(
        mariadb.sql.contains(
            "JOIN `app`.`orders` b ON b.`id` = CONVERT(p.process_id USING latin1) \
             COLLATE latin1_swedish_ci WHERE"
        ),
        "{}",
        mariadb.sql
    );
    collated.key_is_text = false;
    let mariadb = list(&MariaDbSyntax, &filter, Some(&collated), None, 2);
    assert!(mariadb.sql.contains(
        "ON CAST(b.`id` AS CHAR CHARACTER SET utf8mb4) COLLATE utf8mb4_bin = p.process_id"
    ));
}

#[test]
fn identifiers_are_quoted_with_their_marks_doubled() {
    assert_eq!(PostgresSyntax.quote("a\"b"), "\"a\"\"b\"");
    assert_eq!(MariaDbSyntax.quote("a`b"), "`a``b`");
    assert_eq!(PostgresSyntax.quote("select"), "\"select\"");
}

#[test]
fn execution_only_filters_join_nothing() {
    let filter = checked(json!({"or": [
        {"field": "paused", "op": "=", "value": false},
        {"field": "currentStateId", "op": "IN", "values": ["a", "b"]},
        {"and": []},
        {"or": []}
    ]}));
    let statement = count(&MariaDbSyntax, &filter, None, None, 1001);
    assert_eq!(
        statement.sql,
        "SELECT COUNT(*) FROM xdb_sys_process_executions p WHERE \
         (NOT (p.status = 'RUNNING' AND p.paused IS NOT NULL) OR \
         EXISTS (SELECT 1 FROM xdb_sys_async_state_executions s \
         WHERE s.process_execution_id = p.id AND s.status IN \
         ('WAIT_UNTIL_RUNNING', 'WAITING_COMMANDS', 'EXECUTE_RUNNING') \
         AND s.state_id IN (?, ?)) OR 1 = 1 OR 1 = 0)"
    );
    assert_eq!(statement.values.len(), 2);
}

#[test]
fn counts_group_with_their_total() {
    let filter = Checked::All(Vec::new());
    let group = Group::Column {
        name: "amount".into(),
        ty: ValueType::Int { takes_bool: false },
    };
    let mut key_as_text = join();
    key_as_text.key_is_text = false;
    let statement = count(
        &PostgresSyntax,
        &filter,
        Some(&key_as_text),
        Some(&group),
        1001,
    );
    assert_eq!(
        statement.sql,
        "SELECT CAST(b.\"amount\" AS TEXT), COUNT(*), \
         CAST(SUM(COUNT(*)) OVER () AS BIGINT) FROM xdb_sys_process_executions p \
         JOIN \"app\".\"orders\" b ON CAST(b.\"id\" AS TEXT) = p.process_id \
         WHERE 1 = 1 GROUP BY b.\"amount\" ORDER BY 2 DESC, 1 LIMIT ?"
    );
    assert_eq!(statement.values, [TypedValue::Int(1001)]);
}

#[test]
fn time_limits_are_the_dialects() {
    let limit = std::time::Duration::from_millis(1500);
    assert_eq!(
        PostgresSyntax.time_limit_setting(limit).as_deref(),
        Some("SET LOCAL statement_timeout = 1500")
    );
    assert_eq!(
        PostgresSyntax.time_limited("SELECT 1".into(), limit),
        "SELECT 1"
    );
    assert_eq!(MariaDbSyntax.time_limit_setting(limit), None);
    assert_eq!(
        MariaDbSyntax.time_limited("SELECT 1".into(), limit),
        "SET STATEMENT max_statement_time = 1.500 FOR SELECT 1"
    );
    assert_eq!(
        MySqlSyntax.time_limited("SELECT 1".into(), limit),
        "SELECT /*+ MAX_EXECUTION_TIME(1500) */ 1"
    );
}

#[test]
fn prefixes_escape_like_wildcards() {
    assert_eq!(like_prefix("a%b_c!d"), "a!%b!_c!!d%");
    assert_eq!(like_prefix(""), "%");
}
