//! Drives the worker router over a real socket with protocol requests.

mod common;

use serde_json::{json, Value};
use xdb_sdk::protocol::paths;
use xdb_sdk::WorkerService;

async fn serve() -> String {
    let app = WorkerService::new()
        .register(common::CounterProcess)
        .router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

async fn post(base: &str, path: &str, body: Value) -> (u16, Value) {
    let resp = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

fn context() -> Value {
    json!({
        "processId": "p-1", "processExecutionId": "e-1", "processType": "CounterProcess",
        "stateExecutionId": "StartState-1", "attempt": 1, "firstAttemptTimestampMs": 1,
        "processStartedTimestampMs": 1, "idempotencyKey": "e-1/StartState-1/execute"
    })
}

fn execute_request(state: &str, input: Option<&str>, extra: Value) -> Value {
    let mut req = json!({
        "context": context(), "processType": "CounterProcess", "stateId": state,
    });
    if let Some(data) = input {
        req["stateInput"] = json!({"encoding": "json", "data": data});
    }
    for (k, v) in extra.as_object().unwrap() {
        req[k] = v.clone();
    }
    req
}

#[tokio::test]
async fn execute_returns_decision_writes_and_configs() {
    let base = serve().await;
    let (status, body) = post(
        &base,
        paths::WORKER_EXECUTE,
        execute_request("StartState", Some(r#"{"n":4}"#), json!({})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let next = body["stateDecision"]["nextStates"].as_array().unwrap();
    assert_eq!(next.len(), 2);
    assert_eq!(next[0]["stateId"], "WaitState");
    assert_eq!(next[0]["stateConfig"]["skipWaitUntil"], false);
    assert_eq!(
        next[0]["stateConfig"]["globalAttributeLoading"]["lockType"],
        "EXCLUSIVE_LOCK"
    );
    assert_eq!(
        body["writes"]["globalAttributes"],
        json!([{"column": "status", "value": "started"}])
    );
    assert_eq!(body["writes"]["localAttributes"][0]["key"], "count");
    assert_eq!(body["writes"]["localAttributes"][0]["value"]["data"], "4");
}

#[tokio::test]
async fn execute_with_queue_results_completes_with_typed_messages() {
    let base = serve().await;
    let results = json!({"commandResults": {
        "timerResults": [{"status": "SKIPPED"}],
        "localQueueResults": [{"queueName": "go", "status": "RECEIVED", "messages": [
            {"queueName": "go", "payload": {"encoding": "json", "data": "\"ann\""}}
        ]}]
    }});
    let (status, body) = post(
        &base,
        paths::WORKER_EXECUTE,
        execute_request("WaitState", None, results),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let close = &body["stateDecision"]["threadCloseDecision"];
    assert_eq!(close["closeType"], "GRACEFUL_COMPLETE_PROCESS");
    assert_eq!(close["output"]["data"], r#"["ann"]"#);
    assert_eq!(
        body["writes"]["globalAttributes"][0]["value"],
        "done by ann"
    );

    let (_, body) = post(
        &base,
        paths::WORKER_EXECUTE,
        execute_request(
            "WaitState",
            None,
            json!({"commandResults": {"timerResults": [{"status": "FIRED"}]}}),
        ),
    )
    .await;
    assert_eq!(
        body["stateDecision"]["threadCloseDecision"]["closeType"],
        "DEAD_END"
    );
}

#[tokio::test]
async fn wait_until_returns_commands_and_published_messages() {
    let base = serve().await;
    let (status, body) = post(
        &base,
        paths::WORKER_WAIT_UNTIL,
        execute_request("WaitState", None, json!({})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let req = &body["commandRequest"];
    assert_eq!(req["waitingType"], "ANY_OF_COMPLETION");
    assert_eq!(req["timerCommands"], json!([{"delayInSeconds": 5}]));
    assert_eq!(
        req["localQueueCommands"],
        json!([{"queueName": "go", "count": 1}])
    );
    assert_eq!(body["publishToLocalQueue"][0]["queueName"], "audit");
    assert_eq!(
        body["publishToLocalQueue"][0]["payload"]["data"],
        "\"waiting\""
    );
}

#[tokio::test]
async fn rpc_returns_output_writes_messages_and_new_threads() {
    let base = serve().await;
    let req = json!({
        "context": context(), "processType": "CounterProcess", "rpcName": "bump",
        "input": {"encoding": "json", "data": "3"},
        "attributes": {"localAttributes": [{"key": "count", "value": {"encoding": "json", "data": "10"}}]}
    });
    let (status, body) = post(&base, paths::WORKER_RPC, req).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["output"], json!({"encoding": "json", "data": "13"}));
    assert_eq!(body["writes"]["localAttributes"][0]["value"]["data"], "13");
    assert_eq!(body["publishToLocalQueue"][0]["queueName"], "go");
    assert_eq!(body["appendNextStates"][0]["stateId"], "WaitState");
    assert_eq!(
        body["appendNextStates"][0]["stateConfig"]["skipWaitUntil"],
        false
    );
}

#[tokio::test]
async fn user_code_errors_are_500_with_the_error_text() {
    let base = serve().await;
    let (status, body) = post(
        &base,
        paths::WORKER_EXECUTE,
        execute_request("StartState", Some(r#"{"n":0}"#), json!({})),
    )
    .await;
    assert_eq!(status, 500);
    assert_eq!(body["errorType"], "USER_CODE_ERROR");
    assert_eq!(body["detail"], "ticket number must be positive");
}

#[tokio::test]
async fn bad_requests_are_400_with_a_json_body() {
    let base = serve().await;
    let cases = [
        (
            paths::WORKER_EXECUTE,
            execute_request("StartState", Some(r#"{"n":"x"}"#), json!({})),
            "UNDECODABLE_INPUT",
        ),
        (
            paths::WORKER_EXECUTE,
            execute_request("StartState", Some("not json"), json!({})),
            "UNDECODABLE_INPUT",
        ),
        (
            paths::WORKER_EXECUTE,
            execute_request("NoSuchState", None, json!({})),
            "UNKNOWN_STATE",
        ),
        (
            paths::WORKER_WAIT_UNTIL,
            execute_request("StartState", Some(r#"{"n":1}"#), json!({})),
            "NOT_IMPLEMENTED",
        ),
        (
            paths::WORKER_EXECUTE,
            {
                let mut r = execute_request("StartState", None, json!({}));
                r["processType"] = json!("Other");
                r
            },
            "UNKNOWN_PROCESS_TYPE",
        ),
        (
            paths::WORKER_RPC,
            json!({"context": context(), "processType": "CounterProcess", "rpcName": "nope"}),
            "UNKNOWN_RPC",
        ),
        (
            paths::WORKER_EXECUTE,
            json!({"not": "a request"}),
            "INVALID_REQUEST",
        ),
    ];
    for (path, req, error_type) in cases {
        let (status, body) = post(&base, path, req).await;
        assert_eq!(status, 400, "{path} {body}");
        assert_eq!(body["errorType"], error_type, "{body}");
        assert!(!body["detail"].as_str().unwrap().is_empty());
    }

    let resp = reqwest::Client::new()
        .post(format!("{base}{}", paths::WORKER_EXECUTE))
        .header("content-type", "application/json")
        .body("{oops")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let body: Value = resp.json().await.unwrap();
    assert!(body["detail"]
        .as_str()
        .unwrap()
        .contains("malformed request body"));
}
