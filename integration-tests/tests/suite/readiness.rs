//! Readiness and admitted starts under saturation. Every pooled connection of an API
//! instance is held by a start waiting on a locked task table, and both statement
//! batches are in flight: `/health/ready` still answers 200 at once (it reads the
//! background database probe, not the store); a start queued behind them is refused
//! with 503 `OVERLOADED` and `Retry-After` after `api.pool_wait_ms`, and never runs
//! later. Cut from its database (a blackholed proxy), the instance turns unready, and
//! ready again once the path heals.
//!
//! The saturated case runs on PostgreSQL only: on MariaDB the held starts did not
//! always show as lock waits in `information_schema.INNODB_TRX`, so the test could not
//! tell reliably when both connections were taken.

use std::time::{Duration, Instant};

use futures::future::join_all;
use serde_json::{json, Value};
use tokio::sync::oneshot;
use xdb_api_service::ApiServiceConfig;
use xdb_integration_tests::tcp_proxy::{Direction, TcpProxy};
use xdb_integration_tests::{eventually, serve_api, Database, XdbTestEnv};
use xdb_sdk::protocol::paths;
use xdb_test_util::TestDatabase;

use crate::common::SOON;

both_databases!(an_api_cut_from_its_database_turns_unready_then_ready_again);

/// Two connections, both held by the two batches in flight.
const POOL_SIZE: usize = 2;
const POOL_WAIT_MS: u64 = 300;
/// Scheduling slack on a busy two-core machine.
const SLACK: Duration = Duration::from_secs(2);

/// A transaction on its own connection holding `xdb_sys_tasks` against every insert.
async fn lock_task_table(db: &TestDatabase) -> tokio_postgres::Client {
    let client = db.client().await;
    client
        .batch_execute("BEGIN; LOCK TABLE xdb_sys_tasks IN EXCLUSIVE MODE")
        .await
        .expect("lock the task table");
    client
}

/// Starts of this test's database waiting for the task table's lock.
async fn starts_waiting(env: &XdbTestEnv) -> i64 {
    env.count(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
         AND wait_event_type = 'Lock' \
         AND query LIKE '%xdb_sys_latest_process_executions%'",
        &[],
    )
    .await
}

/// A start call's status, `subType`, `Retry-After` and duration.
async fn start(
    http: &reqwest::Client,
    api_url: &str,
    process_id: &str,
) -> (u16, Option<String>, Option<String>, Duration) {
    let began = Instant::now();
    let response = http
        .post(format!("{api_url}{}", paths::START))
        .json(&json!({
            "processId": process_id,
            "processType": "Parked",
            // Nobody listens there: the processes only need to exist.
            "workerUrl": "http://127.0.0.1:9",
            "startStateId": "S",
        }))
        .send()
        .await
        .expect("an answer before the client's timeout");
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().expect("ASCII").to_string());
    let body: Value = response.json().await.expect("a JSON answer");
    let sub_type = body["subType"].as_str().map(str::to_string);
    (status, sub_type, retry_after, began.elapsed())
}

async fn ready_status(http: &reqwest::Client, api_url: &str) -> (u16, Duration) {
    let began = Instant::now();
    let status = http
        .get(format!("{api_url}/health/ready"))
        .send()
        .await
        .map_or(0, |r| r.status().as_u16());
    (status, began.elapsed())
}

/// An API instance on the test database through `proxy`, with the limits above.
async fn api_through(proxy: &TcpProxy, env: &XdbTestEnv) -> (String, oneshot::Sender<()>) {
    let mut config = ApiServiceConfig::new(proxy.url_to(env.db().url()));
    config.api.pool_size = POOL_SIZE;
    config.api.pool_wait_ms = POOL_WAIT_MS;
    serve_api(config).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saturated_api_stays_ready_and_refuses_queued_starts_unsent() {
    let env = XdbTestEnv::start(Database::Postgres).await;
    let proxy = TcpProxy::start_for_url(env.db().url()).await;
    let (api_url, stop_api) = api_through(&proxy, &env).await;
    // Without a deadline, a queued start would wait for the lock: the client gives up
    // long before the lock goes, and the test fails there.
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("an HTTP client");
    assert_eq!(ready_status(&http, &api_url).await.0, 200);

    // Two starts, one after the other so that each takes a batch of its own: both
    // batch slots and both pooled connections wait on the lock.
    let lock = lock_task_table(env.db()).await;
    let mut held = Vec::new();
    for (index, process_id) in ["held-a", "held-b"].into_iter().enumerate() {
        held.push(tokio::spawn({
            let (http, api_url) = (http.clone(), api_url.clone());
            async move { start(&http, &api_url, process_id).await }
        }));
        eventually("the start to wait on the lock", SOON, || async {
            starts_waiting(&env).await > index as i64
        })
        .await;
    }

    // Saturated, and ready: the probe queues behind nothing.
    for _ in 0..3 {
        let (status, took) = ready_status(&http, &api_url).await;
        assert_eq!(status, 200, "ready while saturated");
        assert!(took < SLACK, "the readiness probe took {took:?}");
    }

    // Starts queued behind the busy batches are refused once the pool wait is over.
    let queued = ["queued-c", "queued-d", "queued-e"];
    let refused = join_all(queued.iter().map(|id| start(&http, &api_url, id))).await;
    for (id, (status, sub_type, retry_after, took)) in queued.iter().zip(&refused) {
        assert_eq!(*status, 503, "{id}");
        assert_eq!(sub_type.as_deref(), Some("OVERLOADED"), "{id}");
        assert_eq!(retry_after.as_deref(), Some("1"), "{id}");
        let bound = Duration::from_millis(POOL_WAIT_MS) + SLACK;
        assert!(*took < bound, "{id} was refused after {took:?}");
    }

    lock.batch_execute("ROLLBACK")
        .await
        .expect("release the lock");
    for answer in join_all(held).await {
        assert_eq!(answer.expect("the start ran").0, 200);
    }
    // This start goes out after everything queued before it was taken or dropped.
    assert_eq!(start(&http, &api_url, "after").await.0, 200);
    for id in queued {
        assert!(
            env.process_rows_of(id).await.is_empty(),
            "the refused start {id} ran later"
        );
    }
    assert_eq!(env.process_rows_of("after").await.len(), 1);

    let _ = stop_api.send(());
    env.shutdown().await;
}

async fn an_api_cut_from_its_database_turns_unready_then_ready_again(db: Database) {
    let env = XdbTestEnv::start(db).await;
    let proxy = TcpProxy::start_for_url(env.db().url()).await;
    let (api_url, stop_api) = api_through(&proxy, &env).await;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("an HTTP client");
    assert_eq!(ready_status(&http, &api_url).await.0, 200);

    // Cut from the database: unready within the probe's limit; healed: ready again.
    proxy.blackhole(Direction::Both);
    eventually("the API to report not ready", SOON, || async {
        ready_status(&http, &api_url).await.0 == 503
    })
    .await;
    proxy.heal();
    eventually("the API to report ready again", SOON, || async {
        ready_status(&http, &api_url).await.0 == 200
    })
    .await;

    let _ = stop_api.send(());
    env.shutdown().await;
}
