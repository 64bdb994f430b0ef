//! A rolling upgrade with processes in flight, on PostgreSQL and on MariaDB, with the
//! real binaries of the previous release (`scripts/previous-release.txt`, built by
//! `scripts/build-previous-release.sh`) and this release's services.
//!
//! The previous release installs its schema and runs; processes wait on timers and local
//! queues, and one state keeps failing against its worker. This release's installer then
//! migrates the schema under the running previous release, which must keep working on
//! it; this release's services start and the previous one gets SIGTERM, as a Helm
//! rollout does after its schema hook. Every process completes, each transition and each
//! business-row write once. An instance of the previous release restarted after the
//! migration runs or refuses, as its own start-up check decides; the test asserts which.

mod previous;
mod process;

use std::process::Stdio;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use uuid::Uuid;
use xdb_api_service::ApiServiceConfig;
use xdb_async_service::{AsyncService, AsyncServiceConfig};
use xdb_integration_tests::env::{MYSQL_TEST_TABLES_SQL, TEST_TABLES_SQL};
use xdb_integration_tests::sql::SqlClient;
use xdb_integration_tests::worker_faults::{CallMatch, StateApiKind, WorkerFaults};
use xdb_integration_tests::{eventually, Arg, Database};
use xdb_sdk::protocol::ProcessStatus;
use xdb_sdk::{Client, ProcessStartOptions};
use xdb_sys_schema::{schema_state, SchemaState, COMPATIBILITY_RECORDED_FROM, LATEST_VERSION};
use xdb_test_util::TestDatabase;

use previous::PreviousRelease;
use process::{UpgradeProcess, Wait, AWAIT_STATE, COL_COUNTER, EXECUTES, QUEUE_GO};

/// Bound for anything that takes a second or two.
const SOON: Duration = Duration::from_secs(20);
/// Fires after the migration, while only the previous release runs.
const SHORT_TIMER: Wait = Wait::Timer(8);
/// Fires after the previous release stopped.
const LONG_TIMER: Wait = Wait::Timer(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rolling_upgrade_with_processes_in_flight_postgres() {
    rolling_upgrade(Database::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rolling_upgrade_with_processes_in_flight_mariadb() {
    rolling_upgrade(Database::MySql).await;
}

async fn rolling_upgrade(database: Database) {
    xdb_integration_tests::init_tracing();
    let previous = PreviousRelease::locate();
    let (db, tables) = match database {
        Database::Postgres => (
            TestDatabase::create_postgres_without_schema().await,
            TEST_TABLES_SQL,
        ),
        Database::MySql => (
            TestDatabase::create_mysql_without_schema().await,
            MYSQL_TEST_TABLES_SQL,
        ),
    };
    let installed = previous.install_schema(db.url()).await;
    assert!(
        installed.status.success(),
        "the previous release's installer failed: {}",
        String::from_utf8_lossy(&installed.stderr)
    );
    let previous_version = xdb_sys_schema::check(db.url()).await.unwrap().installed;
    assert!(
        (1..LATEST_VERSION).contains(&previous_version),
        "the previous release ({}) installed schema {previous_version}; this one's is \
         {LATEST_VERSION}: scripts/previous-release.txt should name an older release",
        previous.commit
    );
    db.execute_sql(tables).await;
    let sql = SqlClient::connect(&db).await;

    let faults = WorkerFaults::new();
    let worker = serve_worker(
        faults.wrap(
            xdb_sdk::WorkerService::new()
                .register(UpgradeProcess)
                .router(),
        ),
    )
    .await;
    let old_listen = format!("127.0.0.1:{}", xdb_test_util::free_local_port());
    let mut old = previous.spawn_server(db.url(), &old_listen, Stdio::inherit());
    old.wait_ready(SOON).await;
    let old_client = client(&old.api_url, &worker.url);

    // Processes in flight across the whole rollout.
    let runs = [
        ("short-timer", SHORT_TIMER),
        ("long-timer", LONG_TIMER),
        ("retry", Wait::Timer(1)),
        ("queue-old", Wait::Queue),
        ("queue-new", Wait::Queue),
    ];
    faults.fail(CallMatch::state(AWAIT_STATE, StateApiKind::Execute).in_process("retry"));
    let mut executions = Vec::new();
    for (process_id, wait) in runs {
        let options = ProcessStartOptions::new()
            .global_attribute_pk_value(process_id)
            .initial_global_attribute(COL_COUNTER, 0);
        let exec = old_client
            .start_process::<UpgradeProcess>(process_id, None, wait, options)
            .await
            .unwrap_or_else(|e| panic!("the previous release starts {process_id}: {e}"));
        executions.push((process_id, exec));
    }
    for (process_id, exec) in &executions {
        if *process_id != "retry" {
            wait_for_state(&sql, process_id, exec, "WAITING_COMMANDS").await;
        }
    }
    eventually("the retry state to fail twice", SOON, || async {
        faults.failed() >= 2
    })
    .await;

    // This release's installer, under the running previous release.
    let outcome = xdb_sys_schema::install(db.url())
        .await
        .expect("this release's installer migrates the previous schema");
    assert_eq!(
        (outcome.previous_version, outcome.current_version),
        (previous_version, LATEST_VERSION),
        "{outcome}"
    );
    assert!(
        outcome.oldest_compatible <= previous_version,
        "this release's schema must keep the previous release's services working: {outcome}"
    );
    let short_exec = exec_of(&executions, "short-timer");
    assert!(
        !history(&sql, &short_exec)
            .await
            .contains(&"TIMER_FIRED".into()),
        "the short timer fired before the migration; the test ran too slowly to prove \
         that the previous release fires timers after it"
    );

    // The previous release keeps working on the migrated schema: a message, a timer and
    // the retries, with nothing of this release running yet.
    let failed_at_migration = faults.failed();
    old_client
        .publish_to_local_queue("queue-old", QUEUE_GO, "go", None)
        .await
        .expect("the previous release's API publishes after the migration");
    for process_id in ["queue-old", "short-timer"] {
        let done = old_client
            .wait_for_process_completion(process_id, Duration::from_secs(60))
            .await
            .unwrap();
        assert_eq!(
            done.status,
            ProcessStatus::Completed,
            "{process_id}: {done:?}"
        );
    }
    eventually(
        "the previous release to retry after the migration",
        SOON,
        || async { faults.failed() > failed_at_migration },
    )
    .await;

    // This release's services start; the previous release is stopped as a pod is.
    let new = NewServices::start(db.url()).await;
    let new_client = client(&new.api.url, &worker.url);
    old.terminate();
    let stopped = old.wait_exit(Duration::from_secs(60)).await;
    assert!(
        stopped.success(),
        "the previous release's SIGTERM exit: {stopped}"
    );
    // From here on only this release calls the worker.
    let failed_before_this_release = faults.failed();
    let long_exec = exec_of(&executions, "long-timer");
    assert_eq!(
        state_status(&sql, &long_exec).await.as_deref(),
        Some("WAITING_COMMANDS"),
        "the long timer must still be waiting when the previous release has stopped"
    );

    restart_previous_release(&previous, &db, previous_version, outcome.oldest_compatible).await;

    // Everything completes under this release.
    new_client
        .publish_to_local_queue("queue-new", QUEUE_GO, "go", None)
        .await
        .unwrap();
    eventually("this release to retry the failing state", SOON, || async {
        faults.failed() > failed_before_this_release
    })
    .await;
    faults.stop_failing();
    for (process_id, exec) in &executions {
        let done = new_client
            .wait_for_process_completion(process_id, Duration::from_secs(90))
            .await
            .unwrap();
        assert_eq!(
            done.status,
            ProcessStatus::Completed,
            "{process_id}: {done:?}"
        );
        assert_entity_counted_once(&sql, process_id).await;
        assert_history_once(&sql, process_id, exec).await;
    }
    assert_retries_continued(&faults);
    let left = sql.query("SELECT count(*) FROM xdb_sys_tasks", &[]).await[0].i64(0);
    assert_eq!(left, 0, "tasks left behind");

    new.shutdown().await;
    worker.shutdown().await;
}

/// Starts the previous release again on the migrated schema and asserts what its own
/// start-up check decides: a release that knows the compatibility record runs when the
/// schema declares it compatible; an older one refuses any schema but its own, naming it.
async fn restart_previous_release(
    previous: &PreviousRelease,
    db: &TestDatabase,
    previous_version: i32,
    oldest_compatible: i32,
) {
    let knows_compatibility = previous_version >= COMPATIBILITY_RECORDED_FROM;
    let runs = knows_compatibility
        && schema_state(LATEST_VERSION, Some(oldest_compatible), previous_version)
            == SchemaState::NewerCompatible;
    let listen = format!("127.0.0.1:{}", xdb_test_util::free_local_port());
    let mut restarted = previous.spawn_server(db.url(), &listen, Stdio::piped());
    if runs {
        restarted.wait_ready(SOON).await;
        restarted.terminate();
        let status = restarted.wait_exit(Duration::from_secs(60)).await;
        assert!(status.success(), "{status}");
        return;
    }
    let output = restarted.output(SOON).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success(),
        "the restarted previous release should refuse"
    );
    let expected = if knows_compatibility {
        format!("needs services of schema version {oldest_compatible} or newer")
    } else {
        format!(
            "the database's XDB schema is version {LATEST_VERSION}, newer than this binary's \
             latest ({previous_version})"
        )
    };
    assert!(
        stderr.contains(&expected),
        "expected {expected:?} in: {stderr}"
    );
}

/// The business row: each of the process's executes added one, once.
async fn assert_entity_counted_once(sql: &SqlClient, process_id: &str) {
    let counter = sql
        .query(
            "SELECT counter FROM test_entity WHERE id = $1",
            &[process_id.into()],
        )
        .await[0]
        .i32(0);
    assert_eq!(counter, EXECUTES, "{process_id}: counter");
}

/// Each transition is in the history once: the events other than failed calls are
/// exactly those of one run of the process.
async fn assert_history_once(sql: &SqlClient, process_id: &str, exec: &str) {
    let events: Vec<String> = history(sql, exec)
        .await
        .into_iter()
        .filter(|event| event != "STATE_API_FAILED")
        .collect();
    let mut expected = vec!["PROCESS_STARTED", "WAIT_UNTIL_COMPLETED"];
    if process_id.starts_with("queue") {
        // The publish that satisfies the wait commits both, consumption written first.
        expected.extend([
            "LOCAL_QUEUE_MESSAGES_CONSUMED",
            "LOCAL_QUEUE_MESSAGES_PUBLISHED",
        ]);
    } else {
        expected.push("TIMER_FIRED");
    }
    expected.extend(["EXECUTE_COMPLETED", "EXECUTE_COMPLETED", "PROCESS_CLOSED"]);
    assert_eq!(events, expected, "{process_id}: history");
}

/// The failing state's attempts went on from the previous release to this one under one
/// idempotency key, each attempt number once, and the last one succeeded.
fn assert_retries_continued(faults: &WorkerFaults) {
    let calls: Vec<_> = faults
        .calls()
        .into_iter()
        .filter(|call| call.process_id == "retry" && call.api == StateApiKind::Execute)
        .filter(|call| call.state_id == AWAIT_STATE)
        .collect();
    let attempts: Vec<u32> = calls.iter().map(|call| call.attempt).collect();
    let expected: Vec<u32> = (1..=attempts.len() as u32).collect();
    assert_eq!(attempts, expected, "attempts of the failing state");
    assert!(
        calls
            .iter()
            .all(|call| call.idempotency_key == calls[0].idempotency_key),
        "one idempotency key across the rollout: {calls:?}"
    );
}

async fn history(sql: &SqlClient, exec: &str) -> Vec<String> {
    sql.query(
        "SELECT event_type FROM xdb_sys_history_events WHERE process_execution_id = $1 \
         ORDER BY id",
        &[uuid(exec)],
    )
    .await
    .iter()
    .map(|row| row.text(0))
    .collect()
}

/// Waits until the first `Await` state of `exec` has `status`.
async fn wait_for_state(sql: &SqlClient, process_id: &str, exec: &str, status: &str) {
    eventually(
        &format!("{process_id} to be {status}"),
        SOON,
        || async move { state_status(sql, exec).await.as_deref() == Some(status) },
    )
    .await;
}

/// Status of the execution's first `Await` state.
async fn state_status(sql: &SqlClient, exec: &str) -> Option<String> {
    sql.query(
        "SELECT status FROM xdb_sys_async_state_executions \
         WHERE process_execution_id = $1 AND state_id = $2 AND state_execution_number = 1",
        &[uuid(exec), AWAIT_STATE.into()],
    )
    .await
    .first()
    .map(|row| row.text(0))
}

fn uuid(exec: &str) -> Arg {
    Arg::Uuid(Uuid::parse_str(exec).expect("an execution id"))
}

fn exec_of(executions: &[(&str, String)], process_id: &str) -> String {
    executions
        .iter()
        .find(|(id, _)| *id == process_id)
        .map(|(_, exec)| exec.clone())
        .expect("a started process")
}

fn client(api_url: &str, worker_url: &str) -> Client {
    Client::new(api_url)
        .with_worker_url(worker_url)
        .with_request_timeout(Duration::from_secs(30))
}

/// A server task and the sender that stops it gracefully.
struct Served {
    url: String,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Served {
    async fn shutdown(self) {
        let _ = self.stop.send(());
        let _ = tokio::time::timeout(Duration::from_secs(10), self.task).await;
    }
}

async fn serve_worker(router: axum::Router) -> Served {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await
            .expect("the worker serves");
    });
    Served { url, stop, task }
}

/// This release's API and async service, in this process.
struct NewServices {
    api: Served,
    async_service: AsyncService,
}

impl NewServices {
    async fn start(database_url: &str) -> Self {
        let mut async_config = AsyncServiceConfig::new(database_url);
        async_config.async_service.instance_id = Some("this-release".into());
        async_config.async_service.lease_seconds = 3.0;
        async_config.async_service.poll_interval_ms = 100;
        async_config.async_service.default_api_timeout_seconds = 5;
        let async_service = AsyncService::start(async_config)
            .await
            .expect("this release's async service starts on its schema");

        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let mut config = ApiServiceConfig::new(database_url);
        config.api.listen = address;
        let state = xdb_api_service::connect(config)
            .await
            .expect("this release's API service starts on its schema");
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            xdb_api_service::serve(state, listener, async {
                let _ = stopped.await;
            })
            .await
            .expect("this release's API service serves");
        });
        Self {
            api: Served {
                url: format!("http://{address}"),
                stop,
                task,
            },
            async_service,
        }
    }

    async fn shutdown(self) {
        self.async_service
            .shutdown()
            .await
            .expect("the async service stops");
        self.api.shutdown().await;
    }
}
