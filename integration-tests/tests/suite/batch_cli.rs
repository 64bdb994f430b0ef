//! `xdb batch` as an operator runs it: a batch over a readable filter previewed, refused
//! without a terminal or --yes, started, followed to its end, and its exact counts read
//! back; run again with its request id, which starts nothing new; then a batch whose
//! executions are all closed, which skips each.

use xdb_integration_tests::{Database, EnvOptions};

use crate::cli::{xdb_with, Run};
use crate::query::{order_env, start_orders, Order, PROCESS_TYPE, TABLE};

both_databases!(a_batch_terminates_what_its_filter_selects_and_reports_exact_counts);

/// An order of `amount`, left running or stopped.
fn order(id: &str, amount: i64, running: bool) -> Order {
    Order {
        id: id.to_string(),
        amount: Some(amount),
        note: None,
        placed_at: None,
        vip: None,
        doc: None,
        order: None,
        running,
    }
}

async fn a_batch_terminates_what_its_filter_selects_and_reports_exact_counts(db: Database) {
    let (env, url, _worker) = order_env(db, EnvOptions::default()).await;
    // Three running orders under 10 (the batch's), one over, one under 10 but stopped.
    let orders = [
        order("batch-1", 5, true),
        order("batch-2", 7, true),
        order("batch-3", 50, true),
        order("batch-4", 3, false),
        order("batch-5", 9, true),
    ];
    start_orders(&env, &url, &orders).await;
    let api = env.api_url().to_string();
    let xdb = |args: Vec<&str>| {
        let api = api.clone();
        let args: Vec<String> = args.into_iter().map(str::to_string).collect();
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            xdb_with(&api, None, &args).await
        }
    };
    let selection = [
        "-t",
        PROCESS_TYPE,
        "--table",
        TABLE,
        "--key",
        "id",
        "--where",
        "amount < 10",
    ];
    let batches = |run: &Run| run.json()["batches"].as_array().expect("batches").clone();

    // Without a terminal to ask on and without --yes: the preview, then a refusal.
    let mut args = vec!["batch", "start", "terminate", "--status", "RUNNING"];
    args.extend(selection);
    let run = xdb(args).await.expect(2);
    assert!(
        run.stderr.contains("TERMINATE of 3 executions"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("--yes"), "{}", run.stderr);
    let listed = xdb(vec!["-o", "json", "batch", "list"]).await.expect(0);
    assert!(
        batches(&listed).is_empty(),
        "nothing started: {}",
        listed.stdout
    );

    // Confirmed: started, followed to its end, described with exact counts.
    let mut terminate = vec![
        "-o",
        "json",
        "batch",
        "start",
        "terminate",
        "--status",
        "RUNNING",
        "--yes",
        "--interval",
        "200ms",
        "--reason",
        "test orders",
        "--request-id",
        "cleanup-orders-1",
    ];
    terminate.extend(selection);
    let run = xdb(terminate.clone()).await.expect(0);
    let batch = run.json()["batch"].clone();
    assert_eq!(batch["status"], "COMPLETED", "{}", run.stdout);
    assert_eq!(batch["operation"], "TERMINATE", "{}", run.stdout);
    for (count, expected) in [
        ("expected", 3),
        ("matched", 3),
        ("done", 3),
        ("skipped", 0),
        ("failed", 0),
    ] {
        assert_eq!(batch[count], expected, "{count}: {}", run.stdout);
    }
    assert!(run.json()["notDone"].as_array().unwrap().is_empty());
    let terminate_id = batch["batchId"].as_str().expect("an id").to_string();

    // The same command with the same --request-id: the service answers the first start
    // (the same batch, done once), though the preview now counts none.
    let again = xdb(terminate).await.expect(0);
    assert!(
        again.stderr.contains("TERMINATE of 0 executions"),
        "{}",
        again.stderr
    );
    assert_eq!(again.json()["batch"]["batchId"], terminate_id.as_str());
    assert_eq!(again.json()["batch"]["done"], 3, "{}", again.stdout);
    let listed = xdb(vec!["-o", "json", "batch", "list"]).await.expect(0);
    assert_eq!(batches(&listed).len(), 1, "{}", listed.stdout);

    // What it did: only the one over 10 still runs; the four under 10 are TERMINATED.
    let count = |status: &'static str| {
        let mut args = vec!["-o", "json", "count", "--status", status];
        args.extend(&selection[..6]);
        xdb(args)
    };
    assert_eq!(count("RUNNING").await.expect(0).json()["count"], 1);
    assert_eq!(count("TERMINATED").await.expect(0).json()["count"], 4);

    // A batch over closed executions skips each, and says why.
    let mut args = vec!["-o", "json", "batch", "start", "pause", "--yes"];
    args.extend(["--interval", "200ms"]);
    args.extend(selection);
    let run = xdb(args).await.expect(0);
    let batch = run.json()["batch"].clone();
    assert_eq!(batch["status"], "COMPLETED", "{}", run.stdout);
    for (count, expected) in [("expected", 4), ("matched", 4), ("done", 0), ("skipped", 4)] {
        assert_eq!(batch[count], expected, "{count}: {}", run.stdout);
    }
    let not_done = run.json()["notDone"].as_array().unwrap().clone();
    assert_eq!(not_done.len(), 4, "{}", run.stdout);
    assert!(not_done.iter().all(|item| item["outcome"] == "SKIPPED"));

    // Both are listed, newest first, and each reads back by its id.
    let listed = xdb(vec!["-o", "json", "batch", "list"]).await.expect(0);
    let operations: Vec<String> = batches(&listed)
        .iter()
        .map(|b| b["operation"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(operations, ["PAUSE", "TERMINATE"], "{}", listed.stdout);
    let described = xdb(vec!["-o", "json", "batch", "describe", &terminate_id])
        .await
        .expect(0);
    assert_eq!(described.json()["batch"]["done"], 3, "{}", described.stdout);
    assert_eq!(
        described.json()["batch"]["request"]["reason"],
        "test orders"
    );
    let table = xdb(vec!["batch", "describe", &terminate_id])
        .await
        .expect(0);
    assert!(table.stdout.contains("COMPLETED"), "{}", table.stdout);
    xdb(vec![
        "batch",
        "describe",
        "00000000-0000-0000-0000-000000000000",
    ])
    .await
    .expect(5);
    env.shutdown().await;
}
