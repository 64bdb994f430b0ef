//! Overload: a burst of starts against an API service with a small in-flight limit, while
//! a transaction holds `xdb_sys_tasks` locked (a database that answers slowly). What
//! the service cannot take now is refused at once with 503 `OVERLOADED` and
//! `Retry-After`, never queued without bound; what it took completes once the lock is
//! gone; a refused start wrote nothing; and the service accepts again afterwards.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use serde_json::{json, Value};
use tokio::sync::oneshot;
use xdb_api_service::ApiServiceConfig;
use xdb_integration_tests::metrics::{sample_sum, scrape};
use xdb_integration_tests::{eventually, Database, XdbTestEnv};
use xdb_sdk::*;
use xdb_test_util::mysql_async::prelude::Queryable;
use xdb_test_util::TestDatabase;

use crate::common::{serve, SOON};

both_databases!(a_burst_on_a_locked_task_table_is_refused_at_once_and_leaves_no_trace);

/// Start calls of the burst, and how many a client sends at once.
const STARTS: usize = 2_000;
const CLIENTS: usize = 200;
/// The guarded service's limits: a small pool and few slots, so the burst overflows.
const POOL_SIZE: usize = 4;
const IN_FLIGHT: usize = 16;
const ADMISSION_WAIT_MS: u64 = 50;
const POOL_WAIT_MS: u64 = 300;
/// How long the transaction holds the task table.
const LOCK_HOLD: Duration = Duration::from_secs(10);
/// Scheduling slack on a busy two-core machine, over the bounds the settings give.
const SLACK: Duration = Duration::from_secs(2);

/// One state whose execute completes the process.
#[derive(Debug, Clone, Default)]
struct Quick;

impl Process for Quick {
    fn state_schema(&self) -> StateSchema {
        StateSchema::with_starting_state(QuickState)
    }
}

struct QuickState;

#[async_trait]
impl AsyncState for QuickState {
    type Input = ();

    async fn execute(
        &self,
        _ctx: &Context,
        _input: (),
        _results: &CommandResults,
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        Ok(StateDecision::graceful_complete_process(()))
    }
}

/// What one start call got.
#[derive(Debug)]
struct Answer {
    process_id: String,
    status: u16,
    sub_type: Option<String>,
    retry_after: Option<String>,
    took: Duration,
}

/// A transaction on its own connection holding `xdb_sys_tasks` against every write.
enum TaskLock {
    Postgres(tokio_postgres::Client),
    MySql(xdb_test_util::mysql_async::Conn),
}

impl TaskLock {
    async fn take(db: &TestDatabase) -> TaskLock {
        match db.dialect() {
            Database::Postgres => {
                let client = db.client().await;
                client
                    .batch_execute("BEGIN; LOCK TABLE xdb_sys_tasks IN EXCLUSIVE MODE")
                    .await
                    .expect("lock the task table");
                TaskLock::Postgres(client)
            }
            Database::MySql => {
                // A locking read under REPEATABLE READ takes next-key locks up to the
                // index's end, so no other session can insert a task row.
                let mut conn = db.mysql_conn().await;
                conn.query_drop(
                    "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ; \
                     START TRANSACTION; SELECT id FROM xdb_sys_tasks FOR UPDATE",
                )
                .await
                .expect("lock the task table");
                TaskLock::MySql(conn)
            }
        }
    }

    async fn release(self) {
        match self {
            TaskLock::Postgres(client) => client.batch_execute("ROLLBACK").await,
            TaskLock::MySql(mut conn) => {
                return conn.query_drop("ROLLBACK").await.expect("release the lock")
            }
        }
        .expect("release the lock")
    }
}

/// An API service on the test database with the small limits above; its URL and the
/// sender that stops it.
async fn guarded_api(env: &XdbTestEnv) -> (String, oneshot::Sender<()>) {
    let mut config = ApiServiceConfig::new(env.db().url());
    config.api.pool_size = POOL_SIZE;
    config.api.max_in_flight_requests = Some(IN_FLIGHT);
    config.api.admission_wait_ms = ADMISSION_WAIT_MS;
    config.api.pool_wait_ms = POOL_WAIT_MS;
    xdb_integration_tests::serve_api(config).await
}

/// Sends `STARTS` start calls, `CLIENTS` at a time, each answered as it comes.
async fn burst(api_url: &str, worker: &str) -> Vec<Answer> {
    let definition = ProcessDefinition::new(Quick);
    let http = reqwest::Client::builder()
        .timeout(LOCK_HOLD * 3)
        .build()
        .expect("an HTTP client");
    let url = format!("{api_url}{}", protocol::paths::START);
    let next = Arc::new(AtomicUsize::new(0));
    let clients = (0..CLIENTS).map(|_| {
        let (http, url, next) = (http.clone(), url.clone(), next.clone());
        let body = json!({
            "processType": definition.process_type(),
            "workerUrl": worker,
            "startStateId": definition.starting_state_id(),
            // As the SDK sends it: QuickState has no waitUntil.
            "startStateConfig": definition.state_config("QuickState").expect("a state"),
        });
        async move {
            let mut answers = Vec::new();
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= STARTS {
                    return answers;
                }
                let process_id = format!("overload-{index}");
                let mut body = body.clone();
                body["processId"] = json!(process_id);
                let began = Instant::now();
                let response = http.post(&url).json(&body).send().await.expect("sent");
                let status = response.status().as_u16();
                let retry_after = response
                    .headers()
                    .get("retry-after")
                    .map(|v| v.to_str().expect("ASCII").to_string());
                let answer: Value = response.json().await.expect("a JSON answer");
                answers.push(Answer {
                    process_id,
                    status,
                    sub_type: answer["subType"].as_str().map(str::to_string),
                    retry_after,
                    took: began.elapsed(),
                });
            }
        }
    });
    join_all(clients).await.into_iter().flatten().collect()
}

async fn refused_total(api_url: &str, reason: &str) -> f64 {
    let text = scrape(api_url).await;
    sample_sum(
        &text,
        "xdb_api_requests_refused_total",
        &[("reason", reason)],
    )
    .unwrap_or(0.0)
}

async fn a_burst_on_a_locked_task_table_is_refused_at_once_and_leaves_no_trace(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let worker = serve(&mut env, &Quick).await;
    let (api_url, stop_api) = guarded_api(&env).await;

    let lock = TaskLock::take(env.db()).await;
    let locked_at = Instant::now();
    let flood = tokio::spawn({
        let (api_url, worker) = (api_url.clone(), worker.clone());
        async move { burst(&api_url, &worker).await }
    });
    // While every slot is taken, the orchestrator's probe and the metrics still answer.
    eventually("the burst to be refused", SOON, || async {
        refused_total(&api_url, "in_flight").await > 0.0
    })
    .await;
    let probe = Instant::now();
    let live = reqwest::get(format!("{api_url}/health/live"))
        .await
        .unwrap();
    assert_eq!(live.status(), 200);
    assert!(
        probe.elapsed() < SLACK,
        "the probe took {:?}",
        probe.elapsed()
    );
    tokio::time::sleep_until((locked_at + LOCK_HOLD).into()).await;
    lock.release().await;
    let answers = flood.await.expect("the burst ran");
    assert_eq!(answers.len(), STARTS);

    let (accepted, refused): (Vec<&Answer>, Vec<&Answer>) =
        answers.iter().partition(|a| a.status == 200);
    for answer in &refused {
        assert_eq!(answer.status, 503, "{answer:?}");
        assert_eq!(answer.sub_type.as_deref(), Some("OVERLOADED"), "{answer:?}");
        assert_eq!(answer.retry_after.as_deref(), Some("1"), "{answer:?}");
    }
    assert!(!refused.is_empty() && !accepted.is_empty(), "{answers:?}");
    // A refusal waited for a slot, then at most for a connection: never for the lock.
    let refusal_bound = Duration::from_millis(ADMISSION_WAIT_MS + POOL_WAIT_MS) + SLACK;
    let slowest_refusal = refused.iter().map(|a| a.took).max().unwrap();
    assert!(
        slowest_refusal <= refusal_bound,
        "a refusal took {slowest_refusal:?} (bound {refusal_bound:?})"
    );
    // What was taken waited for the lock, no longer.
    let slowest = answers.iter().map(|a| a.took).max().unwrap();
    assert!(slowest <= LOCK_HOLD + SLACK, "a start took {slowest:?}");
    assert!(
        accepted.len() <= IN_FLIGHT,
        "more taken than slots: {}",
        accepted.len()
    );

    // Every refusal is counted, by reason (admitted first starts queue for the
    // batcher on both databases, so which reasons occur depends on timing).
    let mut counted = 0.0;
    for reason in ["in_flight", "waiting", "pool_wait"] {
        counted += refused_total(&api_url, reason).await;
    }
    assert_eq!(counted as usize, refused.len());

    // Everything taken completes; nothing refused left a row.
    let accepted_ids: BTreeSet<String> = accepted.iter().map(|a| a.process_id.clone()).collect();
    let all_completed = xdb_test_util::wait_until(SOON * 3, Duration::from_millis(50), || async {
        env.count(
            "SELECT count(*) FROM xdb_sys_process_executions \
             WHERE process_id LIKE 'overload-%' AND status = 'COMPLETED'",
            &[],
        )
        .await as usize
            == accepted_ids.len()
    })
    .await;
    if all_completed.is_err() {
        let rows = env
            .query(
                "SELECT process_id, status FROM xdb_sys_process_executions \
                 WHERE process_id LIKE 'overload-%'",
                &[],
            )
            .await;
        let tasks = env.query("SELECT * FROM xdb_sys_tasks", &[]).await;
        panic!("accepted starts did not all complete: {rows:?}\ntasks: {tasks:?}");
    }
    let written: BTreeSet<String> = env
        .query(
            "SELECT process_id FROM xdb_sys_process_executions WHERE process_id LIKE 'overload-%'",
            &[],
        )
        .await
        .iter()
        .map(|row| row.text(0))
        .collect();
    assert_eq!(written, accepted_ids, "only accepted starts wrote rows");
    eventually("the task table to drain", SOON, || async {
        env.count("SELECT count(*) FROM xdb_sys_tasks", &[]).await == 0
    })
    .await;

    // The lock gone, the service takes starts again (the SDK would retry a refusal).
    let client = Client::new(&api_url);
    let definition = ProcessDefinition::new(Quick);
    let execution = client
        .start_process_with(
            &definition,
            "overload-after",
            Some(&worker),
            (),
            ProcessStartOptions::new(),
        )
        .await
        .expect("a start after the lock is taken");
    let done = client
        .wait_for_process_completion("overload-after", SOON)
        .await
        .expect("waited");
    assert_eq!(done.process_execution_id, execution);
    assert_eq!(done.status, protocol::ProcessStatus::Completed);

    let _ = stop_api.send(());
    env.shutdown().await;
}
