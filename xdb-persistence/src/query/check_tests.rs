use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{json, Value};

use super::*;

fn table() -> QueryTable {
    let column = |name: &str, data_type: &str| TableColumn {
        name: name.into(),
        data_type: data_type.into(),
        collation: None,
    };
    QueryTable {
        table_name: "orders".into(),
        key_column: "id".into(),
        columns: vec![
            column("id", "character varying"),
            column("amount", "integer"),
            column("note", "text"),
            column("placed_at", "timestamp with time zone"),
            column("vip", "boolean"),
            column("doc", "jsonb"),
            column("order", "integer"),
            column("blob", "bytea"),
        ],
        names_ignore_case: false,
    }
}

/// The database's clock in these tests.
fn now() -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000, 0).unwrap()
}

fn tree(value: Value) -> FilterNode {
    serde_json::from_value(value).expect("a filter tree")
}

fn check(value: Value) -> Result<Checked, ValidationError> {
    check_filter("where", &tree(value), Some(&table()), now())
}

/// The refusal of `value`: its field and problem.
fn refused(value: Value) -> (String, String) {
    let error = check(value.clone()).expect_err(&value.to_string());
    (error.field, error.problem)
}

#[test]
fn a_good_tree_is_typed() {
    let checked = check(json!({"and": [
        {"field": "status", "op": "IN", "values": ["RUNNING", "FAILED"]},
        {"column": "amount", "op": ">=", "value": 100},
        {"not": {"column": "note", "op": "PREFIX", "value": "50%_off"}},
        {"column": "placed_at", "op": "<", "value": "2026-01-01T00:00:00Z"},
        {"column": "doc", "path": ["customer", "tier"], "op": "=", "value": "gold"},
        {"column": "order", "op": "IS NOT NULL"}
    ]}))
    .unwrap();
    let Checked::All(all) = &checked else {
        panic!("{checked:?}")
    };
    assert_eq!(all.len(), 6);
    assert!(checked.reads_row());
    assert_eq!(
        all[1],
        Checked::Test(Condition {
            subject: Subject::Column {
                name: "amount".into(),
                ty: ValueType::Int { takes_bool: false }
            },
            test: Test::Compare(FilterOp::Ge, TypedValue::Int(100)),
        })
    );
    let fields = check(json!({"field": "processId", "op": "PREFIX", "value": "order-"})).unwrap();
    assert!(!fields.reads_row());
}

#[test]
fn bad_values_name_the_path_and_the_type() {
    let (field, problem) = refused(json!({"and": [
        {"column": "amount", "op": "=", "value": 1},
        {"or": [{"column": "amount", "op": "=", "value": "ten"}]}
    ]}));
    assert_eq!(field, "where.and[1].or[0].value");
    assert_eq!(
        problem,
        "column 'amount': expected an integer, found a string"
    );
    let (field, problem) = refused(json!({"column": "vip", "op": "IN", "values": [true, 1]}));
    assert_eq!(field, "where.values[1]");
    assert!(problem.contains("expected a boolean"), "{problem}");
    let (field, problem) = refused(json!({"field": "status", "op": "=", "value": "DONE"}));
    assert_eq!(field, "where.value");
    assert!(problem.contains("not a status"), "{problem}");
    let (field, _) = refused(json!({"field": "startTime", "op": ">", "value": "last week"}));
    assert_eq!(field, "where.value");
}

#[test]
fn columns_are_checked_against_the_table() {
    for hostile in [
        "amount\"; DROP TABLE orders; --",
        "amount`",
        "naïve",
        "a b",
        "",
        "1st",
    ] {
        let (field, problem) = refused(json!({"column": hostile, "op": "IS NULL"}));
        assert_eq!(field, "where.column", "{hostile}");
        assert!(problem.contains("not a valid SQL identifier"), "{problem}");
    }
    let (field, problem) = refused(json!({"column": "select", "op": "IS NULL"}));
    assert_eq!(field, "where.column");
    assert_eq!(problem, "table 'orders' has no column 'select'");
    // A reserved word the table does have is a column like any other (quoted later).
    assert!(check(json!({"column": "order", "op": "=", "value": 1})).is_ok());
    // PostgreSQL compares quoted names with case.
    assert!(check(json!({"column": "Amount", "op": "IS NULL"})).is_err());
    let mut mysql = table();
    mysql.names_ignore_case = true;
    let tree = tree(json!({"column": "Amount", "op": "IS NULL"}));
    let Checked::Test(condition) = check_filter("where", &tree, Some(&mysql), now()).unwrap()
    else {
        panic!()
    };
    assert!(matches!(condition.subject, Subject::Column { ref name, .. } if name == "amount"));
    let (_, problem) = refused(json!({"column": "blob", "op": "IS NULL"}));
    assert_eq!(
        problem,
        "column 'blob' is bytea, which filters cannot compare"
    );
    let error = check_filter("where", &tree_of_column(), None, now()).unwrap_err();
    assert!(error.problem.contains("businessTable"), "{error}");
}

fn tree_of_column() -> FilterNode {
    tree(json!({"column": "amount", "op": "IS NULL"}))
}

#[test]
fn operators_must_fit_their_field_or_column() {
    let cases = [
        (
            json!({"column": "vip", "op": "<", "value": true}),
            "where.op",
        ),
        (
            json!({"column": "amount", "op": "PREFIX", "value": "1"}),
            "where.op",
        ),
        (
            json!({"column": "doc", "op": "=", "value": {"a": 1}}),
            "where.op",
        ),
        (
            json!({"column": "amount", "path": ["a"], "op": "=", "value": 1}),
            "where.path",
        ),
        (
            json!({"column": "doc", "path": ["a"], "op": "<", "value": 1}),
            "where.op",
        ),
        (
            json!({"column": "doc", "path": ["a'b"], "op": "=", "value": 1}),
            "where.path[0]",
        ),
        (
            json!({"column": "doc", "path": [], "op": "=", "value": 1}),
            "where.path",
        ),
        (
            json!({"field": "paused", "op": "IN", "values": [true]}),
            "where.op",
        ),
        (json!({"field": "status", "op": "IS NULL"}), "where.op"),
        (
            json!({"field": "currentStateId", "op": "!=", "value": "s"}),
            "where.op",
        ),
        (json!({"column": "amount", "op": "="}), "where.value"),
        (
            json!({"column": "amount", "op": "IS NULL", "value": 1}),
            "where.value",
        ),
        (
            json!({"column": "amount", "op": "IN", "value": 1}),
            "where.value",
        ),
        (
            json!({"column": "amount", "op": "IN", "values": []}),
            "where.values",
        ),
        (
            json!({"column": "amount", "op": "=", "values": [1]}),
            "where.values",
        ),
        (
            json!({"column": "amount", "op": "IN", "values": [1, null]}),
            "where.values[1]",
        ),
        (
            json!({"column": "amount", "op": "CONTAINS", "value": "1"}),
            "where.op",
        ),
        (
            json!({"column": "doc", "path": ["a"], "op": "SUFFIX", "value": 1}),
            "where.value",
        ),
        (
            json!({"field": "status", "op": "SUFFIX", "value": "ING"}),
            "where.op",
        ),
        (
            json!({"field": "parked", "op": "IN", "values": [true]}),
            "where.op",
        ),
        (
            json!({"field": "backingOff", "op": "=", "value": "yes"}),
            "where.value",
        ),
        (
            json!({"field": "waitingOnTimer", "op": "IS NULL"}),
            "where.op",
        ),
        (
            json!({"field": "waitingOnQueue", "op": "!=", "value": "q"}),
            "where.op",
        ),
        (
            json!({"field": "waitingOnQueue", "op": "=", "value": 1}),
            "where.value",
        ),
        (
            json!({"field": "deploymentVersion", "op": "<", "value": "v2"}),
            "where.op",
        ),
        (
            json!({"field": "deploymentName", "op": "PREFIX", "value": "o"}),
            "where.op",
        ),
        (
            json!({"field": "startTime", "op": ">", "value": "-1 hour"}),
            "where.value",
        ),
        (
            json!({"field": "closeTime", "op": ">", "value": "-1w"}),
            "where.value",
        ),
    ];
    for (tree, field) in cases {
        let (found, problem) = refused(tree.clone());
        assert_eq!(found, field, "{tree}: {problem}");
    }
}

#[test]
fn the_newer_fields_say_what_they_take() {
    let (_, problem) = refused(json!({"field": "waitingOnQueue", "op": "!=", "value": "q"}));
    assert_eq!(
        problem,
        "'!=' does not apply to field 'waitingOnQueue' (it takes: =, IN)"
    );
    let (_, problem) = refused(json!({"field": "parked", "op": "=", "value": 1}));
    assert_eq!(
        problem,
        "field 'parked': expected a boolean, found an integer"
    );
    let (_, problem) = refused(json!({"field": "startTime", "op": ">", "value": "-1w"}));
    assert!(
        problem.starts_with("field 'startTime': '-1w' is not a duration from now"),
        "{problem}"
    );
    let (_, problem) =
        refused(json!({"column": "doc", "path": ["a"], "op": "CONTAINS", "value": [1]}));
    assert_eq!(
        problem,
        "'CONTAINS' on a JSON path takes a string, found an array"
    );
    for ok in [
        json!({"field": "parked", "op": "=", "value": true}),
        json!({"field": "backingOff", "op": "!=", "value": false}),
        json!({"field": "waitingOnTimer", "op": "=", "value": true}),
        json!({"field": "waitingOnQueue", "op": "IN", "values": ["a", "b"]}),
        json!({"field": "deploymentName", "op": "IS NULL"}),
        json!({"field": "deploymentVersion", "op": "IN", "values": ["v1"]}),
        json!({"field": "processId", "op": "CONTAINS", "value": "50%"}),
        json!({"column": "note", "op": "SUFFIX", "value": "_off"}),
    ] {
        assert!(check(ok.clone()).is_ok(), "{ok}");
    }
}

#[test]
fn relative_times_count_from_the_database_clock() {
    let checked = check(json!({"and": [
        {"field": "startTime", "op": ">=", "value": "-1h"},
        {"field": "closeTime", "op": "<", "value": "+30m"}
    ]}))
    .unwrap();
    let Checked::All(all) = checked else {
        panic!("{checked:?}")
    };
    let compared = |node: &Checked| match node {
        Checked::Test(Condition {
            test: Test::Compare(_, TypedValue::Instant(at)),
            ..
        }) => *at,
        other => panic!("{other:?}"),
    };
    assert_eq!(compared(&all[0]), now() - TimeDelta::hours(1));
    assert_eq!(compared(&all[1]), now() + TimeDelta::minutes(30));
}

#[test]
fn text_matches_keep_the_text_as_given() {
    let like = |value: Value| match check(value.clone()).unwrap() {
        Checked::Test(condition) => (condition.subject, condition.test),
        other => panic!("{value}: {other:?}"),
    };
    let (_, test) = like(json!({"column": "note", "op": "CONTAINS", "value": "50%"}));
    assert_eq!(test, Test::Like(TextMatch::Contains, "50%".into()));
    let (subject, test) =
        like(json!({"column": "doc", "path": ["email"], "op": "SUFFIX", "value": "@x.com"}));
    assert!(matches!(subject, Subject::JsonPath { .. }), "{subject:?}");
    assert_eq!(test, Test::Like(TextMatch::Suffix, "@x.com".into()));
}

#[test]
fn trees_are_bounded() {
    let mut deep = json!({"column": "amount", "op": "IS NULL"});
    for _ in 0..MAX_FILTER_DEPTH {
        deep = json!({"not": deep});
    }
    let (field, problem) = refused(deep);
    assert_eq!(field, format!("where{}", ".not".repeat(MAX_FILTER_DEPTH)));
    assert!(problem.contains("deeper than 8"), "{problem}");
    let wide: Vec<Value> = (0..MAX_FILTER_NODES)
        .map(|i| json!({"column": "amount", "op": "=", "value": i}))
        .collect();
    let (field, problem) = refused(json!({ "or": wide }));
    assert_eq!(field, format!("where.or[{}]", MAX_FILTER_NODES - 1));
    assert!(problem.contains("more than 100 nodes"), "{problem}");
    let many: Vec<i64> = (0..=MAX_IN_VALUES as i64).collect();
    let (field, _) = refused(json!({"column": "amount", "op": "IN", "values": many}));
    assert_eq!(field, "where.values");
    let just_enough: Vec<i64> = (0..MAX_IN_VALUES as i64).collect();
    assert!(check(json!({"column": "amount", "op": "IN", "values": just_enough})).is_ok());
}

#[test]
fn groups_are_checked() {
    let group = |value: Value| serde_json::from_value::<CountGroupBy>(value).unwrap();
    let table = table();
    assert_eq!(
        check_group("groupBy", &group(json!({"field": "status"})), None).unwrap(),
        Group::Field(GroupField::Status)
    );
    assert!(check_group("groupBy", &group(json!({"column": "vip"})), Some(&table)).is_ok());
    let refused = check_group("groupBy", &group(json!({"column": "doc"})), Some(&table));
    assert_eq!(refused.unwrap_err().field, "groupBy.column");
    let refused = check_group("groupBy", &group(json!({"column": "nope"})), Some(&table));
    assert!(refused.is_err());
}

#[test]
fn priorities_are_numbers_from_one_to_five() {
    let checked = check(json!({"field": "priority", "op": "<=", "value": 2})).unwrap();
    let Checked::Test(condition) = &checked else {
        panic!("{checked:?}")
    };
    assert_eq!(
        condition.test,
        Test::Compare(FilterOp::Le, TypedValue::Int(2))
    );
    assert_eq!(
        refused(json!({"field": "priority", "op": "=", "value": 0})),
        (
            "where.value".to_string(),
            "priority 0 does not exist (1, claimed first, to 5)".to_string()
        )
    );
    assert_eq!(
        refused(json!({"field": "priority", "op": "=", "value": "1"})).0,
        "where.value"
    );
}
