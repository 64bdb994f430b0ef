//! Shared fixtures: a fresh database and store per test, requests, polling helpers.

use std::sync::Arc;
use std::time::Duration;

use mysql_async::prelude::Queryable;
use xdb_engine::{Task, TaskType};
use xdb_persistence::mysql::MySqlStore;
use xdb_persistence::postgres::PostgresStore;
use xdb_persistence::{ProcessStore, StateCall, StoreError, StoreOptions};
use xdb_protocol::*;
use xdb_test_util::{Dialect, TestDatabase};

/// A fresh database with the XDB schema and a store on it, chosen by `connect`.
pub struct Harness {
    pub db: TestDatabase,
    pub store: Arc<dyn ProcessStore>,
}

pub async fn harness(dialect: Dialect) -> Harness {
    let db = match dialect {
        Dialect::Postgres => TestDatabase::create_postgres().await,
        Dialect::MySql => TestDatabase::create_mysql().await,
    };
    let store = connect(&db, StoreOptions::default()).await;
    Harness { db, store }
}

tokio::task_local! {
    /// Set for the `postgres_generic` and `mysql_generic` variants of a scenario (see
    /// `both!`).
    pub static GENERIC_OPERATIONS_ONLY: bool;
}

/// A store on `db` set up as `options` say, without the dialect's faster forms of
/// generic operations in the `*_generic` variants.
pub async fn connect(db: &TestDatabase, options: StoreOptions) -> Arc<dyn ProcessStore> {
    let generic_only = GENERIC_OPERATIONS_ONLY
        .try_with(|only| *only)
        .unwrap_or(false);
    let failed = |e: StoreError| -> ! { panic!("connect to {}: {e}", db.name()) };
    match (generic_only, db.dialect()) {
        (true, Dialect::Postgres) => Arc::new(
            PostgresStore::connect_with(db.url(), options)
                .await
                .unwrap_or_else(|e| failed(e))
                .without_one_statement_forms(),
        ),
        (true, Dialect::MySql) => Arc::new(
            MySqlStore::connect_with(db.url(), options)
                .await
                .unwrap_or_else(|e| failed(e))
                .without_batched_transitions(),
        ),
        (false, _) => xdb_persistence::connect_with(db.url(), options)
            .await
            .unwrap_or_else(|e| failed(e)),
    }
}

/// A user table for global attributes, in the dialect's types.
pub fn users_table(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres => {
            "CREATE TABLE users (id VARCHAR(64) PRIMARY KEY, email VARCHAR(255) UNIQUE, \
             score INT, active BOOLEAN, profile JSONB, balance NUMERIC(10, 2), note TEXT)"
        }
        Dialect::MySql => {
            "CREATE TABLE users (id VARCHAR(64) PRIMARY KEY, email VARCHAR(255) UNIQUE, \
             score INT, active BOOLEAN, profile JSON, balance DECIMAL(10, 2), note TEXT)"
        }
    }
}

/// The first column of the first row of `sql`, as text.
pub async fn sql_text(db: &TestDatabase, sql: &str) -> Option<String> {
    match db.dialect() {
        Dialect::Postgres => db
            .client()
            .await
            .query_opt(sql, &[])
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .and_then(|row| row.get::<_, Option<String>>(0)),
        Dialect::MySql => {
            let mut conn = db.mysql_conn().await;
            let value: Option<Option<String>> = conn
                .query_first(sql)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
            value.flatten()
        }
    }
}

pub fn start_request(process_id: &str, state_id: &str) -> ProcessExecutionStartRequest {
    ProcessExecutionStartRequest {
        request_id: None,
        process_id: process_id.into(),
        process_type: "ContractTest".into(),
        worker_url: "http://127.0.0.1:9".into(),
        start_state_id: Some(state_id.into()),
        start_state_input: Some(EncodedObject {
            encoding: "json".into(),
            data: "{\"n\":1}".into(),
        }),
        start_state_config: None,
        process_start_config: None,
    }
}

pub fn users_config(key: &str, initial: Vec<GlobalAttributeValue>) -> GlobalAttributeConfig {
    GlobalAttributeConfig {
        table_name: "users".into(),
        primary_key: value("id", key),
        initial_write: initial,
    }
}

pub fn value(column: &str, value: impl Into<serde_json::Value>) -> GlobalAttributeValue {
    GlobalAttributeValue {
        column: column.into(),
        value: value.into(),
    }
}

pub fn encoded(data: &str) -> EncodedObject {
    EncodedObject {
        encoding: "json".into(),
        data: data.into(),
    }
}

/// Claims the next due task of `task_type` for `owner`, waiting up to 10 s for it. Other
/// due tasks claimed on the way stay leased to `owner`.
pub async fn claim(store: &dyn ProcessStore, owner: &str, task_type: TaskType) -> Task {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let tasks = store
            .claim_due_tasks(owner, 10, Duration::from_secs(30))
            .await
            .unwrap();
        if let Some(task) = tasks.into_iter().find(|t| t.task_type == task_type) {
            return task;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no {task_type:?} task became due"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Claims nothing: asserts no task is due now.
pub async fn assert_nothing_due(store: &dyn ProcessStore, owner: &str) {
    let tasks = store
        .claim_due_tasks(owner, 10, Duration::from_secs(30))
        .await
        .unwrap();
    assert!(tasks.is_empty(), "unexpected due tasks: {tasks:?}");
}

/// Claims the next task of `task_type` and loads its state call.
pub async fn claim_call(
    store: &dyn ProcessStore,
    owner: &str,
    task_type: TaskType,
) -> (Task, StateCall) {
    let task = claim(store, owner, task_type).await;
    let call = store
        .load_state_call(&task, owner)
        .await
        .unwrap()
        .expect("the claimed task is current");
    (task, call)
}

pub async fn describe(
    store: &dyn ProcessStore,
    process_id: &str,
) -> ProcessExecutionDescribeResponse {
    store
        .describe_process(&ProcessExecutionDescribeRequest {
            process_id: process_id.into(),
            process_execution_id: None,
        })
        .await
        .unwrap()
}

pub async fn history_types(store: &dyn ProcessStore, process_id: &str) -> Vec<String> {
    store
        .process_history(&ProcessExecutionHistoryRequest {
            process_id: process_id.into(),
            process_execution_id: None,
            ..Default::default()
        })
        .await
        .unwrap()
        .events
        .into_iter()
        .map(|e| e.event_type)
        .collect()
}

/// execute's answer moving on to `next` (each skipping waitUntil), in parallel.
pub fn execute_then(next: &[&str]) -> AsyncStateExecuteResponse {
    AsyncStateExecuteResponse {
        state_decision: StateDecision {
            next_states: next
                .iter()
                .map(|state| StateMovement {
                    state_id: (*state).into(),
                    state_input: None,
                    state_config: Some(AsyncStateConfig {
                        skip_wait_until: true,
                        ..Default::default()
                    }),
                })
                .collect(),
            thread_close_decision: None,
        },
        ..Default::default()
    }
}

/// Starts `process_id` and completes its state A's waitUntil (claimed by "w") with a
/// timer of `seconds`.
pub async fn start_waiting_on_a_timer(store: &dyn ProcessStore, process_id: &str, seconds: u32) {
    store
        .start_process(&start_request(process_id, "A"))
        .await
        .unwrap();
    let (task, call) = claim_call(store, "w", TaskType::WaitUntil).await;
    let wait = AsyncStateWaitUntilResponse {
        command_request: CommandRequest {
            waiting_type: CommandWaitingType::AnyOfCompletion,
            timer_commands: vec![TimerCommand {
                delay_in_seconds: seconds,
            }],
            local_queue_commands: vec![],
        },
        ..Default::default()
    };
    store
        .complete_wait_until(&task, "w", &call, &wait)
        .await
        .unwrap();
}
