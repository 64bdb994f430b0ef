//! Input limits and strict requests: every limit (`[limits]`) answers 400 naming the field
//! and the limit, unknown fields and wrong shapes are refused, worker answers over the
//! value limits fail the attempt, and none of it changes the database.

use std::time::Duration;

use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use xdb_integration_tests::processes::park::ParkProcess;
use xdb_integration_tests::processes::raw_worker::{self, INITIAL_NOTE};
use xdb_integration_tests::{Database, EnvOptions, XdbTestEnv};
use xdb_protocol::Limits;
use xdb_sdk::protocol::*;

use crate::common::*;

const JSON: Option<&str> = Some("application/json");

/// Small limits, so that each is reached cheaply; the defaults are unit-tested.
fn small_limits() -> Limits {
    Limits {
        max_id_chars: 32,
        max_worker_url_chars: 64,
        max_attribute_value_bytes: 1024,
        max_queue_message_bytes: 2048,
        max_page_size: 50,
    }
}

/// Posts `body` and asserts a 400 whose message names each of `mentions`.
async fn assert_refused(env: &XdbTestEnv, path: &str, body: &Value, mentions: &[&str]) {
    let (status, error) = post_raw(env, path, body.to_string(), JSON).await;
    assert_eq!(
        (status, &error["subType"]),
        (400, &json!("INVALID_REQUEST")),
        "{path} {body}: {error}"
    );
    let message = error["message"].as_str().unwrap_or_default();
    for mention in mentions {
        assert!(
            message.contains(mention),
            "{path}: {message:?} lacks {mention:?}"
        );
    }
    assert!(
        message.len() < 500,
        "the message echoes the value: {message}"
    );
}

fn start_body(process_id: &str) -> Value {
    json!({"processId": process_id, "processType": "T", "workerUrl": "http://127.0.0.1:9"})
}

async fn each_limit_is_400_naming_the_field_and_changes_nothing(db: Database) {
    let options = EnvOptions {
        limits: small_limits(),
        ..Default::default()
    };
    let mut env = XdbTestEnv::start_with(db, options).await;
    let worker = serve(&mut env, &ParkProcess).await;
    start(&env, &ParkProcess, &worker, "parked", Default::default())
        .await
        .unwrap();
    // Let the parked process settle (its waitUntil done), so nothing else writes.
    for _ in 0..100 {
        if env.row_counts().await.contains(&("xdb_sys_tasks", 0)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let before = env.row_counts().await;
    assert!(before.contains(&("xdb_sys_tasks", 0)), "{before:?}");
    let long_id = "i".repeat(33);
    let id_cases = [
        (paths::START, start_body(&long_id), "processId"),
        (
            paths::START,
            json!({"processId": "p", "processType": long_id, "workerUrl": "http://w"}),
            "processType",
        ),
        (
            paths::START,
            json!({"processId": "p", "processType": "T", "workerUrl": "http://w",
                   "startStateId": long_id}),
            "startStateId",
        ),
        (
            paths::START,
            json!({"processId": "p", "processType": "T",
                   "workerUrl": format!("http://{}", "w".repeat(58))}),
            "workerUrl",
        ),
        (
            paths::PUBLISH_TO_LOCAL_QUEUE,
            json!({"processId": "parked", "messages": [{"queueName": long_id}]}),
            "messages[0].queueName",
        ),
        (
            paths::PUBLISH_TO_LOCAL_QUEUE,
            json!({"processId": "parked", "messages": [{"queueName": "go", "dedupId": long_id}]}),
            "messages[0].dedupId",
        ),
        (
            paths::RPC,
            json!({"processId": "parked", "rpcName": long_id}),
            "rpcName",
        ),
        (paths::DESCRIBE, json!({"processId": long_id}), "processId"),
        (paths::LIST, json!({"pageSize": 51}), "pageSize"),
        (paths::LIST, json!({"pageSize": 0}), "pageSize"),
    ];
    for (path, body, field) in &id_cases {
        assert_refused(&env, path, body, &[field]).await;
    }

    let big_value = "v".repeat(1023); // 1025 bytes as a JSON string
    let value_cases = [
        (
            paths::START,
            json!({"processId": "p", "processType": "T", "workerUrl": "http://w",
                   "processStartConfig": {"globalAttributeConfig": {
                       "tableName": "test_entity", "primaryKey": {"column": "id", "value": "e"},
                       "initialWrite": [{"column": "note", "value": big_value}]}}}),
            [
                "processStartConfig.globalAttributeConfig.initialWrite[0].value",
                "limits.max_attribute_value_bytes",
            ],
        ),
        (
            paths::START,
            json!({"processId": "p", "processType": "T", "workerUrl": "http://w",
                   "processStartConfig": {"localAttributeInitialWrite": [
                       {"key": "k", "value": {"encoding": "json", "data": "d".repeat(1025)}}]}}),
            [
                "processStartConfig.localAttributeInitialWrite[0].value.data",
                "limits.max_attribute_value_bytes",
            ],
        ),
        (
            paths::PUBLISH_TO_LOCAL_QUEUE,
            json!({"processId": "parked", "messages": [
                {"queueName": "go", "payload": {"encoding": "json", "data": "1"}},
                {"queueName": "go", "payload": {"encoding": "json", "data": "m".repeat(2049)}}]}),
            ["messages[1].payload.data", "limits.max_queue_message_bytes"],
        ),
    ];
    for (path, body, mentions) in &value_cases {
        assert_refused(&env, path, body, mentions).await;
    }
    assert_eq!(env.row_counts().await, before, "a refused request wrote");

    // At the limits, the same requests are served.
    let at_limit = "i".repeat(32);
    let (status, answer) =
        post_raw(&env, paths::START, start_body(&at_limit).to_string(), JSON).await;
    assert_eq!(status, 200, "{answer}");
    let body = json!({"processId": "parked", "messages": [
        {"queueName": "other", "payload": {"encoding": "json", "data": "m".repeat(2048)}}]});
    let (status, answer) =
        post_raw(&env, paths::PUBLISH_TO_LOCAL_QUEUE, body.to_string(), JSON).await;
    assert_eq!(status, 200, "{answer}");
    let (status, answer) =
        post_raw(&env, paths::LIST, json!({"pageSize": 50}).to_string(), JSON).await;
    assert_eq!(status, 200, "{answer}");

    // The served document states the limits this instance enforces.
    let document: Value = reqwest::get(format!("{}{}", env.api_url(), paths::OPENAPI))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let schemas = &document["components"]["schemas"];
    assert_eq!(
        schemas["ProcessExecutionStartRequest"]["properties"]["processId"]["maxLength"],
        32
    );
    assert_eq!(
        schemas["ProcessExecutionListRequest"]["properties"]["pageSize"]["maximum"],
        50
    );
    env.shutdown().await;
}

async fn unknown_fields_are_refused_naming_the_field(db: Database) {
    let env = XdbTestEnv::start(db).await;
    let cases = [
        // The typo the issue names: local attributes that would silently not be written.
        (
            paths::START,
            json!({"processId": "p", "processType": "T", "workerUrl": "http://w",
                   "processStartConfig": {"localAttributes": [
                       {"key": "k", "value": {"encoding": "json", "data": "1"}}]}}),
            "processStartConfig: unknown field 'localAttributes'",
        ),
        (
            paths::START,
            json!({"processId": "p", "processType": "T", "workerUrl": "http://w",
                   "startState": "S"}),
            "unknown field 'startState'",
        ),
        (
            paths::START,
            json!({"processId": "p", "processType": "T", "workerUrl": "http://w",
                   "startStateId": "S", "startStateConfig": {"skipWaitUtil": true}}),
            "startStateConfig: unknown field 'skipWaitUtil'",
        ),
        (
            paths::PUBLISH_TO_LOCAL_QUEUE,
            json!({"processId": "p", "messages": [{"queueName": "q", "paylod": null}]}),
            "messages[0]: unknown field 'paylod'",
        ),
        (
            paths::LIST,
            json!({"filter": {"processTyp": "T"}}),
            "filter: unknown field 'processTyp'",
        ),
        (
            paths::STOP,
            json!({"processId": "p", "stop_type": "FAIL"}),
            "unknown field 'stop_type'",
        ),
    ];
    for (path, body, message) in &cases {
        assert_refused(&env, path, body, &[message]).await;
    }
    assert_nothing_written(&env).await;
    env.shutdown().await;
}

async fn arrays_and_wrong_types_for_objects_are_refused(db: Database) {
    let env = XdbTestEnv::start(db).await;
    let cases = [
        (paths::LIST, json!({"filter": []}), "filter"),
        (
            paths::LIST,
            json!({"filter": {"status": []}}),
            "filter.status",
        ),
        (
            paths::START,
            json!({"processId": "p", "processType": "T", "workerUrl": "http://w",
                   "processStartConfig": []}),
            "processStartConfig",
        ),
        (
            paths::START,
            json!({"processId": "p", "processType": "T", "workerUrl": "http://w",
                   "startStateId": "S", "startStateConfig": ["S"]}),
            "startStateConfig",
        ),
        (
            paths::START,
            json!({"processId": "p", "processType": "T", "workerUrl": "http://w",
                   "startStateId": "S", "startStateInput": ["json", "1"]}),
            "startStateInput",
        ),
        (
            paths::PUBLISH_TO_LOCAL_QUEUE,
            json!({"processId": "p", "messages": {"queueName": "q"}}),
            "messages",
        ),
        (
            paths::PUBLISH_TO_LOCAL_QUEUE,
            json!({"processId": "p", "messages": [["q"]]}),
            "messages[0]",
        ),
        // Found by schemathesis: the document says int32, serde took any u32 (and the
        // engine then wrapped the timeout into a negative one).
        (
            paths::START,
            json!({"processId": "p", "processType": "T", "workerUrl": "http://w",
                   "startStateId": "S",
                   "startStateConfig": {"waitUntilApiTimeoutSeconds": 2_147_483_648u64}}),
            "startStateConfig.waitUntilApiTimeoutSeconds",
        ),
        (
            paths::START,
            json!({"processId": "p", "processType": "T", "workerUrl": "http://w",
                   "processStartConfig": {"timeoutSeconds": 4_000_000_000u64}}),
            "processStartConfig.timeoutSeconds",
        ),
    ];
    for (path, body, field) in &cases {
        assert_refused(&env, path, body, &[field]).await;
    }
    assert_nothing_written(&env).await;
    env.shutdown().await;
}

async fn assert_nothing_written(env: &XdbTestEnv) {
    let counts = env.row_counts().await;
    assert!(
        counts.iter().all(|(_, n)| *n == 0),
        "rows written: {counts:?}"
    );
}

/// A worker whose execute and RPC answers write `column` with `value` and publish
/// `payload` to a local queue.
fn oversize_worker(global: Value, local_data: &str, payload: &str) -> Router {
    let answer = json!({
        "writes": {
            "globalAttributes": [{"column": "note", "value": global}],
            "localAttributes": [{"key": "k", "value": {"encoding": "json", "data": local_data}}],
        },
        "publishToLocalQueue": [{"queueName": "q", "payload": {"encoding": "json", "data": payload}}],
    });
    let mut execute = answer.clone();
    execute["stateDecision"] =
        json!({"threadCloseDecision": {"closeType": "GRACEFUL_COMPLETE_PROCESS"}});
    Router::new()
        .route(
            paths::WORKER_EXECUTE,
            post(move || {
                let execute = execute.clone();
                async move { Json(execute) }
            }),
        )
        .route(
            paths::WORKER_RPC,
            post(move || {
                let answer = answer.clone();
                async move { Json(answer) }
            }),
        )
}

async fn worker_answers_over_the_value_limits_fail_and_change_nothing(db: Database) {
    let options = EnvOptions {
        limits: small_limits(),
        ..Default::default()
    };
    let mut env = XdbTestEnv::start_with(db, options).await;
    let fits = "x".repeat(1000);
    let cases = [
        (
            "global",
            json!("g".repeat(1023)),
            fits.as_str(),
            fits.as_str(),
            "writes.globalAttributes[0].value",
        ),
        (
            "local",
            json!(fits),
            &*"l".repeat(1025),
            fits.as_str(),
            "writes.localAttributes[0].value.data",
        ),
        (
            "queue",
            json!(fits),
            fits.as_str(),
            &*"q".repeat(2049),
            "publishToLocalQueue[0].payload.data",
        ),
    ];
    for (name, global, local, payload, field) in cases {
        let url = env
            .start_worker(oversize_worker(global, local, payload))
            .await;
        let entity = format!("entity-{name}");
        // A state whose execute answers over the limit: both attempts fail, the process
        // fails, the user's row keeps its initial write.
        let pid = format!("state-{name}");
        env.client
            .start(&raw_worker::start_request(&pid, &url, &entity))
            .await
            .expect("start");
        let done = env
            .client
            .wait_for_process_completion(&pid, Duration::from_secs(15))
            .await
            .unwrap();
        assert_eq!(done.status, ProcessStatus::Failed, "{name}: {done:?}");
        let details = done.failure.and_then(|f| f.details).unwrap_or_default();
        assert!(details.contains(field), "{name}: {details}");
        assert_eq!(
            env.entity_row(&entity).await.unwrap().note.as_deref(),
            Some(INITIAL_NOTE),
            "{name}: the over-limit answer wrote"
        );

        // An RPC answered over the limit: 424 naming the limit, nothing written.
        let pid = format!("rpc-{name}");
        let mut request = raw_worker::start_request(&pid, &url, &format!("rpc-{entity}"));
        request.start_state_id = None;
        env.client.start(&request).await.expect("start");
        let before = env.row_counts().await;
        let body = json!({"processId": pid, "rpcName": "write"});
        let (status, error) = post_raw(&env, paths::RPC, body.to_string(), JSON).await;
        assert_eq!(status, 424, "{name}: {error}");
        assert!(
            error["workerError"]
                .as_str()
                .is_some_and(|e| e.contains(field)),
            "{name}: {error}"
        );
        assert_eq!(
            env.row_counts().await,
            before,
            "{name}: the refused RPC wrote"
        );
        assert_eq!(
            env.entity_row(&format!("rpc-{entity}"))
                .await
                .unwrap()
                .note
                .as_deref(),
            Some(INITIAL_NOTE)
        );
    }
    env.shutdown().await;
}

both_databases!(
    each_limit_is_400_naming_the_field_and_changes_nothing,
    unknown_fields_are_refused_naming_the_field,
    arrays_and_wrong_types_for_objects_are_refused,
    worker_answers_over_the_value_limits_fail_and_change_nothing,
);
