//! Fleet operations under faults:
//! - a batch terminating 20,000 executions (`XDB_FAULTS_BATCH_EXECUTIONS`) under a rate
//!   limit while the async instance driving it is SIGKILLed twice and the API service
//!   restarts: every execution handled exactly once, the counts exact;
//! - a start whose answer was lost with its API instance, SIGKILLed after the commit:
//!   sent again with its request id to another instance, it answers the same execution,
//!   and no second one exists.

use std::process::Stdio;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use xdb_integration_tests::{eventually, Database, EnvOptions, XdbTestEnv, API_READY_LINE};
use xdb_protocol::paths;

use super::{ASYNC_INSTANCE_BIN, ONE_AT_A_TIME};

const API_INSTANCE_BIN: &str = env!("CARGO_BIN_EXE_xdb-test-api-instance");
const TABLE: &str = "fleet_orders";
const PROCESS_TYPE: &str = "FleetOrder";
/// Longest the batch may take.
const BATCH_DEADLINE: Duration = Duration::from_secs(600);

fn batch_executions() -> usize {
    std::env::var("XDB_FAULTS_BATCH_EXECUTIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}

async fn call(client: &reqwest::Client, api: &str, path: &str, body: &Value) -> (u16, Value) {
    let response = client
        .post(format!("{api}{path}"))
        .json(body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    let status = response.status().as_u16();
    (status, response.json().await.expect("a JSON answer"))
}

fn start_body(i: usize) -> Value {
    json!({
        "processId": format!("fleet-{i}"),
        "processType": PROCESS_TYPE,
        "workerUrl": "http://127.0.0.1:9/unused",
        "processStartConfig": {"globalAttributeConfig": {
            "tableName": TABLE,
            "primaryKey": {"column": "id", "value": format!("fleet-{i}")},
            "initialWrite": [{"column": "amount", "value": i}],
        }},
    })
}

async fn create_table(env: &XdbTestEnv) {
    env.execute_sql(&format!(
        "CREATE TABLE {TABLE} (id VARCHAR(255) NOT NULL PRIMARY KEY, amount INTEGER)"
    ))
    .await;
}

/// Executions with no state running: nothing calls a worker, they wait to be stopped.
/// A start the service answers 503 (its database busy: the machine is shared) is sent
/// again with its request id after the second the answer asks for, as the SDK clients
/// do, for a while.
async fn start_executions(env: &XdbTestEnv, count: usize) {
    let client = reqwest::Client::new();
    let api = env.api_url().to_owned();
    let failed: Vec<String> = futures::stream::iter(0..count)
        .map(|i| {
            let (client, api) = (client.clone(), api.clone());
            async move {
                let mut start = start_body(i);
                start["requestId"] = json!(format!("fleet-start-{i}"));
                let deadline = Instant::now() + Duration::from_secs(60);
                loop {
                    let (status, body) = call(&client, &api, paths::START, &start).await;
                    if status == 503 && Instant::now() < deadline {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        continue;
                    }
                    return (status != 200).then(|| format!("{i}: {status} {body}"));
                }
            }
        })
        .buffer_unordered(32)
        .filter_map(|failed| async move { failed })
        .collect()
        .await;
    assert!(
        failed.is_empty(),
        "starts failed: {:?}",
        &failed[..failed.len().min(5)]
    );
}

async fn batch(env: &XdbTestEnv, batch_id: &str) -> Value {
    let client = reqwest::Client::new();
    let body = json!({ "batchId": batch_id });
    // The API service may be restarting.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let sent = client
            .post(format!("{}{}", env.api_url(), paths::BATCH_DESCRIBE))
            .json(&body)
            .send()
            .await;
        if let Ok(response) = sent {
            if response.status().is_success() {
                return response.json::<Value>().await.expect("JSON")["batch"].clone();
            }
        }
        assert!(Instant::now() < deadline, "describe batch {batch_id}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn done(env: &XdbTestEnv, batch_id: &str) -> u64 {
    batch(env, batch_id).await["done"].as_u64().unwrap_or(0)
}

async fn batch_survives_kills_and_restarts(db: Database) {
    let _serial = ONE_AT_A_TIME.lock().await;
    let count = batch_executions();
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            async_instances: 0,
            lease_seconds: 2.0,
            ..Default::default()
        },
    )
    .await;
    create_table(&env).await;
    let started = Instant::now();
    start_executions(&env, count).await;
    let starting = started.elapsed();
    let mut driver = env.spawn_async_process(ASYNC_INSTANCE_BIN, "fleet-0").await;
    let client = reqwest::Client::new();
    let (status, answer) = call(
        &client,
        env.api_url(),
        paths::BATCH_START,
        &json!({
            "requestId": "fleet-terminate",
            "operation": "TERMINATE",
            "processType": PROCESS_TYPE,
            "businessTable": {"tableName": TABLE, "primaryKeyColumn": "id"},
            "where": {"column": "amount", "op": ">=", "value": 0},
            "ratePerSecond": 2000,
            "reason": "fleet cleanup",
        }),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["expected"], count, "{answer}");
    let batch_id = answer["batchId"].as_str().unwrap().to_owned();
    let walking = Instant::now();

    let mut kills = 0;
    for (i, mark) in [(1, count / 4), (2, count / 2)] {
        eventually("the batch to get on", BATCH_DEADLINE, || async {
            done(&env, &batch_id).await >= mark as u64
        })
        .await;
        driver.kill().await;
        kills += 1;
        if i == 1 {
            env.restart_api().await;
        }
        driver = env
            .spawn_async_process(ASYNC_INSTANCE_BIN, &format!("fleet-{i}"))
            .await;
    }
    eventually("the batch to complete", BATCH_DEADLINE, || async {
        batch(&env, &batch_id).await["status"] == "COMPLETED"
    })
    .await;
    let walked = walking.elapsed();
    let described = batch(&env, &batch_id).await;
    let counts = (
        described["matched"].as_u64(),
        described["done"].as_u64(),
        described["skipped"].as_u64(),
        described["failed"].as_u64(),
    );
    let n = Some(count as u64);
    assert_eq!(counts, (n, n, Some(0), Some(0)), "{described}");
    let terminated = env
        .count(
            "SELECT count(*) FROM xdb_sys_process_executions WHERE status = 'TERMINATED'",
            &[],
        )
        .await;
    assert_eq!(terminated as usize, count, "every execution terminated");
    let receipts = env
        .count(
            "SELECT count(*) FROM xdb_sys_request_receipts WHERE outcome = 'DONE' \
               AND batch_id IS NOT NULL",
            &[],
        )
        .await;
    assert_eq!(receipts as usize, count, "one receipt per execution");
    eprintln!(
        "batch-faults-report db={db:?} executions={count} starts={:.1}s walk={:.1}s \
         ({:.0}/s) async-kills={kills} api-restarts=1",
        starting.as_secs_f64(),
        walked.as_secs_f64(),
        count as f64 / walked.as_secs_f64()
    );
    driver.kill().await;
    env.shutdown().await;
}

/// An API instance as its own process, holding its answer to a start after the commit.
struct HeldApi {
    child: tokio::process::Child,
    url: String,
    stderr: tokio::io::Lines<BufReader<tokio::process::ChildStderr>>,
}

async fn spawn_held_api(database_url: &str) -> HeldApi {
    let mut child = tokio::process::Command::new(API_INSTANCE_BIN)
        .arg("--database-url")
        .arg(database_url)
        .env("XDB_API_LISTEN", "127.0.0.1:0")
        .env("XDB_API_INTERNAL_LISTEN", "127.0.0.1:0")
        .env(xdb_api_service::fault_injection::HOLD_AFTER_COMMIT, "start")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the API instance");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let address = tokio::time::timeout(Duration::from_secs(20), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(rest) = line.strip_prefix(API_READY_LINE) {
                return Some(rest.trim().to_owned());
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
    .expect("the API instance reports that it listens");
    let stderr = BufReader::new(child.stderr.take().expect("stderr")).lines();
    HeldApi {
        child,
        url: format!("http://{address}"),
        stderr,
    }
}

async fn a_start_whose_answer_died_is_answered_again(db: Database) {
    let _serial = ONE_AT_A_TIME.lock().await;
    let env = XdbTestEnv::start_with(db, EnvOptions::default()).await;
    create_table(&env).await;
    let mut held = spawn_held_api(env.db().url()).await;
    let mut body = start_body(7);
    body["requestId"] = json!("start-fleet-7");
    let client = reqwest::Client::new();
    let lost = tokio::spawn({
        let (client, url, body) = (client.clone(), held.url.clone(), body.clone());
        async move {
            client
                .post(format!("{url}{}", paths::START))
                .json(&body)
                .send()
                .await
        }
    });
    let held_line = tokio::time::timeout(Duration::from_secs(20), async {
        while let Ok(Some(line)) = held.stderr.next_line().await {
            if line.contains(xdb_api_service::fault_injection::HELD_LINE) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(
        held_line,
        Ok(true),
        "the start committed and held its answer"
    );
    held.child.kill().await.expect("SIGKILL the API instance");
    let lost = lost.await.expect("the request task");
    assert!(lost.is_err(), "the answer died with the instance: {lost:?}");
    let executions = env
        .count(
            "SELECT count(*) FROM xdb_sys_process_executions WHERE process_id = 'fleet-7'",
            &[],
        )
        .await;
    assert_eq!(executions, 1, "the start committed before the kill");

    // The client sends it again, with the same id, to another instance.
    let (status, answer) = call(&client, env.api_url(), paths::START, &body).await;
    assert_eq!(status, 200, "{answer}");
    let (_, described) = call(
        &client,
        env.api_url(),
        paths::DESCRIBE,
        &json!({"processId": "fleet-7"}),
    )
    .await;
    assert_eq!(
        answer["processExecutionId"], described["processExecutionId"],
        "the committed execution's id"
    );
    let executions = env
        .count(
            "SELECT count(*) FROM xdb_sys_process_executions WHERE process_id = 'fleet-7'",
            &[],
        )
        .await;
    assert_eq!(executions, 1, "no second execution");
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_batch_faults_lose_and_duplicate_nothing() {
    batch_survives_kills_and_restarts(Database::Postgres).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_batch_faults_lose_and_duplicate_nothing() {
    batch_survives_kills_and_restarts(Database::MySql).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_lost_answer_faults_lose_and_duplicate_nothing() {
    a_start_whose_answer_died_is_answered_again(Database::Postgres).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_lost_answer_faults_lose_and_duplicate_nothing() {
    a_start_whose_answer_died_is_answered_again(Database::MySql).await
}
