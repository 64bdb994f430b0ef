//! Bad input gets a clear error and changes nothing.

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{json, Value};
use xdb_integration_tests::processes::raw_worker::{self, Misbehavior, INITIAL_NOTE};
use xdb_integration_tests::{Database, EnvOptions, XdbTestEnv};
use xdb_sdk::protocol::*;

use crate::common::*;

/// A start request for a process without states, on `table`/`column` of the user's DB.
fn start_with_table(process_id: &str, table: &str, pk_column: &str, column: &str) -> Value {
    json!({
        "processId": process_id,
        "processType": "Anything",
        "workerUrl": "http://127.0.0.1:9",
        "processStartConfig": {
            "globalAttributeConfig": {
                "tableName": table,
                "primaryKey": {"column": pk_column, "value": "k1"},
                "initialWrite": [{"column": column, "value": "verified"}]
            }
        }
    })
}

async fn assert_nothing_written(env: &XdbTestEnv, what: &str) {
    let counts = env.row_counts().await;
    assert!(
        counts.iter().all(|(_, n)| *n == 0),
        "{what} wrote rows: {counts:?}"
    );
}

async fn unknown_process_id_is_404_everywhere(db: Database) {
    let env = XdbTestEnv::start(db).await;
    let c = &env.client;
    let pid = "no-such-process";
    let not_found = |r| expect_api_error(r, 404, ErrorSubType::ProcessNotFound);
    not_found(c.describe_process(pid).await.map(drop));
    not_found(
        c.stop_process(pid, ProcessExecutionStopType::Terminate, None)
            .await,
    );
    not_found(c.publish_to_local_queue(pid, "q", "m", None).await);
    not_found(
        c.wait_for_completion(&ProcessExecutionWaitForCompletionRequest {
            process_id: pid.into(),
            timeout_seconds: Some(1),
        })
        .await
        .map(drop),
    );
    not_found(
        c.history(&ProcessExecutionHistoryRequest {
            process_id: pid.into(),
            process_execution_id: None,
            ..Default::default()
        })
        .await
        .map(drop),
    );
    not_found(
        c.rpc(&ProcessExecutionRpcRequest {
            process_id: pid.into(),
            rpc_name: "verify".into(),
            input: None,
            timeout_seconds: None,
            global_attribute_loading: None,
            local_attribute_loading: None,
        })
        .await
        .map(drop),
    );
    assert_nothing_written(&env, "requests for an unknown process").await;
    env.shutdown().await;
}

async fn malformed_requests_are_400_with_a_json_error(db: Database) {
    let env = XdbTestEnv::start(db).await;
    let json_type = Some("application/json");
    let cases: Vec<(&str, &str, Option<&str>)> = vec![
        (paths::START, "{\"processId\": ", json_type),
        (paths::START, "not json at all", json_type),
        (paths::START, "{\"processId\": \"p1\"}", json_type),
        (paths::START, "[1, 2, 3]", json_type),
        (
            paths::START,
            "{\"processId\": 5, \"processType\": \"T\", \"workerUrl\": \"http://w\"}",
            json_type,
        ),
        (
            paths::START,
            "{\"processId\": \"p1\", \"processType\": \"T\", \"workerUrl\": \"http://w\"}",
            None,
        ),
        (
            paths::PUBLISH_TO_LOCAL_QUEUE,
            "{\"processId\": \"p1\"",
            json_type,
        ),
        (paths::LIST, "{\"pageSize\": -1}", json_type),
        (paths::DESCRIBE, "[\"p1\"]", json_type),
        (paths::START, "{}", Some("text/plain")),
        // PostgreSQL cannot store NUL; found by schemathesis as a 500 on every path.
        (paths::DESCRIBE, "{\"processId\": \"p\\u0000\"}", json_type),
        (
            paths::STOP,
            "{\"processId\": \"p1\", \"stopType\": \"EXPLODE\"}",
            json_type,
        ),
    ];
    for (path, body, content_type) in cases {
        let (status, error) = post_raw(&env, path, body, content_type).await;
        assert_eq!(status, 400, "{path} {body:?}: {error}");
        assert_eq!(
            error["subType"], "INVALID_REQUEST",
            "{path} {body:?}: {error}"
        );
        assert!(
            error["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{error}"
        );
    }
    // Syntactically fine, but invalid values.
    for body in [
        json!({"processId": "", "processType": "T", "workerUrl": "http://127.0.0.1:9"}),
        json!({"processId": "p\u{1}", "processType": "T", "workerUrl": "http://127.0.0.1:9"}),
        json!({"processId": "p1", "processType": "T", "workerUrl": "not a url"}),
    ] {
        let (status, error) = post_raw(&env, paths::START, body.to_string(), json_type).await;
        assert_eq!(
            (status, &error["subType"]),
            (400, &json!("INVALID_REQUEST")),
            "{body}: {error}"
        );
    }
    assert_nothing_written(&env, "malformed requests").await;
    env.shutdown().await;
}

async fn bad_table_and_column_names_are_refused_and_write_nothing(db: Database) {
    let env = XdbTestEnv::start(db).await;
    let cases = [
        ("user; DROP TABLE test_entity; --", "user_id", "status"),
        ("\"user\"", "user_id", "status"),
        ("public.user.extra", "user_id", "status"),
        ("", "user_id", "status"),
        ("user", "user_id = user_id OR 1=1 --", "status"),
        ("user", "1user_id", "status"),
        ("user", "user_id", "status\" = 'verified', source = 'x"),
        ("user", "user_id", ""),
        ("user", "user_id", &"c".repeat(64)),
    ];
    for (i, (table, pk, column)) in cases.iter().enumerate() {
        let body = start_with_table(&format!("bad-{i}"), table, pk, column);
        let (status, error) = post_raw(
            &env,
            paths::START,
            body.to_string(),
            Some("application/json"),
        )
        .await;
        assert_eq!(status, 400, "{body}: {error}");
        assert_eq!(error["subType"], "INVALID_REQUEST", "{body}: {error}");
    }
    assert_nothing_written(&env, "bad identifiers").await;

    // Valid names that do not exist: the user's database refuses, the start rolls back.
    for (i, (table, column)) in [("no_such_table", "status"), ("user", "no_such_column")]
        .iter()
        .enumerate()
    {
        let body = start_with_table(&format!("missing-{i}"), table, "user_id", column);
        let (status, error) = post_raw(
            &env,
            paths::START,
            body.to_string(),
            Some("application/json"),
        )
        .await;
        assert_eq!(status, 424, "{body}: {error}");
        assert_eq!(error["subType"], "APP_DATABASE_ERROR", "{body}: {error}");
    }
    assert_nothing_written(&env, "starts the user's database refused").await;
    // The refused start left no claim on the process id.
    let body = start_with_table("missing-1", "user", "user_id", "status");
    let (status, answer) = post_raw(
        &env,
        paths::START,
        body.to_string(),
        Some("application/json"),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        env.user_row("k1").await.unwrap().status.as_deref(),
        Some("verified")
    );
    assert_eq!(env.process_rows_of("missing-1").await.len(), 1);
    // Schema-qualified names work. The schema is PostgreSQL's `public`; on MySQL a
    // schema is a database, so the test database's own name.
    let schema = match db {
        Database::Postgres => "public",
        Database::MySql => env.db().name(),
    };
    let body = start_with_table("qualified", &format!("{schema}.test_entity"), "id", "note");
    let (status, answer) = post_raw(
        &env,
        paths::START,
        body.to_string(),
        Some("application/json"),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        env.entity_row("k1").await.unwrap().note.as_deref(),
        Some("verified")
    );
    env.shutdown().await;
}

async fn oversize_bodies_are_413(db: Database) {
    let env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            max_request_bytes: 64 * 1024,
            ..Default::default()
        },
    )
    .await;
    let big = "x".repeat(100 * 1024);
    let body = json!({
        "processId": "big",
        "processType": "T",
        "workerUrl": "http://127.0.0.1:9",
        "startStateId": "S",
        "startStateInput": {"encoding": "json", "data": serde_json::to_string(&big).unwrap()},
    });
    let (status, error) = post_raw(
        &env,
        paths::START,
        body.to_string(),
        Some("application/json"),
    )
    .await;
    assert_eq!(status, 413, "{error}");
    assert_eq!(error["subType"], "PAYLOAD_TOO_LARGE");
    // The JSON error shape, naming the limit and the setting that raises it.
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("65536 bytes") && message.contains("api.max_request_bytes"),
        "{error}"
    );
    let publish = json!({
        "processId": "big",
        "messages": [{"queueName": "q", "payload": {"encoding": "json", "data": big}}],
    });
    let (status, error) = post_raw(
        &env,
        paths::PUBLISH_TO_LOCAL_QUEUE,
        publish.to_string(),
        Some("application/json"),
    )
    .await;
    assert_eq!(status, 413, "{error}");
    assert_eq!(error["subType"], "PAYLOAD_TOO_LARGE");
    assert_nothing_written(&env, "oversize requests").await;
    env.shutdown().await;
}

async fn misbehaving_workers_are_retried_then_fail_and_write_nothing(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let cases = [
        Misbehavior::Garbage,
        Misbehavior::Http500,
        Misbehavior::WrongShape,
        Misbehavior::InvalidDecisionWithWrite,
        Misbehavior::UnknownColumnWrite,
        Misbehavior::InjectedColumnWrite,
        Misbehavior::NulInOutput,
    ];
    let case_count = cases.len() as i64;
    let mut runs = Vec::new();
    for (i, misbehavior) in cases.into_iter().enumerate() {
        let (router, calls) = raw_worker::router(misbehavior);
        let url = env.start_worker(router).await;
        let pid = format!("raw-{i}");
        let entity = format!("entity-{i}");
        let exec = env
            .client
            .start(&raw_worker::start_request(&pid, &url, &entity))
            .await
            .expect("start")
            .process_execution_id;
        runs.push((misbehavior, pid, entity, exec, calls));
    }
    for (misbehavior, pid, entity, exec, calls) in runs {
        let done = env
            .client
            .wait_for_process_completion(&pid, Duration::from_secs(15))
            .await
            .unwrap();
        assert_eq!(
            done.status,
            ProcessStatus::Failed,
            "{misbehavior:?}: {done:?}"
        );
        assert!(done.failure.is_some());
        assert_eq!(
            calls.load(Ordering::SeqCst),
            2,
            "{misbehavior:?}: two attempts"
        );
        assert_eq!(
            env.entity_row(&entity).await.unwrap().note.as_deref(),
            Some(INITIAL_NOTE),
            "{misbehavior:?} wrote to the user table"
        );
        let state = env.state_row(&exec, raw_worker::STATE_ID, 1).await.unwrap();
        assert_eq!(state.status, "FAILED", "{misbehavior:?}");
        let history = env.history_types(&exec).await;
        assert_eq!(
            history,
            [
                "PROCESS_STARTED",
                "STATE_API_FAILED",
                "STATE_FAILED",
                "PROCESS_CLOSED"
            ],
            "{misbehavior:?}"
        );
        assert!(env.tasks(&exec).await.is_empty());
    }
    // The injection attempt left the table in place.
    assert_eq!(
        env.count("SELECT count(*) FROM test_entity", &[]).await,
        case_count
    );
    env.shutdown().await;
}

/// Ids longer than the 255-byte limit must be refused as invalid (400), like other
/// invalid ids, not fail in the database (500).
async fn overlong_ids_are_400_not_500(db: Database) {
    use xdb_integration_tests::processes::park::ParkProcess;
    let mut env = XdbTestEnv::start(db).await;
    let long = "x".repeat(300);
    let json_type = Some("application/json");
    let mut failures = Vec::new();
    let body = json!({"processId": long, "processType": "T", "workerUrl": "http://127.0.0.1:9"});
    let (status, error) = post_raw(&env, paths::START, body.to_string(), json_type).await;
    if status != 400 {
        failures.push(format!("start with a 300-byte processId: {status} {error}"));
    }
    let body = json!({"processId": "p", "processType": long, "workerUrl": "http://127.0.0.1:9"});
    let (status, error) = post_raw(&env, paths::START, body.to_string(), json_type).await;
    if status != 400 {
        failures.push(format!(
            "start with a 300-byte processType: {status} {error}"
        ));
    }
    for (what, key) in [("300-byte", long.clone()), ("empty", String::new())] {
        let body = json!({"processId": "p", "processType": "T", "workerUrl": "http://127.0.0.1:9",
                          "processStartConfig": {"concurrencyKey": key}});
        let (status, error) = post_raw(&env, paths::START, body.to_string(), json_type).await;
        if status != 400
            || !error
                .to_string()
                .contains("processStartConfig.concurrencyKey")
        {
            failures.push(format!(
                "start with a {what} concurrencyKey: {status} {error}"
            ));
        }
    }
    assert_nothing_written(&env, "starts with overlong ids").await;

    let worker = serve(&mut env, &ParkProcess).await;
    start(&env, &ParkProcess, &worker, "parked", Default::default())
        .await
        .unwrap();
    for (what, message) in [
        ("queueName", json!({"queueName": long})),
        ("dedupId", json!({"queueName": "go", "dedupId": long})),
    ] {
        let body = json!({"processId": "parked", "messages": [message]});
        let (status, error) = post_raw(
            &env,
            paths::PUBLISH_TO_LOCAL_QUEUE,
            body.to_string(),
            json_type,
        )
        .await;
        if status != 400 {
            failures.push(format!("publish with a 300-byte {what}: {status} {error}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    env.shutdown().await;
}

both_databases!(
    unknown_process_id_is_404_everywhere,
    malformed_requests_are_400_with_a_json_error,
    bad_table_and_column_names_are_refused_and_write_nothing,
    oversize_bodies_are_413,
    misbehaving_workers_are_retried_then_fail_and_write_nothing,
    overlong_ids_are_400_not_500,
);
