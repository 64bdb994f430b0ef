//! Helpers shared by the suite's modules.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use xdb_integration_tests::{eventually, XdbTestEnv};
use xdb_sdk::protocol::{EncodedObject, ErrorSubType};
use xdb_sdk::{ClientError, Process, ProcessDefinition, ProcessStartOptions};

/// Generous bound for anything that should take well under a second.
pub const SOON: Duration = Duration::from_secs(10);

/// Path of the OS-process async instance binary.
pub const ASYNC_INSTANCE_BIN: &str = env!("CARGO_BIN_EXE_xdb-test-async-instance");

/// Starts `process` (hosted at `worker`) as `process_id`; returns the execution id.
pub async fn start<P: Process + Clone>(
    env: &XdbTestEnv,
    process: &P,
    worker: &str,
    process_id: &str,
    options: ProcessStartOptions,
) -> Result<String, ClientError> {
    let definition = ProcessDefinition::new(process.clone());
    env.client
        .start_process_with(&definition, process_id, Some(worker), (), options)
        .await
}

/// Serves `process` as the only process of a new worker; returns the worker URL.
pub async fn serve<P: Process + Clone>(env: &mut XdbTestEnv, process: &P) -> String {
    let router = xdb_sdk::WorkerService::new()
        .register(process.clone())
        .router();
    env.start_worker(router).await
}

/// Asserts that `result` is a service error with `status` and `sub_type`; returns it.
#[track_caller]
pub fn expect_api_error<T: std::fmt::Debug>(
    result: Result<T, ClientError>,
    status: u16,
    sub_type: ErrorSubType,
) -> xdb_sdk::protocol::ApiErrorResponse {
    match result {
        Err(ClientError::Api { status: s, error }) => {
            assert_eq!((s, error.sub_type), (status, sub_type), "{error:?}");
            assert!(!error.message.is_empty(), "an error message is expected");
            error
        }
        other => panic!("expected HTTP {status} {sub_type:?}, got {other:?}"),
    }
}

/// Decodes a JSON payload.
pub fn decode(object: &Option<EncodedObject>) -> Value {
    let object = object.as_ref().expect("a payload");
    assert_eq!(object.encoding, "json");
    serde_json::from_str(&object.data).expect("JSON payload")
}

/// The JSON payload `value` would be sent as.
pub fn encoded(value: impl Serialize) -> Value {
    serde_json::to_value(EncodedObject::json(&value).unwrap()).unwrap()
}

/// Waits until state execution `state_id-number` of `exec` has `status`.
pub async fn wait_state(env: &XdbTestEnv, exec: &str, state_id: &str, number: i32, status: &str) {
    eventually(
        &format!("{state_id}-{number} to be {status}"),
        SOON,
        || async {
            env.state_row(exec, state_id, number)
                .await
                .is_some_and(|s| s.status == status)
        },
    )
    .await;
}

/// POSTs `body` to `path` of the API service; answers the status and the JSON body.
pub async fn post_raw(
    env: &XdbTestEnv,
    path: &str,
    body: impl Into<reqwest::Body>,
    content_type: Option<&str>,
) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .post(format!("{}{path}", env.api_url()))
        .body(body);
    if let Some(content_type) = content_type {
        request = request.header("content-type", content_type);
    }
    let response = request.send().await.expect("the API service answers");
    let status = response.status().as_u16();
    let text = response.text().await.expect("a body");
    let json = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("the error body is not JSON ({e}): {text:?}"));
    (status, json)
}

/// Everything the database holds about execution `exec` (process row, states, tasks,
/// messages, history), for the message of a failed assertion.
pub async fn dump_execution(env: &XdbTestEnv, exec: &str) -> String {
    format!(
        "execution {exec} on {:?}:\nprocess: {:#?}\nstates: {:#?}\ntasks: {:#?}\n\
         messages: {:#?}\nhistory: {:#?}",
        env.database(),
        env.process_row(exec).await,
        env.state_rows(exec).await,
        env.tasks(exec).await,
        env.messages(exec).await,
        env.history(exec).await,
    )
}
