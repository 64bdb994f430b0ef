//! A worker written without the SDK that misbehaves in a chosen way, and the start
//! request of its one-state process.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::json;
use xdb_sdk::protocol::{
    paths, AsyncStateConfig, AsyncStateExecuteRequest, GlobalAttributeConfig, GlobalAttributeValue,
    ProcessExecutionStartRequest, ProcessStartConfig, RetryPolicy,
};

pub const PROCESS_TYPE: &str = "RawProcess";
pub const STATE_ID: &str = "RawState";
/// The `note` the start writes; no failed attempt may change it.
pub const INITIAL_NOTE: &str = "initial";

/// How the worker's execute answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Misbehavior {
    /// HTTP 200 with a body that is not JSON.
    Garbage,
    /// HTTP 500 with a plain-text body.
    Http500,
    /// HTTP 200 with JSON of the wrong shape.
    WrongShape,
    /// A well-formed response writing `note`, whose decision has both next states and
    /// a close decision.
    InvalidDecisionWithWrite,
    /// A valid decision writing `note` and a column the table does not have.
    UnknownColumnWrite,
    /// A valid decision writing `note` and a column name that is SQL injection.
    InjectedColumnWrite,
    /// A valid decision whose output holds U+0000, which databases cannot store.
    NulInOutput,
}

/// The worker's router, and a counter of execute calls.
pub fn router(misbehavior: Misbehavior) -> (Router, Arc<AtomicU32>) {
    let calls = Arc::new(AtomicU32::new(0));
    let counter = calls.clone();
    let router = Router::new().route(
        paths::WORKER_EXECUTE,
        post(move |Json(request): Json<AsyncStateExecuteRequest>| {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                answer(misbehavior, &request)
            }
        }),
    );
    (router, calls)
}

fn answer(misbehavior: Misbehavior, _request: &AsyncStateExecuteRequest) -> Response {
    let complete = json!({
        "threadCloseDecision": {"closeType": "GRACEFUL_COMPLETE_PROCESS"}
    });
    let note = json!({"column": "note", "value": "written by a bad attempt"});
    match misbehavior {
        Misbehavior::Garbage => (StatusCode::OK, "this is { not json").into_response(),
        Misbehavior::Http500 => {
            (StatusCode::INTERNAL_SERVER_ERROR, "boom: internal error").into_response()
        }
        Misbehavior::WrongShape => Json(json!({"stateDecision": 42})).into_response(),
        Misbehavior::InvalidDecisionWithWrite => Json(json!({
            "stateDecision": {
                "nextStates": [{"stateId": STATE_ID}],
                "threadCloseDecision": {"closeType": "GRACEFUL_COMPLETE_PROCESS"}
            },
            "writes": {"globalAttributes": [note]}
        }))
        .into_response(),
        Misbehavior::UnknownColumnWrite => Json(json!({
            "stateDecision": complete,
            "writes": {"globalAttributes": [note, {"column": "no_such_column", "value": 1}]}
        }))
        .into_response(),
        Misbehavior::NulInOutput => Json(json!({
            "stateDecision": {"threadCloseDecision": {
                "closeType": "GRACEFUL_COMPLETE_PROCESS",
                "output": {"encoding": "json", "data": "\"nul \u{0} inside\""}
            }},
            "writes": {"globalAttributes": [note]}
        }))
        .into_response(),
        Misbehavior::InjectedColumnWrite => Json(json!({
            "stateDecision": complete,
            "writes": {"globalAttributes": [
                note,
                {"column": "note\" = 'x'; DROP TABLE test_entity; --", "value": 1}
            ]}
        }))
        .into_response(),
    }
}

/// Starts `RawState` (execute only, 2 attempts 100 ms apart) on the `test_entity` row
/// `entity_id`, writing `note = INITIAL_NOTE`.
pub fn start_request(
    process_id: &str,
    worker_url: &str,
    entity_id: &str,
) -> ProcessExecutionStartRequest {
    ProcessExecutionStartRequest {
        request_id: None,
        process_id: process_id.to_string(),
        process_type: PROCESS_TYPE.to_string(),
        worker_url: worker_url.to_string(),
        start_state_id: Some(STATE_ID.to_string()),
        start_state_input: None,
        start_state_config: Some(AsyncStateConfig {
            skip_wait_until: true,
            execute_api_retry_policy: Some(RetryPolicy {
                initial_interval_seconds: Some(0.1),
                backoff_coefficient: Some(1.0),
                maximum_interval_seconds: None,
                maximum_attempts: Some(2),
                maximum_attempts_duration_seconds: None,
            }),
            ..Default::default()
        }),
        process_start_config: Some(ProcessStartConfig {
            global_attribute_config: Some(GlobalAttributeConfig {
                table_name: "test_entity".to_string(),
                primary_key: GlobalAttributeValue {
                    column: "id".to_string(),
                    value: json!(entity_id),
                },
                initial_write: vec![GlobalAttributeValue {
                    column: "note".to_string(),
                    value: json!(INITIAL_NOTE),
                }],
            }),
            ..Default::default()
        }),
    }
}
