//! Filtered counts over a column of each type a filter compares, on the real servers:
//! each dialect's casts and bindings (small integers, exact decimals, doubles, dates,
//! times with and without a zone, UUIDs, booleans, text, JSON paths) select the rows
//! they should, and a column of a type filters cannot compare is refused.

use std::time::Duration;

use serde_json::{json, Value};
use xdb_persistence::{QueryTable, StoreError};
use xdb_protocol::*;
use xdb_test_util::Dialect;

use crate::common::*;

both!(each_column_type_compares_in_its_own_type);

fn table_sql(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres => {
            "CREATE TABLE typed (k TEXT PRIMARY KEY, small SMALLINT, price NUMERIC(12, 2), \
             ratio DOUBLE PRECISION, day DATE, at_zoned TIMESTAMPTZ, at_local TIMESTAMP, \
             id UUID, flag BOOLEAN, label VARCHAR(20), doc JSON, raw BYTEA); \
             INSERT INTO typed VALUES \
             ('k1', 1, 10.50, 0.25, '2026-01-01', '2026-01-01T00:00:00Z', \
              '2026-01-01 00:00:00', '00000000-0000-0000-0000-000000000001', true, 'a', \
              '{\"x\": {\"y\": 1}}', NULL), \
             ('k2', 2, 20.00, 0.5, '2026-06-01', '2026-06-01T00:00:00Z', \
              '2026-06-01 00:00:00', '00000000-0000-0000-0000-000000000002', false, 'b', \
              '{\"x\": {\"y\": \"1\"}}', NULL), \
             ('k3', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"
        }
        Dialect::MySql => {
            "CREATE TABLE typed (k VARCHAR(20) PRIMARY KEY, small SMALLINT, \
             price DECIMAL(12, 2), ratio DOUBLE, day DATE, at_zoned TIMESTAMP(6) NULL, \
             at_local DATETIME(6), id UUID, flag BOOLEAN, label VARCHAR(20), doc JSON, \
             raw BLOB); \
             INSERT INTO typed VALUES \
             ('k1', 1, 10.50, 0.25, '2026-01-01', '2026-01-01 00:00:00', \
              '2026-01-01 00:00:00', '00000000-0000-0000-0000-000000000001', true, 'a', \
              '{\"x\": {\"y\": 1}}', NULL), \
             ('k2', 2, 20.00, 0.5, '2026-06-01', '2026-06-01 00:00:00', \
              '2026-06-01 00:00:00', '00000000-0000-0000-0000-000000000002', false, 'b', \
              '{\"x\": {\"y\": \"1\"}}', NULL), \
             ('k3', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"
        }
    }
}

async fn each_column_type_compares_in_its_own_type(dialect: Dialect) {
    let h = harness(dialect).await;
    // MySQL sessions run in UTC, as the store's do, so TIMESTAMP literals are UTC.
    let setup = match dialect {
        Dialect::Postgres => table_sql(dialect).to_string(),
        Dialect::MySql => format!("SET time_zone = '+00:00'; {}", table_sql(dialect)),
    };
    h.db.execute_sql(&setup).await;
    for key in ["k1", "k2", "k3"] {
        h.store
            .start_process(&start_request(key, "A"))
            .await
            .unwrap();
    }
    let table = QueryTable {
        table_name: "typed".into(),
        key_column: "k".into(),
        columns: h.store.table_columns(None, "typed").await.unwrap(),
        names_ignore_case: dialect == Dialect::MySql,
    };
    let count = |tree: Value| {
        let store = h.store.clone();
        let table = table.clone();
        async move {
            let request = ProcessExecutionCountRequest {
                process_type: Some("ContractTest".into()),
                where_: Some(serde_json::from_value(tree).unwrap()),
                ..Default::default()
            };
            let limit = Duration::from_secs(10);
            store.count_matching(&request, Some(&table), limit).await
        }
    };
    let cases = [
        (json!({"column": "small", "op": ">=", "value": 2}), 1),
        (
            json!({"column": "small", "op": "IN", "values": [1, 2, 3]}),
            2,
        ),
        (json!({"column": "price", "op": "=", "value": 10.5}), 1),
        (json!({"column": "price", "op": "<", "value": "20.00"}), 1),
        (json!({"column": "ratio", "op": ">", "value": 0.3}), 1),
        (
            json!({"column": "day", "op": "<", "value": "2026-03-01"}),
            1,
        ),
        (
            json!({"column": "at_zoned", "op": ">=", "value": "2026-06-01T02:00:00+02:00"}),
            1,
        ),
        (
            json!({"column": "at_zoned", "op": "<", "value": 1_767_225_600_001_i64}),
            1,
        ),
        (
            json!({"column": "at_local", "op": "=", "value": "2026-06-01T00:00:00"}),
            1,
        ),
        (
            json!({"column": "id", "op": "=", "value": "00000000-0000-0000-0000-000000000002"}),
            1,
        ),
        (json!({"column": "flag", "op": "=", "value": true}), 1),
        (json!({"column": "flag", "op": "IS NULL"}), 1),
        (json!({"column": "label", "op": "PREFIX", "value": "b"}), 1),
        (
            json!({"not": {"column": "label", "op": "=", "value": "a"}}),
            1,
        ),
        (
            json!({"column": "doc", "path": ["x", "y"], "op": "=", "value": 1}),
            1,
        ),
        (
            json!({"column": "doc", "path": ["x", "y"], "op": "=", "value": "1"}),
            1,
        ),
        (
            json!({"column": "doc", "path": ["x", "z"], "op": "IS NULL"}),
            3,
        ),
    ];
    for (tree, expected) in cases {
        let counted = count(tree.clone()).await;
        let counted = counted.unwrap_or_else(|e| panic!("{dialect:?} {tree}: {e}"));
        assert_eq!(counted.count, expected, "{dialect:?} {tree}");
    }
    let refused = count(json!({"column": "raw", "op": "IS NULL"})).await;
    assert!(
        matches!(&refused, Err(StoreError::Decide(_))),
        "{dialect:?}: {refused:?}"
    );
    let grouped = h
        .store
        .count_matching(
            &ProcessExecutionCountRequest {
                process_type: Some("ContractTest".into()),
                group_by: Some(CountGroupBy::Column(GroupByColumn {
                    column: "flag".into(),
                })),
                ..Default::default()
            },
            Some(&table),
            Duration::from_secs(10),
        )
        .await
        .unwrap();
    assert_eq!((grouped.count, grouped.groups.len()), (3, 3), "{grouped:?}");
}
