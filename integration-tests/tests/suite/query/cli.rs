//! `xdb list --where` and `xdb count` as a person types them: the readable filter parsed
//! into the same tree, run against the same executions as the API tests.

use serde_json::json;
use xdb_integration_tests::{Database, EnvOptions};

use super::{fixture, order_env, start_orders, PROCESS_TYPE, TABLE};
use crate::cli::xdb_with;

both_databases!(the_cli_lists_and_counts_with_a_readable_filter);

async fn the_cli_lists_and_counts_with_a_readable_filter(db: Database) {
    let (env, url, _worker) = order_env(db, EnvOptions::default()).await;
    start_orders(&env, &url, &fixture()).await;
    let xdb = |args: Vec<&'static str>| {
        let api = env.api_url().to_string();
        async move { xdb_with(&api, None, &args).await }
    };
    let table = ["-t", PROCESS_TYPE, "--table", TABLE, "--key", "id"];
    let listed = |run: &crate::cli::Run| -> Vec<String> {
        run.json()["executions"]
            .as_array()
            .expect("executions")
            .iter()
            .map(|e| e["processId"].as_str().unwrap().to_string())
            .collect()
    };

    // Business columns, a JSON path, an execution field and a relative time at once.
    let mut args = vec![
        "--output",
        "json",
        "list",
        "--where",
        "amount >= 10 and doc->>'tier' = 'gold' and execution.status = 'running'",
        "--since",
        "1h",
    ];
    args.extend(table);
    let run = xdb(args).await.expect(0);
    assert_eq!(listed(&run), ["order-1"], "{}", run.stdout);

    let mut args = vec![
        "--output",
        "json",
        "list",
        "--where",
        "note like 'ap%' or amount is null",
    ];
    args.extend(table);
    let run = xdb(args).await.expect(0);
    assert_eq!(
        listed(&run),
        ["order-3", "order-2", "order-1"],
        "{}",
        run.stdout
    );

    // LIKE patterns as text operators: ends with, contains (with a JSON path too), and
    // a time relative to now.
    let mut args = vec![
        "--output",
        "json",
        "list",
        "--where",
        "(note like '%ot' or doc->>'tier' like '%ilv%') and execution.startTime >= '-1h'",
    ];
    args.extend(table);
    let run = xdb(args).await.expect(0);
    assert_eq!(listed(&run), ["order-2"], "{}", run.stdout);
    let mut args = vec![
        "--output",
        "json",
        "list",
        "--where",
        "note like '%an%' or doc->>'tier' like 'gol%'",
    ];
    args.extend(table);
    let run = xdb(args).await.expect(0);
    assert_eq!(
        listed(&run),
        ["order-4", "order-3", "order-1"],
        "{}",
        run.stdout
    );

    // Counts: a total, and groups by the execution's status and by a business column.
    let mut args = vec!["--output", "json", "count", "--where", "vip = true"];
    args.extend(table);
    assert_eq!(xdb(args).await.expect(0).json()["count"], 2);
    let mut args = vec!["--output", "json", "count", "--group-by", "status"];
    args.extend(table);
    let groups = xdb(args).await.expect(0).json();
    assert_eq!(groups["count"], 4, "{groups}");
    assert_eq!(
        groups["groups"],
        json!([{"value": "RUNNING", "count": 2}, {"value": "TERMINATED", "count": 2}]),
        "{groups}"
    );
    let mut args = vec!["count", "--group-by", "vip"];
    args.extend(table);
    let printed = xdb(args).await.expect(0).stdout;
    let mut lines: Vec<Vec<&str>> = printed
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines.first(), Some(&vec!["GROUP", "COUNT"]), "{printed}");
    assert_eq!(lines.last(), Some(&vec!["TOTAL", "4"]), "{printed}");
    // MariaDB's BOOLEAN is TINYINT(1): its groups read 1 and 0. Ties may come in either
    // order.
    let (yes, no) = match db {
        Database::MySql => ("1", "0"),
        Database::Postgres => ("true", "false"),
    };
    let mut groups = lines.drain(1..lines.len() - 1).collect::<Vec<_>>();
    assert_eq!(groups.first(), Some(&vec![yes, "2"]), "{printed}");
    groups.sort();
    assert_eq!(
        groups,
        [vec!["(null)", "1"], vec![no, "1"], vec![yes, "2"]],
        "{printed}"
    );

    // What the tree cannot say is refused by the CLI, naming it; nothing is sent.
    let run = xdb(vec!["list", "--where", "note like 'a%n'"]).await;
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("only 'abc%'"), "{}", run.stderr);
    let run = xdb(vec![
        "list",
        "--where",
        "amount = 1; drop table query_orders",
    ])
    .await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("unexpected ';'"), "{}", run.stderr);
    // And what the service refuses comes back as its 400.
    let mut args = vec!["list", "--where", "no_such_column = 1"];
    args.extend(table);
    let run = xdb(args).await;
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("no_such_column"), "{}", run.stderr);
    env.shutdown().await;
}
