//! Filtered list and count (`where`, `count`, `groupBy`) over executions started through
//! the API and run by a real worker, with a business table of typed columns (integer,
//! text, timestamp, boolean, JSON and a reserved word as a name).
//!
//! `property` checks random filters against an in-memory evaluation of the same rows;
//! `hostile` checks that bad filters are refused before any SQL; `situations` finds
//! executions parked, backing off, waiting on timers and queues, and by deployment;
//! `explain` answers the plan and the index a filter lacks.

mod cli;
mod explain;
mod hostile;
mod property;
mod situations;

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use xdb_integration_tests::sql::SqlSession;
use xdb_integration_tests::{Database, EnvOptions, XdbTestEnv};
use xdb_sdk::protocol::{
    paths, ProcessExecutionCountResponse, ProcessExecutionListResponse,
    ProcessExecutionStopRequest, ProcessExecutionStopType, WorkerDeployment,
};
use xdb_sdk::{
    async_trait, AsyncState, Command, CommandRequest, CommandResults, Communication,
    CommunicationSchema, Context, Persistence, PersistenceSchema, Process, ProcessStartOptions,
    StateDecision, StateSchema, WorkerService,
};

use crate::common::*;

both_databases!(
    filters_over_execution_fields_and_business_columns,
    a_query_past_its_time_limit_is_cancelled,
);

/// The business table of [`OrderProcess`], keyed by the process id.
pub const TABLE: &str = "query_orders";
/// Its columns besides the key; `order` is a reserved word.
pub const COLUMNS: [&str; 6] = ["amount", "note", "placed_at", "vip", "doc", "order"];
const QUEUE: &str = "go";
/// The state every execution waits in until stopped.
pub const HOLD_STATE: &str = "HoldState";
pub const PROCESS_TYPE: &str = "OrderProcess";

/// `TABLE` in `db`'s dialect; text compares by code point in both (the in-memory
/// evaluation's order), timestamps are instants.
fn table_sql(db: Database) -> &'static str {
    match db {
        Database::Postgres => {
            "CREATE TABLE query_orders (id VARCHAR(255) PRIMARY KEY, amount INTEGER, \
             note TEXT COLLATE \"C\", placed_at TIMESTAMPTZ, vip BOOLEAN, doc JSONB, \
             \"order\" INTEGER)"
        }
        Database::MySql => {
            "CREATE TABLE query_orders (id VARCHAR(255) NOT NULL PRIMARY KEY, amount INT NULL, \
             note TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL, \
             placed_at TIMESTAMP(6) NULL DEFAULT NULL, vip BOOLEAN NULL, doc JSON NULL, \
             `order` INT NULL) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4"
        }
    }
}

/// One state waiting on a queue nothing publishes to: executions stay running there.
#[derive(Debug, Clone, Default)]
pub struct OrderProcess;

impl Process for OrderProcess {
    fn state_schema(&self) -> StateSchema {
        StateSchema::with_starting_state(HoldState)
    }

    fn persistence_schema(&self) -> PersistenceSchema {
        let table = PersistenceSchema::with_table(TABLE, "id");
        COLUMNS.iter().fold(table, |t, c| t.global_attribute(*c))
    }

    fn communication_schema(&self) -> CommunicationSchema {
        CommunicationSchema::new().local_queue(QUEUE)
    }
}

pub struct HoldState;

#[async_trait]
impl AsyncState for HoldState {
    type Input = ();
    const HAS_WAIT_UNTIL: bool = true;

    async fn wait_until(
        &self,
        _ctx: &Context,
        _input: (),
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> xdb_sdk::Result<CommandRequest> {
        Ok(CommandRequest::any_of(vec![Command::local_queue(QUEUE)]))
    }

    async fn execute(
        &self,
        _ctx: &Context,
        _input: (),
        _results: &CommandResults,
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> xdb_sdk::Result<StateDecision> {
        Ok(StateDecision::graceful_complete_process(json!(null)))
    }
}

/// An execution and its business row; `None` columns stay NULL.
#[derive(Debug, Clone, PartialEq)]
pub struct Order {
    pub id: String,
    pub amount: Option<i64>,
    pub note: Option<String>,
    pub placed_at: Option<DateTime<Utc>>,
    pub vip: Option<bool>,
    pub doc: Option<Value>,
    pub order: Option<i64>,
    /// Left running (waiting in [`HOLD_STATE`]); else stopped (TERMINATED).
    pub running: bool,
}

impl Order {
    fn writes(&self) -> Vec<(&'static str, Value)> {
        let time = |t: &DateTime<Utc>| json!(t.to_rfc3339());
        [
            ("amount", self.amount.map(Value::from)),
            ("note", self.note.clone().map(Value::from)),
            ("placed_at", self.placed_at.as_ref().map(time)),
            ("vip", self.vip.map(Value::from)),
            ("doc", self.doc.clone()),
            ("order", self.order.map(Value::from)),
        ]
        .into_iter()
        .filter_map(|(column, value)| value.map(|v| (column, v)))
        .collect()
    }
}

/// An environment with [`TABLE`] and a worker hosting [`OrderProcess`] (not registered).
pub async fn order_env(db: Database, options: EnvOptions) -> (XdbTestEnv, String, WorkerService) {
    let mut env = XdbTestEnv::start_with(db, options).await;
    env.execute_sql(table_sql(db)).await;
    let worker = WorkerService::new().register(OrderProcess);
    let url = env.start_worker(worker.router()).await;
    (env, url, worker)
}

/// Starts `orders` in order (their start times follow it), each with its row; waits
/// until each waits in its state, then stops those not running.
pub async fn start_orders(env: &XdbTestEnv, worker_url: &str, orders: &[Order]) {
    let mut executions = Vec::new();
    for order in orders {
        let mut options = ProcessStartOptions::new().global_attribute_pk_value(&order.id);
        for (column, value) in order.writes() {
            options = options.initial_global_attribute(column, value);
        }
        let execution = start(env, &OrderProcess, worker_url, &order.id, options)
            .await
            .unwrap_or_else(|e| panic!("start {}: {e}", order.id));
        executions.push(execution);
    }
    for execution in &executions {
        wait_state(env, execution, HOLD_STATE, 1, "WAITING_COMMANDS").await;
    }
    for order in orders.iter().filter(|o| !o.running) {
        env.client
            .stop(&ProcessExecutionStopRequest {
                process_execution_id: None,
                request_id: None,
                process_id: order.id.clone(),
                stop_type: ProcessExecutionStopType::Terminate,
                reason: None,
            })
            .await
            .expect("stop");
    }
}

/// POSTs `body` to `path`: the answer, or the status and error body.
pub async fn call<R: DeserializeOwned>(
    env: &XdbTestEnv,
    path: &str,
    body: &Value,
) -> Result<R, (u16, Value)> {
    let (status, answer) = post_raw(env, path, body.to_string(), Some("application/json")).await;
    match status {
        200 => Ok(serde_json::from_value(answer).expect("the documented answer")),
        _ => Err((status, answer)),
    }
}

/// Every execution `body` lists, newest first, read `page_size` at a time.
pub async fn list_all(
    env: &XdbTestEnv,
    body: &Value,
    page_size: u32,
) -> Result<Vec<String>, (u16, Value)> {
    let mut ids = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut page_body = body.clone();
        page_body["pageSize"] = json!(page_size);
        if let Some(token) = &token {
            page_body["nextPageToken"] = json!(token);
        }
        let page: ProcessExecutionListResponse = call(env, paths::LIST, &page_body).await?;
        assert!(page.executions.len() <= page_size as usize);
        ids.extend(page.executions.into_iter().map(|e| e.process_id));
        match page.next_page_token {
            Some(next) => token = Some(next),
            None => return Ok(ids),
        }
    }
}

/// The list body of `tree` over [`OrderProcess`]'s table, named explicitly.
fn where_body(tree: Value) -> Value {
    json!({
        "filter": {"processType": PROCESS_TYPE},
        "where": tree,
        "businessTable": {"tableName": TABLE, "primaryKeyColumn": "id"}
    })
}

/// The error message of a refusal, after checking it is a 400.
#[track_caller]
pub fn refusal(result: Result<impl std::fmt::Debug, (u16, Value)>) -> String {
    match result {
        Err((400, body)) => {
            assert_eq!(body["subType"], "INVALID_REQUEST", "{body}");
            body["message"].as_str().expect("a message").to_string()
        }
        other => panic!("expected a 400, got {other:?}"),
    }
}

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&Utc)
}

fn fixture() -> Vec<Order> {
    let order =
        |n: u32, amount, note: Option<&str>, placed: Option<&str>, vip, doc, running| Order {
            id: format!("order-{n}"),
            amount,
            note: note.map(str::to_string),
            placed_at: placed.map(at),
            vip,
            doc,
            order: amount.map(|a| a / 10),
            running,
        };
    vec![
        order(
            1,
            Some(10),
            Some("apple"),
            Some("2026-01-01T00:00:00Z"),
            Some(true),
            Some(json!({"tier": "gold", "n": {"k": 1}})),
            true,
        ),
        order(
            2,
            Some(20),
            Some("apricot"),
            Some("2026-02-01T00:00:00Z"),
            Some(false),
            Some(json!({"tier": "silver"})),
            true,
        ),
        order(3, None, Some("banana"), None, None, None, false),
        order(
            4,
            Some(30),
            Some("50%_off"),
            Some("2026-03-01T00:00:00Z"),
            Some(true),
            Some(json!({"tier": "gold"})),
            false,
        ),
    ]
}

async fn filters_over_execution_fields_and_business_columns(db: Database) {
    let (env, url, worker) = order_env(db, EnvOptions::default()).await;
    start_orders(&env, &url, &fixture()).await;
    let ids =
        |numbers: &[u32]| -> Vec<String> { numbers.iter().map(|n| format!("order-{n}")).collect() };

    // No definition is registered and no table named: a clear 400.
    let unknown = json!({
        "filter": {"processType": PROCESS_TYPE},
        "where": {"column": "amount", "op": ">", "value": 5}
    });
    let message = refusal(list_all(&env, &unknown, 10).await);
    assert!(message.contains("businessTable"), "{message}");

    // Newest first, across pages of one, over the plain list's tokens.
    let cases = [
        (
            json!({"column": "amount", "op": ">", "value": 15}),
            vec![4, 2],
        ),
        (
            json!({"column": "note", "op": "PREFIX", "value": "ap"}),
            vec![2, 1],
        ),
        (
            json!({"column": "note", "op": "PREFIX", "value": "50%_"}),
            vec![4],
        ),
        (
            json!({"column": "note", "op": "PREFIX", "value": "5_"}),
            vec![],
        ),
        (
            json!({"column": "placed_at", "op": "<", "value": "2026-02-15T00:00:00Z"}),
            vec![2, 1],
        ),
        (
            json!({"column": "vip", "op": "=", "value": true}),
            vec![4, 1],
        ),
        // Unknown (vip NULL) is not true under NOT either.
        (
            json!({"not": {"column": "vip", "op": "=", "value": true}}),
            vec![2],
        ),
        (
            json!({"column": "doc", "path": ["tier"], "op": "=", "value": "gold"}),
            vec![4, 1],
        ),
        (
            json!({"column": "doc", "path": ["n", "k"], "op": "=", "value": 1}),
            vec![1],
        ),
        (
            json!({"column": "doc", "path": ["tier"], "op": "IS NULL"}),
            vec![3],
        ),
        (
            json!({"column": "order", "op": "IN", "values": [2, 3]}),
            vec![4, 2],
        ),
        (
            json!({"field": "status", "op": "IN", "values": ["TERMINATED"]}),
            vec![4, 3],
        ),
        (
            json!({"field": "currentStateId", "op": "=", "value": HOLD_STATE}),
            vec![2, 1],
        ),
        (
            json!({"and": [{"field": "status", "op": "=", "value": "RUNNING"},
                           {"or": [{"column": "amount", "op": "IS NULL"},
                                   {"column": "note", "op": ">=", "value": "apricot"}]}]}),
            vec![2],
        ),
        (
            json!({"field": "processId", "op": "PREFIX", "value": "order-"}),
            vec![4, 3, 2, 1],
        ),
        (json!({"field": "closeTime", "op": "IS NULL"}), vec![2, 1]),
        (
            json!({"field": "paused", "op": "=", "value": false}),
            vec![4, 3, 2, 1],
        ),
    ];
    for (tree, expected) in cases {
        let found = list_all(&env, &where_body(tree.clone()), 1).await;
        assert_eq!(found.unwrap(), ids(&expected), "{tree}");
        let mut count = where_body(tree.clone());
        count["processType"] = json!(PROCESS_TYPE);
        let filter = count.as_object_mut().unwrap();
        filter.remove("filter");
        let counted: ProcessExecutionCountResponse =
            call(&env, paths::COUNT, &count).await.unwrap();
        assert_eq!(counted.count, expected.len() as u64, "{tree}");
    }

    // Counts per group, from one statement.
    let counted: ProcessExecutionCountResponse =
        call(&env, paths::COUNT, &json!({"groupBy": {"field": "status"}}))
            .await
            .unwrap();
    assert_eq!(counted.count, 4);
    let groups: Vec<(Value, u64)> = counted
        .groups
        .iter()
        .map(|g| (g.value.clone(), g.count))
        .collect();
    assert_eq!(groups.len(), 2, "{groups:?}");
    assert!(groups.contains(&(json!("RUNNING"), 2)) && groups.contains(&(json!("TERMINATED"), 2)));
    let by_vip = json!({
        "processType": PROCESS_TYPE,
        "groupBy": {"column": "vip"},
        "businessTable": {"tableName": TABLE, "primaryKeyColumn": "id"}
    });
    let counted: ProcessExecutionCountResponse = call(&env, paths::COUNT, &by_vip).await.unwrap();
    assert_eq!(
        (counted.count, counted.groups[0].count),
        (4, 2),
        "{counted:?}"
    );
    assert_eq!(counted.groups.len(), 3, "true, false and NULL: {counted:?}");
    assert!(counted
        .groups
        .iter()
        .any(|g| g.value.is_null() && g.count == 1));
    assert!(!counted.truncated);

    // Once the type is registered, its definition names the table.
    let deployment = WorkerDeployment {
        name: "orders".into(),
        version: "v1".into(),
        worker_url: url.clone(),
    };
    worker
        .register_with(&env.client, deployment, false)
        .await
        .expect("the registration");
    let found = list_all(&env, &unknown, 10).await.unwrap();
    assert_eq!(found, ids(&[4, 2, 1]));
    let mut other_table = unknown.clone();
    other_table["businessTable"] = json!({"tableName": "test_entity", "primaryKeyColumn": "id"});
    let message = refusal(list_all(&env, &other_table, 10).await);
    assert!(message.contains("businessTable"), "{message}");
    env.shutdown().await;
}

async fn a_query_past_its_time_limit_is_cancelled(db: Database) {
    let options = EnvOptions {
        query_timeout_ms: 300,
        ..EnvOptions::default()
    };
    let (env, url, _worker) = order_env(db, options).await;
    start_orders(&env, &url, &fixture()[..1]).await;
    let body = where_body(json!({"column": "amount", "op": ">", "value": 0}));
    // Reads the table's columns into the service's cache while nothing holds the table.
    assert_eq!(list_all(&env, &body, 10).await.unwrap().len(), 1);

    let mut holder = SqlSession::open(env.db()).await;
    let lock = match db {
        Database::Postgres => "BEGIN; LOCK TABLE query_orders IN ACCESS EXCLUSIVE MODE",
        Database::MySql => "LOCK TABLES query_orders WRITE",
    };
    holder.execute(lock).await.expect("lock the table");
    let refused = tokio::time::timeout(Duration::from_secs(20), list_all(&env, &body, 10))
        .await
        .expect("the query is cancelled, not left waiting");
    let message = refusal(refused);
    assert!(message.contains("api.query_timeout_ms"), "{message}");
    let release = match db {
        Database::Postgres => "ROLLBACK",
        Database::MySql => "UNLOCK TABLES",
    };
    holder.execute(release).await.expect("release the table");
    assert_eq!(list_all(&env, &body, 10).await.unwrap().len(), 1);
    env.shutdown().await;
}
