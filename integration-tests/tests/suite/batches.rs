//! Batch operations and idempotent requests on real services and databases: a batch
//! applies its operation to exactly the executions its filter selects, skipping those it
//! does not apply to, with exact counts; a request sent again with its request id is
//! answered from the first one's receipt, never done twice.

use std::time::Duration;

use serde_json::{json, Value};
use xdb_integration_tests::{eventually, Database, EnvOptions, XdbTestEnv};
use xdb_protocol::paths;

use crate::common::*;
use crate::query::{order_env, PROCESS_TYPE, TABLE};

both_databases!(
    a_batch_handles_each_selected_execution_once_with_exact_counts,
    a_batch_is_cancelled_and_listed,
    a_request_sent_again_is_answered_from_its_receipt,
    a_new_batch_wakes_the_batch_drivers,
);

/// How long a batch may take in these tests.
const BATCH_DEADLINE: Duration = Duration::from_secs(60);

/// Starts `count` executions of the order type with no state running (no worker call),
/// `order-<i>` with `amount` = i; answers their execution ids.
pub(crate) async fn start_idle_orders(env: &XdbTestEnv, worker: &str, count: usize) -> Vec<String> {
    let mut ids = Vec::with_capacity(count);
    for i in 0..count {
        let (status, body) = call(
            env,
            paths::START,
            json!({
                "processId": format!("order-{i}"),
                "processType": PROCESS_TYPE,
                "workerUrl": worker,
                "processStartConfig": {"globalAttributeConfig": {
                    "tableName": TABLE,
                    "primaryKey": {"column": "id", "value": format!("order-{i}")},
                    "initialWrite": [{"column": "amount", "value": i}],
                }},
            }),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        ids.push(body["processExecutionId"].as_str().unwrap().to_owned());
    }
    ids
}

async fn describe_batch(env: &XdbTestEnv, batch_id: &str) -> Value {
    let (status, body) = call(env, paths::BATCH_DESCRIBE, json!({ "batchId": batch_id })).await;
    assert_eq!(status, 200, "{body}");
    body
}

async fn wait_closed(env: &XdbTestEnv, batch_id: &str) -> Value {
    eventually("the batch to close", BATCH_DEADLINE, || async {
        describe_batch(env, batch_id).await["batch"]["status"] != "RUNNING"
    })
    .await;
    describe_batch(env, batch_id).await
}

async fn status_counts(env: &XdbTestEnv, filter: Value) -> Value {
    let (status, body) = call(
        env,
        paths::COUNT,
        json!({"processType": PROCESS_TYPE, "businessTable": {"tableName": TABLE,
                "primaryKeyColumn": "id"}, "where": filter, "groupBy": {"field": "status"}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body
}

/// A TERMINATE batch over `amount >= 20` of 40 executions, 5 of them stopped before:
/// 15 done, 5 skipped (not running), the 20 others untouched; a second walk of the same
/// batch id (the same request id) starts nothing new.
async fn a_batch_handles_each_selected_execution_once_with_exact_counts(db: Database) {
    let (env, worker, _service) = order_env(db, EnvOptions::default()).await;
    let ids = start_idle_orders(&env, &worker, 40).await;
    for i in 20..25 {
        let stop = json!({"processId": format!("order-{i}")});
        let (status, body) = call(&env, paths::STOP, stop).await;
        assert_eq!(status, 200, "{body}");
    }
    let selection = json!({"column": "amount", "op": ">=", "value": 20});
    let start = json!({
        "requestId": "batch-terminate-1",
        "operation": "TERMINATE",
        "processType": PROCESS_TYPE,
        "businessTable": {"tableName": TABLE, "primaryKeyColumn": "id"},
        "where": selection,
        "ratePerSecond": 200,
        "reason": "cleanup",
        "identity": "ops@test",
    });
    let (status, started) = call(&env, paths::BATCH_START, start.clone()).await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["expected"], 20, "{started}");
    let batch_id = started["batchId"].as_str().unwrap().to_owned();

    let described = wait_closed(&env, &batch_id).await;
    let batch = &described["batch"];
    assert_eq!(batch["status"], "COMPLETED", "{described}");
    assert_eq!(
        (
            &batch["matched"],
            &batch["done"],
            &batch["skipped"],
            &batch["failed"]
        ),
        (&json!(20), &json!(15), &json!(5), &json!(0)),
        "{described}"
    );
    let not_done = described["notDone"].as_array().unwrap();
    assert_eq!(not_done.len(), 5, "{described}");
    for item in not_done {
        assert_eq!(item["outcome"], "SKIPPED", "{item}");
        assert!(ids[20..25].contains(&item["processExecutionId"].as_str().unwrap().to_owned()));
        assert!(
            item["reason"].as_str().unwrap().contains("not running"),
            "{item}"
        );
    }
    let counts = status_counts(&env, json!({"and": []})).await;
    assert_eq!(counts["count"], 40);
    let groups: Vec<(String, u64)> = counts["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["value"].as_str().unwrap().to_owned(),
                g["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(groups.contains(&("TERMINATED".to_owned(), 20)), "{counts}");
    assert!(groups.contains(&("RUNNING".to_owned(), 20)), "{counts}");
    let untouched = status_counts(&env, json!({"column": "amount", "op": "<", "value": 20})).await;
    assert_eq!(
        untouched["groups"][0],
        json!({"value": "RUNNING", "count": 20})
    );
    // The execution says why it was stopped.
    let (_, described) = call(&env, paths::DESCRIBE, json!({"processId": "order-30"})).await;
    assert_eq!(described["failure"]["details"], "cleanup", "{described}");

    // The same request again: the same batch, nothing new.
    let (status, again) = call(&env, paths::BATCH_START, start.clone()).await;
    assert_eq!((status, &again), (200, &started));
    let mut changed = start.clone();
    changed["ratePerSecond"] = json!(10);
    let (status, conflict) = call(&env, paths::BATCH_START, changed).await;
    assert_eq!(
        (status, &conflict["subType"]),
        (409, &json!("REQUEST_ID_CONFLICT")),
        "{conflict}"
    );
    let (_, listed) = call(&env, paths::BATCH_LIST, json!({})).await;
    assert_eq!(listed["batches"].as_array().unwrap().len(), 1, "{listed}");
}

/// A slow batch is cancelled part way: it stops, what it did stays done, and the list
/// shows it; bad batch requests are refused with the field named.
async fn a_batch_is_cancelled_and_listed(db: Database) {
    let (env, worker, _service) = order_env(db, EnvOptions::default()).await;
    start_idle_orders(&env, &worker, 30).await;
    let (status, started) = call(
        &env,
        paths::BATCH_START,
        json!({"operation": "PAUSE", "processType": PROCESS_TYPE, "ratePerSecond": 2}),
    )
    .await;
    assert_eq!(
        (status, &started["expected"]),
        (200, &json!(30)),
        "{started}"
    );
    let batch_id = started["batchId"].as_str().unwrap().to_owned();
    eventually(
        "the batch to pause a first execution",
        BATCH_DEADLINE,
        || async { describe_batch(&env, &batch_id).await["batch"]["done"].as_u64() >= Some(1) },
    )
    .await;
    let (status, cancelled) = call(
        &env,
        paths::BATCH_CANCEL,
        json!({"batchId": batch_id, "reason": "wrong selection", "identity": "ops@test"}),
    )
    .await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["batch"]["status"], "CANCELLED", "{cancelled}");
    assert!(cancelled["batch"]["error"]
        .as_str()
        .unwrap()
        .contains("ops@test: wrong selection"));
    // What it did stays done, counted exactly once its driver saw the cancel (within
    // its page in hand); it does no more.
    let paused = || async {
        let (_, body) = call(
            &env,
            paths::COUNT,
            json!({"where": {"field": "paused", "op": "=", "value": true}}),
        )
        .await;
        body["count"].as_u64().unwrap()
    };
    eventually("the counts to settle", BATCH_DEADLINE, || async {
        let done = describe_batch(&env, &batch_id).await["batch"]["done"].as_u64();
        done == Some(paused().await)
    })
    .await;
    let after_cancel = paused().await;
    assert!((1..30).contains(&after_cancel), "{after_cancel} paused");
    let (status, listed) = call(&env, paths::BATCH_LIST, json!({"status": "CANCELLED"})).await;
    assert_eq!(status, 200);
    assert_eq!(
        listed["batches"][0]["batchId"],
        batch_id.as_str(),
        "{listed}"
    );
    let (_, none) = call(&env, paths::BATCH_LIST, json!({"status": "RUNNING"})).await;
    assert_eq!(none["batches"], json!([]), "{none}");

    for (bad, field) in [
        (
            json!({"operation": "PAUSE", "ratePerSecond": 0}),
            "ratePerSecond",
        ),
        (json!({"operation": "RESET"}), "reset"),
        (
            json!({"operation": "PAUSE", "messages": [{"queueName": "q"}]}),
            "messages",
        ),
        (
            json!({"operation": "MOVE_TO_DEPLOYMENT", "moveTo": {"name": "a", "version": "1"}}),
            "processType",
        ),
        (
            json!({"operation": "PAUSE", "where": {"column": "amount", "op": "=", "value": 1}}),
            "processType",
        ),
        (
            json!({"operation": "PAUSE", "requestId": "no spaces"}),
            "requestId",
        ),
    ] {
        let (status, body) = call(&env, paths::BATCH_START, bad.clone()).await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(
            body["message"].as_str().unwrap().contains(field),
            "{bad}: {body}"
        );
    }
    let (status, body) = call(
        &env,
        paths::BATCH_DESCRIBE,
        json!({"batchId": "0190a6f0-0000-7000-8000-000000000000"}),
    )
    .await;
    assert_eq!((status, &body["subType"]), (404, &json!("BATCH_NOT_FOUND")));
}

/// Start, stop, pause and publish sent twice with one request id do it once and answer
/// the same; the id reused for another request is a 409 naming the first.
async fn a_request_sent_again_is_answered_from_its_receipt(db: Database) {
    let (env, worker, _service) = order_env(db, EnvOptions::default()).await;
    let start = json!({
        "requestId": "start-1",
        "processId": "twice",
        "processType": PROCESS_TYPE,
        "workerUrl": worker,
        "processStartConfig": {"idReusePolicy": "TERMINATE_IF_RUNNING"},
    });
    let (status, first) = call(&env, paths::START, start.clone()).await;
    assert_eq!(status, 200, "{first}");
    let (status, second) = call(&env, paths::START, start.clone()).await;
    assert_eq!(
        (status, &second),
        (200, &first),
        "the same execution, not a new one"
    );
    let (_, listed) = call(
        &env,
        paths::COUNT,
        json!({"where": {"field": "processId", "op": "=", "value": "twice"}}),
    )
    .await;
    assert_eq!(listed["count"], 1, "{listed}");

    let mut other = start.clone();
    other["processId"] = json!("another");
    let (status, conflict) = call(&env, paths::START, other).await;
    assert_eq!(
        (status, &conflict["subType"]),
        (409, &json!("REQUEST_ID_CONFLICT")),
        "{conflict}"
    );
    assert!(
        conflict["message"].as_str().unwrap().contains("start-1"),
        "{conflict}"
    );
    let (status, conflict) = call(
        &env,
        paths::PAUSE,
        json!({"requestId": "start-1", "processId": "twice"}),
    )
    .await;
    assert_eq!(
        (status, &conflict["subType"]),
        (409, &json!("REQUEST_ID_CONFLICT")),
        "{conflict}"
    );
    assert!(
        conflict["message"]
            .as_str()
            .unwrap()
            .contains("a start request"),
        "{conflict}"
    );

    let pause = json!({"requestId": "pause-1", "processId": "twice", "reason": "look"});
    let (status, paused) = call(&env, paths::PAUSE, pause.clone()).await;
    assert_eq!(status, 200, "{paused}");
    let (status, again) = call(&env, paths::PAUSE, pause).await;
    assert_eq!(
        (status, &again),
        (200, &paused),
        "not CONTROL_NOT_APPLICABLE: answered from the receipt"
    );

    let publish = json!({"requestId": "publish-1", "processId": "twice",
                         "messages": [{"queueName": "go"}]});
    for _ in 0..2 {
        let (status, body) = call(&env, paths::PUBLISH_TO_LOCAL_QUEUE, publish.clone()).await;
        assert_eq!(status, 200, "{body}");
    }
    let (_, history) = call(&env, paths::HISTORY, json!({"processId": "twice"})).await;
    let events = history["events"].as_array().unwrap();
    let published = events
        .iter()
        .filter(|e| e["eventType"] == "LOCAL_QUEUE_MESSAGES_PUBLISHED")
        .count();
    assert_eq!(published, 1, "one publish, not two: {history}");
    let pauses = events.iter().filter(|e| e["eventType"] == "PAUSED").count();
    assert_eq!(pauses, 1, "one pause, not two: {history}");

    let stop = json!({"requestId": "stop-1", "processId": "twice"});
    for _ in 0..2 {
        let (status, body) = call(&env, paths::STOP, stop.clone()).await;
        assert_eq!(
            status, 200,
            "not PROCESS_NOT_RUNNING the second time: {body}"
        );
    }
    let (status, body) = call(
        &env,
        paths::STOP,
        json!({"requestId": "stop-2", "processId": "twice"}),
    )
    .await;
    assert_eq!(
        (status, &body["subType"]),
        (409, &json!("PROCESS_NOT_RUNNING")),
        "{body}"
    );
    let (status, body) = call(
        &env,
        paths::STOP,
        json!({"requestId": "", "processId": "twice"}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
}

/// A batch starts when it is created, not at a batch driver's next poll: with the async
/// service polling ten minutes apart, a batch created after its driver's first look
/// closes well within the deadline only if its creation woke the driver (PostgreSQL's
/// NOTIFY, MariaDB's wake-up from the API service).
async fn a_new_batch_wakes_the_batch_drivers(db: Database) {
    let options = EnvOptions {
        poll_interval_ms: 600_000,
        ..EnvOptions::default()
    };
    let (env, worker, _service) = order_env(db, options).await;
    start_idle_orders(&env, &worker, 5).await;
    let start = json!({
        "operation": "TERMINATE",
        "processType": PROCESS_TYPE,
        "businessTable": {"tableName": TABLE, "primaryKeyColumn": "id"},
        "where": {"and": []},
        "ratePerSecond": 100,
    });
    let (status, started) = call(&env, paths::BATCH_START, start).await;
    assert_eq!(status, 200, "{started}");
    let batch_id = started["batchId"].as_str().unwrap().to_owned();
    let described = wait_closed(&env, &batch_id).await;
    let batch = &described["batch"];
    assert_eq!(batch["status"], "COMPLETED", "{described}");
    assert_eq!(batch["done"], 5, "{described}");
}
