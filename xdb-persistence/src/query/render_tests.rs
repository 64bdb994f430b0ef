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

fn now() -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap()
}

fn checked(tree: serde_json::Value) -> Checked {
    let tree = serde_json::from_value(tree).unwrap();
    check_filter("where", &tree, Some(&table()), now()).unwrap()
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
             COLLATE latin1_swedish_ci AND CONVERT(b.`id` USING utf8mb4) \
             COLLATE utf8mb4_nopad_bin = p.process_id WHERE"
        ),
        "{}",
        mariadb.sql
    );
    collated.key_is_text = false;
    let mariadb = list(&MariaDbSyntax, &filter, Some(&collated), None, 2);
    assert!(mariadb.sql.contains(
        "ON CAST(b.`id` AS CHAR CHARACTER SET utf8mb4) COLLATE utf8mb4_nopad_bin = p.process_id"
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
        PostgresSyntax.time_limited("SELECT 1".into(), limit),
        "SELECT 1"
    );
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
fn text_matches_escape_like_wildcards() {
    assert_eq!(like_pattern(TextMatch::Prefix, "a%b_c!d"), "a!%b!_c!!d%");
    assert_eq!(like_pattern(TextMatch::Prefix, ""), "%");
    assert_eq!(like_pattern(TextMatch::Suffix, "@x_y.com"), "%@x!_y.com");
    assert_eq!(like_pattern(TextMatch::Contains, "50%"), "%50!%%");
    assert_eq!(like_pattern(TextMatch::Contains, ""), "%%");
}

#[test]
fn execution_situations_read_the_system_tables() {
    let filter = checked(json!({"and": [
        {"field": "parked", "op": "=", "value": true},
        {"field": "backingOff", "op": "!=", "value": true},
        {"field": "waitingOnTimer", "op": "=", "value": true},
        {"field": "deploymentVersion", "op": "IN", "values": ["v1", "v2"]},
        {"field": "deploymentName", "op": "IS NULL"}
    ]}));
    for (syntax, now) in [
        (&PostgresSyntax as &dyn QuerySyntax, "clock_timestamp()"),
        (&MariaDbSyntax, "UTC_TIMESTAMP(6)"),
    ] {
        let statement = count(syntax, &filter, None, None, 1);
        let sql = &statement.sql;
        assert!(
            sql.contains(
                "(EXISTS (SELECT 1 FROM xdb_sys_parked_tasks k WHERE k.process_execution_id = p.id \
                 AND k.reason <> 'PAUSED') AND NOT EXISTS (SELECT 1 FROM xdb_sys_tasks t"
            ),
            "{sql}"
        );
        assert!(sql.contains(&format!("AND t.fire_at > {now})")), "{sql}");
        assert!(
            sql.contains(
                "(SELECT d.deployment_version FROM xdb_sys_process_definitions d \
                 WHERE d.process_type = p.process_type AND d.worker_url = p.worker_url \
                 ORDER BY d.revision DESC LIMIT 1) IN ("
            ),
            "{sql}"
        );
        assert!(sql.ends_with("LIMIT 1) IS NULL)"), "{sql}");
        assert_eq!(sql.matches('?').count(), 2);
        assert_eq!(statement.values.len(), 2);
    }
}

#[test]
fn queue_waits_and_json_text_are_the_dialects_json() {
    let filter = checked(json!({"and": [
        {"field": "waitingOnQueue", "op": "IN", "values": ["a", "b"]},
        {"column": "doc", "path": ["email"], "op": "SUFFIX", "value": "@x.com"}
    ]}));
    let postgres = count(&PostgresSyntax, &filter, Some(&join()), None, 1);
    assert!(
        postgres
            .sql
            .contains("WITH ORDINALITY AS q(command, n) WHERE s.process_execution_id = p.id"),
        "{}",
        postgres.sql
    );
    assert!(postgres
        .sql
        .contains("AND q.command ->> 'queueName' IN (CAST(? AS TEXT), CAST(? AS TEXT))"));
    assert!(
        postgres.sql.contains(
            "(CASE WHEN jsonb_typeof(jsonb_extract_path(CAST(b.\"doc\" AS JSONB), \
             CAST(? AS TEXT))) = 'string' THEN jsonb_extract_path(CAST(b.\"doc\" AS JSONB), \
             CAST(? AS TEXT)) #>> '{}' END) LIKE CAST(? AS TEXT) ESCAPE '!'"
        ),
        "{}",
        postgres.sql
    );
    assert_eq!(postgres.sql.matches('?').count(), postgres.values.len());
    let mariadb = count(&MariaDbSyntax, &filter, Some(&join()), None, 1);
    assert!(
        mariadb
            .sql
            .contains("JSON_TABLE(s.command_request, '$.localQueueCommands[*]'"),
        "{}",
        mariadb.sql
    );
    assert!(mariadb.sql.contains("AND q.queue_name IN (?, ?)"));
    assert!(mariadb.sql.contains(
        "(CASE WHEN JSON_TYPE(JSON_EXTRACT(b.`doc`, ?)) = 'STRING' \
         THEN JSON_UNQUOTE(JSON_EXTRACT(b.`doc`, ?)) END) LIKE ? ESCAPE '!'"
    ));
    assert_eq!(mariadb.sql.matches('?').count(), mariadb.values.len());
    assert_eq!(
        mariadb.values[2..],
        [
            TypedValue::Text("$.\"email\"".into()),
            TypedValue::Text("$.\"email\"".into()),
            TypedValue::Text("%@x.com".into()),
        ]
    );
}
