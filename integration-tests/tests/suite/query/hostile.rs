//! Hostile and wrong filters: each is a 400 naming where in the request it went wrong
//! and what was expected, and none reaches the database (the table and its rows are as
//! they were; the checks run before any statement is built — see
//! `xdb-persistence/src/query/check.rs`).

use serde_json::{json, Value};
use xdb_integration_tests::{Database, EnvOptions};
use xdb_sdk::protocol::paths;

use super::*;

both_databases!(hostile_filters_are_refused_before_any_sql);

/// A list body over the orders table with `tree`.
fn listing(tree: Value) -> Value {
    where_body(tree)
}

/// Nests `leaf` in `depth` negations.
fn nested(depth: usize, leaf: Value) -> Value {
    (0..depth).fold(leaf, |inner, _| json!({ "not": inner }))
}

async fn hostile_filters_are_refused_before_any_sql(db: Database) {
    let (env, url, _worker) = order_env(db, EnvOptions::default()).await;
    let orders = &super::fixture()[..2];
    start_orders(&env, &url, orders).await;
    let is_null = |column: &str| json!({"column": column, "op": "IS NULL"});

    let mut cases: Vec<(Value, &str, &str)> = Vec::new();
    for hostile in [
        "amount\"; DROP TABLE query_orders; --",
        "amount`; DROP TABLE query_orders; --",
        "amount' OR '1'='1",
        "naïve",
        "列",
        "a b",
        "",
        "1abc",
    ] {
        cases.push((
            listing(json!({"and": [is_null("amount"), is_null(hostile)]})),
            "where.and[1].column",
            "SQL identifier",
        ));
    }
    // Seven negations over a condition: eight levels, the most a tree may have.
    let deep = nested(7, is_null("amount"));
    let wide: Vec<Value> = (0..101).map(|_| is_null("amount")).collect();
    let many_ors: Vec<Value> = (0..10)
        .map(|_| json!({"or": (0..10).map(|_| is_null("amount")).collect::<Vec<_>>()}))
        .collect();
    let many_values: Vec<i64> = (0..101).collect();
    cases.extend([
        (
            listing(is_null("select")),
            "where.column",
            "has no column 'select'",
        ),
        (
            listing(json!({"column": "amount", "op": "=", "value": "10"})),
            "where.value",
            "expected an integer, found a string",
        ),
        (
            listing(json!({"column": "placed_at", "op": ">", "value": true})),
            "where.value",
            "RFC 3339",
        ),
        (
            // (Not `<`: MySQL's BOOLEAN is a TINYINT, which orders.)
            listing(json!({"column": "vip", "op": "PREFIX", "value": "t"})),
            "where.op",
            "does not apply",
        ),
        (
            listing(json!({"field": "status", "op": "=", "value": "DONE"})),
            "where.value",
            "not a status",
        ),
        (
            listing(json!({"field": "priority", "op": "IN", "values": [1, 9]})),
            "where.values[1]",
            "priority 9 does not exist (1, claimed first, to 5)",
        ),
        (
            listing(json!({"field": "priority", "op": "PREFIX", "value": 1})),
            "where.op",
            "does not apply to field 'priority'",
        ),
        (
            listing(json!({"field": "waitingOnQueue", "op": "!=", "value": "a"})),
            "where.op",
            "'!=' does not apply to field 'waitingOnQueue' (it takes: =, IN)",
        ),
        (
            listing(json!({"field": "parked", "op": "=", "value": "yes"})),
            "where.value",
            "field 'parked': expected a boolean, found a string",
        ),
        (
            listing(json!({"field": "startTime", "op": ">", "value": "-1 week"})),
            "where.value",
            "is not a duration from now",
        ),
        (
            listing(json!({"column": "amount", "op": "CONTAINS", "value": "1"})),
            "where.op",
            "does not apply",
        ),
        (
            listing(json!({"column": "doc", "path": ["tier"], "op": "SUFFIX", "value": 1})),
            "where.value",
            "'SUFFIX' on a JSON path takes a string, found an integer",
        ),
        // MariaDB's JSON is LONGTEXT: compared whole, it is text.
        match db {
            Database::Postgres => (
                listing(json!({"column": "doc", "op": "=", "value": {"tier": "gold"}})),
                "where.op",
                "through `path`",
            ),
            Database::MySql => (
                listing(json!({"column": "doc", "op": "=", "value": {"tier": "gold"}})),
                "where.value",
                "expected a string, found an object",
            ),
        },
        (
            listing(json!({"column": "doc", "path": ["tier'); --"], "op": "=", "value": 1})),
            "where.path[0]",
            "JSON path key",
        ),
        (
            listing(json!({"column": "amount", "op": "=", "value": 1, "sql": "1=1"})),
            "where",
            "",
        ),
        (
            listing(json!({"column": "amount", "op": "LIKE", "value": "%"})),
            "where",
            "",
        ),
        (
            listing(nested(1, deep.clone())),
            "where",
            "deeper than 8 levels",
        ),
        (listing(json!({ "or": wide })), "where.or", ""),
        (
            listing(json!({ "and": many_ors })),
            "where.and[9]",
            "more than 100 nodes",
        ),
        (
            listing(json!({"column": "amount", "op": "IN", "values": many_values})),
            "where.values",
            "",
        ),
        (
            json!({
                "filter": {"processType": PROCESS_TYPE},
                "where": is_null("amount"),
                "businessTable": {"tableName": "query_orders; DROP TABLE query_orders",
                                  "primaryKeyColumn": "id"}
            }),
            "businessTable.tableName",
            "",
        ),
        (
            json!({
                "filter": {"processType": PROCESS_TYPE},
                "where": is_null("amount"),
                "businessTable": {"tableName": TABLE, "primaryKeyColumn": "id\" --"}
            }),
            "businessTable.primaryKeyColumn",
            "SQL identifier",
        ),
        (
            json!({"where": is_null("amount"),
                   "businessTable": {"tableName": TABLE, "primaryKeyColumn": "id"}}),
            "filter.processType",
            "",
        ),
    ]);
    // Eight levels are allowed; the ninth is refused (above).
    assert!(list_all(&env, &listing(deep), 10).await.is_ok());

    for (body, field, expected) in &cases {
        let message = refusal(list_all(&env, body, 10).await);
        assert!(
            message.contains(field) && message.contains(expected),
            "{body}: expected a message naming {field:?} and {expected:?}, got {message:?}"
        );
    }

    // A tree deeper than the JSON reader's limit is refused as it is read.
    let abyss = nested(200, is_null("amount"));
    let message = refusal(list_all(&env, &listing(abyss), 10).await);
    assert!(message.contains("recursion limit"), "{message}");

    // Counts: a group by a hostile or unknown column, a type that has no table.
    let group = |column: &str| {
        json!({"processType": PROCESS_TYPE, "groupBy": {"column": column},
               "businessTable": {"tableName": TABLE, "primaryKeyColumn": "id"}})
    };
    let refused: Result<Value, _> = call(&env, paths::COUNT, &group("vip\"--")).await;
    assert!(refusal(refused).contains("groupBy.column"));
    let refused: Result<Value, _> = call(&env, paths::COUNT, &group("doc")).await;
    assert!(refusal(refused).contains("groupBy.column"));
    let refused: Result<Value, _> = call(
        &env,
        paths::COUNT,
        &json!({"processType": "Unregistered", "where": is_null("amount")}),
    )
    .await;
    assert!(refusal(refused).contains("businessTable"));

    // Nothing of it ran: the table and its rows are there.
    let rows = env.count("SELECT count(*) FROM query_orders", &[]).await;
    assert_eq!(rows, orders.len() as i64);
    env.shutdown().await;
}
