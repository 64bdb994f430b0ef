//! Reprioritize through the API, the async service and a real worker: with 200 starts
//! of priority 5 waiting, one more of priority 5 made after them all and then
//! reprioritized to 1 runs among the first, where by its start's order it would run
//! last. In Pulsar mode the reordered task travels again as a change event, placed by
//! its new priority. A batch reprioritizes exactly what its filter selects; bad changes
//! are refused, naming the field, and change nothing.

use std::time::Duration;

use serde_json::json;
use xdb_config::QueueMode;
use xdb_integration_tests::{eventually, Database, EnvOptions};
use xdb_protocol::{
    paths, ProcessExecutionControlRequest, ProcessExecutionDescribeRequest, Reprioritization,
};
use xdb_sdk::*;

use crate::batches::start_idle_orders;
use crate::common::*;
use crate::priorities::{priority_5_backlog, BACKLOG, IN_FLIGHT};
use crate::query::{order_env, PROCESS_TYPE, TABLE};

both_databases!(
    a_reprioritized_start_overtakes_the_backlog,
    a_batch_reprioritizes_what_its_filter_selects_and_bad_changes_are_refused
);
pulsar_mode_too!(a_reprioritized_start_overtakes_the_backlog);

async fn a_reprioritized_start_overtakes_the_backlog(db: Database) {
    let pulsar = xdb_integration_tests::pulsar::current_queue_mode() == QueueMode::Pulsar;
    let (mut env, process, worker) = priority_5_backlog(db).await;
    let options = ProcessStartOptions::new().priority(5);
    start(&env, &process, &worker, "late", options)
        .await
        .unwrap();
    let answer = env
        .client
        .reprioritize(&ProcessExecutionControlRequest {
            process_id: "late".into(),
            reason: Some("the customer escalated".into()),
            identity: Some("on-call".into()),
            reprioritize: Some(Reprioritization {
                priority: Some(1),
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(answer.state_execution_ids.len(), 1, "{answer:?}");
    let late = env
        .client
        .describe(&ProcessExecutionDescribeRequest {
            process_id: "late".into(),
            process_execution_id: None,
        })
        .await
        .unwrap();
    assert_eq!(late.priority, 1);

    env.add_async_instance().await;
    eventually("every execution ran", Duration::from_secs(120), || async {
        process.done.len() > BACKLOG
    })
    .await;
    let order = process.done.all();
    let ran = order.iter().position(|done| done == "late").unwrap() + 1;
    println!("reprioritize-report db={db:?} pulsar={pulsar} backlog={BACKLOG} late_ran={ran}");
    // Among the first two rounds of calls (by its start's order alone: last); in Pulsar
    // mode, at the first free place once its change event came.
    let within = if pulsar { BACKLOG / 10 } else { 2 * IN_FLIGHT };
    assert!(ran <= within, "ran {ran}th: {order:?}");
    let history = env
        .client
        .history(&xdb_protocol::ProcessExecutionHistoryRequest {
            process_id: "late".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let event = history
        .events
        .iter()
        .find(|e| e.event_type == "REPRIORITIZED")
        .expect("the change is in the history");
    assert_eq!(event.details["before"]["priority"], 5, "{event:?}");
    assert_eq!(event.details["after"]["priority"], 1, "{event:?}");
    assert_eq!(event.details["identity"], "on-call", "{event:?}");
    env.shutdown().await;
}

/// Of 10 idle orders, a REPRIORITIZE batch over `amount >= 5` moves those 5 to priority 1
/// and key `vip` (weight 3), and leaves the others as they were.
async fn a_batch_reprioritizes_what_its_filter_selects_and_bad_changes_are_refused(db: Database) {
    let (env, worker, _service) = order_env(db, EnvOptions::default()).await;
    start_idle_orders(&env, &worker, 10).await;
    let describe = |process_id: String| {
        let env = &env;
        async move {
            let (status, body) =
                call(env, paths::DESCRIBE, json!({ "processId": process_id })).await;
            assert_eq!(status, 200, "{body}");
            (
                body["priority"].clone(),
                body["fairnessKey"].clone(),
                body["fairnessWeight"].clone(),
            )
        }
    };

    // Refused, naming the field, and nothing changes.
    let refusals = [
        (
            paths::REPRIORITIZE,
            json!({"processId": "order-0", "reprioritize": {"priority": 9}}),
            400,
            "reprioritize.priority",
        ),
        (
            paths::REPRIORITIZE,
            json!({"processId": "order-0", "reprioritize": {}}),
            400,
            "reprioritize",
        ),
        (
            paths::REPRIORITIZE,
            json!({"processId": "order-0", "reprioritize": {"fairnessWeight": 2}}),
            409,
            "fairnessKey",
        ),
        (
            paths::PAUSE,
            json!({"processId": "order-0", "reprioritize": {"priority": 1}}),
            400,
            "reprioritize",
        ),
        (
            paths::BATCH_START,
            json!({"operation": "REPRIORITIZE", "processType": PROCESS_TYPE}),
            400,
            "reprioritize",
        ),
        (
            paths::BATCH_START,
            json!({"operation": "TERMINATE", "processType": PROCESS_TYPE,
                   "reprioritize": {"priority": 1}}),
            400,
            "reprioritize",
        ),
        (
            paths::BATCH_START,
            json!({"operation": "REPRIORITIZE", "processType": PROCESS_TYPE,
                   "reprioritize": {"fairnessKey": "", "fairnessWeight": 2}}),
            400,
            "reprioritize.fairnessWeight",
        ),
    ];
    for (path, body, expected, field) in refusals {
        let (status, answer) = call(&env, path, body.clone()).await;
        assert_eq!(status, expected, "{body} → {answer}");
        assert!(
            answer["message"]
                .as_str()
                .unwrap_or_default()
                .contains(field),
            "{body}: the answer names {field}: {answer}"
        );
    }
    assert_eq!(
        describe("order-0".into()).await,
        (json!(3), serde_json::Value::Null, serde_json::Value::Null),
        "unchanged"
    );

    let (status, started) = call(
        &env,
        paths::BATCH_START,
        json!({
            "operation": "REPRIORITIZE",
            "processType": PROCESS_TYPE,
            "businessTable": {"tableName": TABLE, "primaryKeyColumn": "id"},
            "where": {"column": "amount", "op": ">=", "value": 5},
            "ratePerSecond": 200,
            "reason": "vip customers",
            "reprioritize": {"priority": 1, "fairnessKey": "vip", "fairnessWeight": 3},
        }),
    )
    .await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["expected"], 5, "{started}");
    let batch_id = started["batchId"].as_str().unwrap().to_owned();
    let describe_batch = || async {
        let (status, body) =
            call(&env, paths::BATCH_DESCRIBE, json!({ "batchId": batch_id })).await;
        assert_eq!(status, 200, "{body}");
        body
    };
    eventually("the batch to close", Duration::from_secs(60), || async {
        describe_batch().await["batch"]["status"] != "RUNNING"
    })
    .await;
    let described = describe_batch().await;
    let batch = &described["batch"];
    assert_eq!(batch["status"], "COMPLETED", "{described}");
    assert_eq!(
        (&batch["matched"], &batch["done"], &batch["failed"]),
        (&json!(5), &json!(5), &json!(0)),
        "{described}"
    );
    for i in 0..10 {
        let order = describe(format!("order-{i}")).await;
        if i >= 5 {
            assert_eq!(order, (json!(1), json!("vip"), json!(3)), "order-{i}");
        } else {
            assert_eq!(
                order,
                (json!(3), serde_json::Value::Null, serde_json::Value::Null),
                "order-{i}"
            );
        }
    }
    env.shutdown().await;
}
