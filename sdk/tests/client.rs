//! The client against a stand-in service that records requests and answers canned bodies.

mod common;

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use xdb_sdk::protocol::{
    paths, CallPhase, ErrorSubType, ProcessExecutionControlRequest, ProcessExecutionStatesRequest,
};
use xdb_sdk::{Client, ProcessStartOptions};

type Seen = Arc<Mutex<Vec<(String, Value)>>>;

async fn fake_service() -> (String, Seen) {
    let seen: Seen = Arc::default();
    let record = |path: &'static str, status: StatusCode, answer: Value| {
        post(
            move |State(seen): State<Seen>, Json(body): Json<Value>| async move {
                seen.lock().unwrap().push((path.to_string(), body));
                (status, Json(answer))
            },
        )
    };
    let app = Router::new()
        .route(
            paths::START,
            record(
                paths::START,
                StatusCode::OK,
                json!({"processExecutionId": "e-9"}),
            ),
        )
        .route(
            paths::RPC,
            record(
                paths::RPC,
                StatusCode::OK,
                json!({"output": {"encoding": "json", "data": "42"}}),
            ),
        )
        .route(
            paths::STOP,
            record(
                paths::STOP,
                StatusCode::NOT_FOUND,
                json!({"subType": "PROCESS_NOT_FOUND", "message": "no process p-x"}),
            ),
        )
        .route(
            paths::STATES,
            record(
                paths::STATES,
                StatusCode::OK,
                json!({"processExecutionId": "e-9", "status": "RUNNING", "states": [{
                    "stateExecutionId": "A-1", "stateId": "A", "status": "EXECUTE_RUNNING",
                    "startedTimestampMs": 1,
                    "pendingCall": {"api": "execute", "attempt": 2, "phase": "PARKED",
                                    "dueTimestampMs": 9, "parkedReason": "refused"}}]}),
            ),
        )
        .route(
            paths::RETRY_NOW,
            record(
                paths::RETRY_NOW,
                StatusCode::OK,
                json!({"stateExecutionIds": ["A-1"]}),
            ),
        )
        .route(
            paths::GIVE_UP,
            record(
                paths::GIVE_UP,
                StatusCode::OK,
                json!({"stateExecutionIds": ["A-1"]}),
            ),
        )
        .route(
            paths::PAUSE,
            record(
                paths::PAUSE,
                StatusCode::CONFLICT,
                json!({"subType": "CONTROL_NOT_APPLICABLE", "message": "already paused"}),
            ),
        )
        .route(
            paths::RESUME,
            record(
                paths::RESUME,
                StatusCode::OK,
                json!({"stateExecutionIds": []}),
            ),
        )
        .with_state(Arc::clone(&seen));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), seen)
}

#[tokio::test]
async fn typed_start_fills_the_request_from_the_process() {
    let (url, seen) = fake_service().await;
    let client = Client::new(url).with_worker_url("http://worker:8803");
    let id = client
        .start_process::<common::CounterProcess>(
            "p-1",
            None,
            common::Ticket { n: 3 },
            ProcessStartOptions::new()
                .global_attribute_pk_value("c-1")
                .initial_global_attribute("status", "new"),
        )
        .await
        .unwrap();
    assert_eq!(id, "e-9");
    let (path, body) = seen.lock().unwrap()[0].clone();
    assert_eq!(path, paths::START);
    assert_eq!(body["processType"], "CounterProcess");
    assert_eq!(body["workerUrl"], "http://worker:8803");
    assert_eq!(body["startStateId"], "StartState");
    assert_eq!(body["startStateInput"]["data"], r#"{"n":3}"#);
    assert_eq!(
        body["startStateConfig"]["globalAttributeLoading"]["columns"],
        json!(["status", "owner"])
    );
    let ga = &body["processStartConfig"]["globalAttributeConfig"];
    assert_eq!(ga["tableName"], "counter");
    assert_eq!(ga["primaryKey"], json!({"column": "id", "value": "c-1"}));
    assert_eq!(
        ga["initialWrite"],
        json!([{"column": "status", "value": "new"}])
    );
}

#[tokio::test]
async fn typed_rpc_sends_default_loading_and_decodes_output() {
    let (url, seen) = fake_service().await;
    let client = Client::new(url);
    let out: u32 = client
        .invoke_rpc::<common::CounterProcess, _, _>("p-1", "bump", &2u32)
        .await
        .unwrap();
    assert_eq!(out, 42);
    let (_, body) = seen.lock().unwrap()[0].clone();
    assert_eq!(body["rpcName"], "bump");
    assert_eq!(body["input"]["data"], "2");
    assert_eq!(
        body["globalAttributeLoading"]["columns"],
        json!(["status", "owner"])
    );
    assert_eq!(body["localAttributeLoading"]["keys"], json!(["count"]));

    let unknown = client
        .invoke_rpc::<common::CounterProcess, _, u32>("p-1", "nope", &())
        .await
        .unwrap_err();
    assert!(unknown.to_string().contains("nope"));
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "an unknown rpc is refused before sending"
    );
}

#[tokio::test]
async fn service_errors_surface_with_sub_type_and_status() {
    let (url, _) = fake_service().await;
    let err = Client::new(url)
        .stop_process("p-x", Default::default(), None)
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(404));
    assert_eq!(err.sub_type(), Some(ErrorSubType::ProcessNotFound));
    assert_eq!(err.api_error().unwrap().message, "no process p-x");
}

#[tokio::test]
async fn operator_calls_post_their_requests_and_read_the_answers() {
    let (url, seen) = fake_service().await;
    let client = Client::new(url);
    let view = client
        .states(&ProcessExecutionStatesRequest {
            process_id: "p-1".into(),
            process_execution_id: None,
        })
        .await
        .unwrap();
    let call = view.states[0].pending_call.as_ref().unwrap();
    assert_eq!(call.phase, CallPhase::Parked);
    assert_eq!(call.parked_reason.as_deref(), Some("refused"));

    let control = ProcessExecutionControlRequest {
        process_id: "p-1".into(),
        state_execution_id: Some("A-1".into()),
        reason: Some("fixed".into()),
        ..Default::default()
    };
    let acted = client.retry_now(&control).await.unwrap();
    assert_eq!(acted.state_execution_ids, ["A-1"]);
    client.give_up(&control).await.unwrap();
    client.resume(&control).await.unwrap();
    let refused = client.pause(&control).await.unwrap_err();
    assert_eq!(refused.status(), Some(409));
    assert_eq!(refused.sub_type(), Some(ErrorSubType::ControlNotApplicable));

    let seen = seen.lock().unwrap();
    let sent: Vec<&str> = seen.iter().map(|(path, _)| path.as_str()).collect();
    assert_eq!(
        sent,
        [
            paths::STATES,
            paths::RETRY_NOW,
            paths::GIVE_UP,
            paths::RESUME,
            paths::PAUSE
        ]
    );
    assert_eq!(
        seen[0].1,
        json!({"processId": "p-1", "processExecutionId": null})
    );
    assert_eq!(seen[1].1["stateExecutionId"], "A-1");
    assert_eq!(seen[1].1["reason"], "fixed");
}

#[tokio::test]
async fn typed_start_without_worker_url_leaves_it_to_the_registered_deployment() {
    let (url, seen) = fake_service().await;
    let execution = Client::new(url)
        .start_process::<common::CounterProcess>(
            "p-1",
            None,
            common::Ticket { n: 1 },
            ProcessStartOptions::new().global_attribute_pk_value("c"),
        )
        .await
        .unwrap();
    assert_eq!(execution, "e-9");
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0].0, paths::START);
    assert_eq!(
        seen[0].1["workerUrl"], "",
        "the service routes an empty worker URL"
    );
}
