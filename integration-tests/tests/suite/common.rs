//! Helpers shared by the suite's modules.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use pulsar::consumer::{ConsumerOptions, InitialPosition, Message};
use pulsar::{Consumer, Pulsar, SubType, TokioExecutor};
use serde::Serialize;
use serde_json::{json, Value};
use xdb_integration_tests::processes::counted_site;
use xdb_integration_tests::{eventually, Database, XdbTestEnv};
use xdb_protocol::paths;
use xdb_samples::site_services::{ExternalServices, Operation};
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

/// POSTs `body` as JSON to `path`; the status and the JSON answer.
pub async fn call(env: &XdbTestEnv, path: &str, body: Value) -> (u16, Value) {
    post_raw(env, path, body.to_string(), Some("application/json")).await
}

/// The `states` view of `process_id`'s current execution (asserted 200).
pub async fn states(env: &XdbTestEnv, process_id: &str) -> Value {
    let (status, body) = call(env, paths::STATES, json!({ "processId": process_id })).await;
    assert_eq!(status, 200, "{body}");
    body
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

/// A consumer of `topic` on the broker at `url` (`pulsar://`), subscribed as
/// `subscription` of `sub_type` from the topic's first message.
pub async fn subscribe(
    url: &str,
    topic: &str,
    subscription: &str,
    sub_type: SubType,
) -> Consumer<Vec<u8>, TokioExecutor> {
    let client = Pulsar::builder(url, TokioExecutor)
        .build()
        .await
        .unwrap_or_else(|e| panic!("connect to the broker at {url}: {e}"));
    client
        .consumer()
        .with_topic(topic)
        .with_subscription(subscription)
        .with_subscription_type(sub_type)
        .with_options(ConsumerOptions {
            initial_position: InitialPosition::Earliest,
            ..ConsumerOptions::default()
        })
        .build()
        .await
        .unwrap_or_else(|e| panic!("subscribe to {topic}: {e}"))
}

/// A change of `xdb_sys_tasks` as Pulsar IO's Debezium source publishes it: the
/// partition key is the Base64 text of Debezium's key JSON (`{"schema", "payload":
/// {"process_execution_id"}}`; the message does not flag it as Base64), the payload an
/// INLINE key/value pair (4-byte big-endian key length, key, 4-byte value length, value)
/// whose value is the change event JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskChangeEvent {
    /// The message key, as it is.
    pub key: Option<Vec<u8>>,
    /// `process_execution_id` of the message key, when it is (the Base64 of) Debezium's
    /// key JSON.
    pub key_execution: Option<String>,
    /// Debezium's `op`: `c` insert, `u` update, `d` delete, `r` read by a snapshot.
    pub op: String,
    /// The row's `id`: after the change, before it for a delete.
    pub task_id: Option<i64>,
    /// The row's `process_execution_id`, from the same image (a PostgreSQL delete's
    /// image holds the primary key only).
    pub execution: Option<String>,
}

/// Reads a message of the tasks topic; panics on anything else.
pub fn task_change_event(message: &Message<Vec<u8>>) -> TaskChangeEvent {
    let key = message.key_bytes().expect("a readable partition key");
    let key_json = key.as_deref().and_then(|bytes| {
        serde_json::from_slice::<Value>(bytes)
            .ok()
            .or_else(|| serde_json::from_slice(&STANDARD.decode(bytes).ok()?).ok())
    });
    let key_execution = key_json.as_ref().and_then(|key| {
        key.get("payload")
            .unwrap_or(key)
            .get("process_execution_id")
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let payload = &message.payload.data;
    let (_key, rest) = length_prefixed(payload);
    let (value, rest) = length_prefixed(rest);
    assert!(rest.is_empty(), "bytes after the value: {payload:?}");
    let value: Value =
        serde_json::from_slice(value.expect("a value (no tombstones)")).expect("JSON value");
    let event = value.get("payload").unwrap_or(&value);
    let op = event["op"].as_str().expect("an `op`").to_string();
    let row = if op == "d" {
        &event["before"]
    } else {
        &event["after"]
    };
    TaskChangeEvent {
        key,
        key_execution,
        op,
        task_id: row["id"].as_i64(),
        execution: row["process_execution_id"].as_str().map(str::to_string),
    }
}

/// One field of an INLINE key/value payload (length -1: absent) and what follows it.
fn length_prefixed(bytes: &[u8]) -> (Option<&[u8]>, &[u8]) {
    let (length, rest) = bytes
        .split_first_chunk::<4>()
        .expect("a 4-byte length prefix");
    match usize::try_from(i32::from_be_bytes(*length)) {
        Ok(length) => {
            assert!(rest.len() >= length, "a truncated key/value field");
            (Some(&rest[..length]), &rest[length..])
        }
        Err(_) => (None, rest),
    }
}

/// Every `CountedSiteProcess` of `execs` (all of this environment's) created its site
/// once: each state execution completed once, each step's business write and service
/// effect landed once, each transition was recorded once.
pub async fn assert_counted_sites_created_once(
    env: &XdbTestEnv,
    services: &ExternalServices,
    execs: &[String],
) {
    // Each state execution ran to completion once per thread, and each step's business
    // write landed once: a duplicated transition would leave a counter at 2.
    let rows = env.counted_site_rows().await;
    assert_eq!(rows.len(), execs.len());
    for row in &rows {
        assert_eq!(row.status, "created", "{row:?}");
        assert_eq!(
            row.counters,
            [1; 5],
            "{row:?} (counters: {:?})",
            counted_site::COUNTERS
        );
        assert_eq!(
            services.report(&row.site_id).map(|r| r.effects),
            Some(BTreeMap::from([
                (Operation::CreateFileSystem, 1),
                (Operation::CreateDatabase, 1),
                (Operation::Bootstrap, 1),
            ])),
            "{}",
            row.site_id
        );
    }
    for exec in execs {
        let process = env.process_row(exec).await.unwrap();
        assert_eq!(process.status, "COMPLETED", "{process:?}");
        assert_eq!(process.running_state_executions, 0);
        let states = env.state_rows(exec).await;
        let mut ids: Vec<String> = states.iter().map(|s| s.execution_id()).collect();
        ids.sort();
        let mut expected: Vec<String> = counted_site::STATE_EXECUTIONS
            .iter()
            .map(|s| s.to_string())
            .collect();
        expected.sort();
        assert_eq!(ids, expected, "no state row beyond the flow's: {states:#?}");
        assert!(
            states.iter().all(|s| s.status == "COMPLETED"),
            "{states:#?}"
        );
        let history = env.history(exec).await;
        let mut transitions: BTreeMap<(String, String), usize> = BTreeMap::new();
        for event in &history {
            if let Some(state) = event.details["stateExecutionId"].as_str() {
                if ["EXECUTE_COMPLETED", "WAIT_UNTIL_COMPLETED"]
                    .contains(&event.event_type.as_str())
                {
                    *transitions
                        .entry((event.event_type.clone(), state.to_string()))
                        .or_default() += 1;
                }
            }
        }
        let mut expected: BTreeMap<(String, String), usize> = counted_site::STATE_EXECUTIONS
            .iter()
            .map(|s| (("EXECUTE_COMPLETED".to_string(), s.to_string()), 1))
            .collect();
        expected.insert(
            (
                "WAIT_UNTIL_COMPLETED".to_string(),
                "MarkCreated-1".to_string(),
            ),
            1,
        );
        assert_eq!(transitions, expected, "each transition once: {history:#?}");
        assert_eq!(
            history
                .iter()
                .filter(|e| e.event_type == "TIMER_FIRED")
                .count(),
            1,
            "MarkCreated's timer fired once: {history:#?}"
        );
        assert_eq!(
            history
                .iter()
                .filter(|e| e.event_type == "PROCESS_CLOSED")
                .count(),
            1
        );
        let messages = env.messages(exec).await;
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert_eq!(messages[0].consumed_by.as_deref(), Some("MarkCreated-1"));
    }
}

/// The message of the database's refusal installed by [`refuse_state_completion`].
pub const REFUSAL: &str = "refused by the test trigger";

/// How the database refuses, in [`refuse_state_completion`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// As a deadlock would (PostgreSQL 40P01, MariaDB 1213): a transient failure,
    /// handled again until the source's limit.
    ForNow,
    /// With an error of its own: one that would come back the same, parked at once.
    Always,
}

/// Makes the database refuse every transition that completes a state (or only states
/// `only_state`) as `refusal` says: the task is handled, the worker answers, but nothing
/// can be recorded, as with a business constraint that rejects the write until someone
/// fixes it, or a deadlock every time.
pub async fn refuse_state_completion(
    env: &XdbTestEnv,
    only_state: Option<&'static str>,
    refusal: Refusal,
) {
    let condition = match only_state {
        Some(state) => format!("NEW.status = 'COMPLETED' AND NEW.state_id = '{state}'"),
        None => "NEW.status = 'COMPLETED'".to_owned(),
    };
    let (pg_code, mysql_signal) = match refusal {
        Refusal::ForNow => ("40P01", "SQLSTATE '40001' SET MYSQL_ERRNO = 1213,"),
        Refusal::Always => ("P0001", "SQLSTATE '45000' SET"),
    };
    let sql = match env.database() {
        Database::Postgres => format!(
            "CREATE FUNCTION refuse_completion() RETURNS trigger LANGUAGE plpgsql AS $$ \
             BEGIN RAISE EXCEPTION '{REFUSAL}' USING ERRCODE = '{pg_code}'; END $$; \
             CREATE TRIGGER refuse_completion BEFORE UPDATE ON xdb_sys_async_state_executions \
             FOR EACH ROW WHEN ({condition}) EXECUTE FUNCTION refuse_completion();"
        ),
        Database::MySql => format!(
            "CREATE TRIGGER refuse_completion BEFORE UPDATE ON xdb_sys_async_state_executions \
             FOR EACH ROW BEGIN IF {condition} THEN \
             SIGNAL {mysql_signal} MESSAGE_TEXT = '{REFUSAL}'; END IF; END"
        ),
    };
    env.db().execute_sql(&sql).await;
}

/// Drops what [`refuse_state_completion`] installed: the fix the operator waits for.
pub async fn allow_state_completion(env: &XdbTestEnv) {
    let sql = match env.database() {
        Database::Postgres => "DROP TRIGGER refuse_completion ON xdb_sys_async_state_executions",
        Database::MySql => "DROP TRIGGER refuse_completion",
    };
    env.db().execute_sql(sql).await;
}
