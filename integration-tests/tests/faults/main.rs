//! The fault-injection suite: 1,000 site creations (the counted-site process, seed 004's
//! shape) run while, at random points, async-service instances are SIGKILLed and
//! replaced, the API service restarts, the database server restarts, workers answer
//! 500s, hang past their timeouts or answer malformed bodies, and tasks are delivered
//! twice (their leases expired under a working instance). At the end the database must
//! show every process completed, every step's business write done exactly once, and no
//! task, lease or message left over. The counts are printed.
//!
//! `partitions/`: network partitions between the services and the database or the
//! worker (a fault-injecting TCP proxy), one `partition-report` line per fault.
//!
//! `schedules`: a cron schedule firing every second while async instances are SIGKILLed
//! and the database server restarts: every firing started once, never early, one
//! `schedule-faults-report` line per database.
//!
//! `pulsar_broker`: ten restarts of a Pulsar broker of the test's own under load; the
//! async instances recover by themselves (PostgreSQL only, about five minutes).
//!
//! Bounded: `XDB_FAULTS_PROCESSES` (default 1000) processes, a few minutes per database.
//! The two databases run one after the other (a restart of one server is enough noise).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use xdb_config::QueueMode;
use xdb_integration_tests::chaos::{Chaos, ChaosRates};
use xdb_integration_tests::processes::counted_site::{self, CountedSiteProcess};
use xdb_integration_tests::{db_server, eventually, Database, EnvOptions, XdbTestEnv};
use xdb_samples::site_services::{ExternalServices, Operation};
use xdb_sdk::protocol::ErrorSubType;
use xdb_sdk::{Client, ClientError, WorkerService};

mod fleet;
mod partitions;
mod pulsar_broker;
mod schedules;

const ASYNC_INSTANCE_BIN: &str = env!("CARGO_BIN_EXE_xdb-test-async-instance");
/// One database at a time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Processes per run: `XDB_FAULTS_PROCESSES` (default 1,000) with the database queue,
/// `XDB_FAULTS_PULSAR_PROCESSES` (default 300) in Pulsar mode, whose local broker is
/// meant for modest volumes.
fn processes(mode: QueueMode) -> usize {
    let (variable, default) = match mode {
        QueueMode::Database => ("XDB_FAULTS_PROCESSES", 1000),
        QueueMode::Pulsar => ("XDB_FAULTS_PULSAR_PROCESSES", 300),
    };
    std::env::var(variable)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[derive(Debug, Default)]
struct Injected {
    kills: AtomicU64,
    api_restarts: AtomicU64,
    database_restarts: AtomicU64,
    expired_leases: AtomicU64,
}

/// Starts `site`, retrying while the API service or the database is down; a start that
/// went through before its answer was lost shows as "already started".
async fn start_until_accepted(client: &Client, worker: &str, site: &str) -> u32 {
    let mut refusals = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match counted_site::start(client, worker, site).await {
            Ok(_) => return refusals,
            Err(ClientError::Api { error, .. })
                if error.sub_type == ErrorSubType::ProcessAlreadyStarted =>
            {
                return refusals
            }
            Err(error) => {
                assert!(Instant::now() < deadline, "start {site}: {error}");
                refusals += 1;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

/// Expires every lease now held, under the instances working on those tasks, so other
/// instances claim them too: each such task is delivered twice. Returns how many.
async fn expire_leases(env: &XdbTestEnv) -> u64 {
    let leased = env
        .count(
            "SELECT count(*) FROM xdb_sys_tasks WHERE lease_owner IS NOT NULL",
            &[],
        )
        .await;
    env.execute_sql(
        "UPDATE xdb_sys_tasks SET lease_expires_at = fire_at WHERE lease_owner IS NOT NULL",
    )
    .await;
    leased as u64
}

async fn faults_lose_and_duplicate_nothing(db: Database, mode: QueueMode) {
    let _serial = ONE_AT_A_TIME.lock().await;
    let count = processes(mode);
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            async_instances: 1,
            lease_seconds: 2.0,
            queue_mode: mode,
            // Pulsar mode: a task whose change event went with a killed instance, or
            // whose lease was expired under its instance, is found by the sweep.
            pulsar_sweep_after_ms: 5_000,
            ..Default::default()
        },
    )
    .await;
    let services = ExternalServices::faulty(0.1, 7);
    let chaos = Chaos::new(
        ChaosRates {
            server_error: 0.03,
            hang: 0.005,
            malformed: 0.02,
            // The environment's state API timeout is 5 s.
            hang_for: Duration::from_secs(6),
        },
        11,
    );
    let router = WorkerService::new()
        .register(CountedSiteProcess::new(services.clone()))
        .router();
    let worker = env.start_worker(chaos.wrap(router)).await;
    let mut instances = vec![
        env.spawn_async_process(ASYNC_INSTANCE_BIN, "victim-0")
            .await,
        env.spawn_async_process(ASYNC_INSTANCE_BIN, "victim-1")
            .await,
    ];
    let injected = Arc::new(Injected::default());
    let began = Instant::now();
    let site = |i: usize| format!("f-{i:04}");

    // Start every process, 16 at a time, while the faults below happen.
    let starts = {
        let client = env.client.clone();
        let worker = worker.clone();
        futures::stream::iter(0..count)
            .map(move |i| {
                let worker = worker.clone();
                let client = client.clone();
                async move { start_until_accepted(&client, &worker, &site(i)).await }
            })
            .buffer_unordered(16)
            .fold(0u32, |sum, refused| async move { sum + refused })
    };
    let mut rng = StdRng::seed_from_u64(3);
    let refused_starts;
    {
        tokio::pin!(starts);
        let mut api_restarted = false;
        let mut database_restarted = false;
        let mut step = 0u32;
        loop {
            tokio::select! {
                refused = &mut starts => { refused_starts = refused; break; }
                _ = tokio::time::sleep(Duration::from_millis(rng.gen_range(400..1200))) => {}
            }
            step += 1;
            match rng.gen_range(0..3) {
                // SIGKILL an instance mid-flight and start a replacement.
                0 => {
                    let victim = instances.remove(rng.gen_range(0..instances.len()));
                    victim.kill().await;
                    injected.kills.fetch_add(1, Ordering::SeqCst);
                    let id = format!("victim-{}", 2 + step);
                    instances.push(env.spawn_async_process(ASYNC_INSTANCE_BIN, &id).await);
                }
                // Deliver leased tasks twice: expire their leases under the instances
                // working on them, so another instance claims them too.
                1 => {
                    injected
                        .expired_leases
                        .fetch_add(expire_leases(&env).await, Ordering::SeqCst);
                }
                _ if !api_restarted && step >= 3 => {
                    api_restarted = true;
                    env.restart_api().await;
                    injected.api_restarts.fetch_add(1, Ordering::SeqCst);
                }
                _ if !database_restarted && step >= 6 => {
                    database_restarted = true;
                    db_server::restart(db);
                    env.reconnect_sql().await;
                    injected.database_restarts.fetch_add(1, Ordering::SeqCst);
                }
                _ => {}
            }
        }
        // Whatever did not happen while starting happens now, with work still running.
        if injected.kills.load(Ordering::SeqCst) == 0 {
            let victim = instances.remove(0);
            victim.kill().await;
            injected.kills.fetch_add(1, Ordering::SeqCst);
            instances.push(
                env.spawn_async_process(ASYNC_INSTANCE_BIN, "victim-late")
                    .await,
            );
        }
        if injected.expired_leases.load(Ordering::SeqCst) == 0 {
            eventually("a task to be leased", Duration::from_secs(10), || async {
                env.count(
                    "SELECT count(*) FROM xdb_sys_tasks WHERE lease_owner IS NOT NULL",
                    &[],
                )
                .await
                    > 0
            })
            .await;
            injected
                .expired_leases
                .fetch_add(expire_leases(&env).await, Ordering::SeqCst);
        }
        if !api_restarted {
            env.restart_api().await;
            injected.api_restarts.fetch_add(1, Ordering::SeqCst);
        }
        if !database_restarted {
            db_server::restart(db);
            env.reconnect_sql().await;
            injected.database_restarts.fetch_add(1, Ordering::SeqCst);
        }
    }
    let started_in = began.elapsed();

    // Let the rest finish under worker faults, then without them.
    let mut open = count as i64;
    let settle = Instant::now();
    while open > 0 && settle.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(500)).await;
        open = env
            .count(
                "SELECT count(*) FROM xdb_sys_process_executions WHERE status = 'RUNNING'",
                &[],
            )
            .await;
    }
    chaos.calm_down();
    eventually(
        "every process to close",
        Duration::from_secs(180),
        || async {
            env.count(
                "SELECT count(*) FROM xdb_sys_process_executions WHERE status = 'RUNNING'",
                &[],
            )
            .await
                == 0
        },
    )
    .await;
    let elapsed = began.elapsed();

    // Every process completed, once.
    assert_eq!(
        env.count("SELECT count(*) FROM xdb_sys_process_executions", &[])
            .await,
        count as i64,
        "one execution per process"
    );
    let not_completed = env
        .count(
            "SELECT count(*) FROM xdb_sys_process_executions WHERE status <> 'COMPLETED'",
            &[],
        )
        .await;
    assert_eq!(not_completed, 0, "every process completed");
    // Every step's business write happened exactly once, and the external services saw
    // each effect once.
    let rows = env.counted_site_rows().await;
    assert_eq!(rows.len(), count);
    let mut wrong = Vec::new();
    for row in &rows {
        if row.status != "created" || row.counters != [1; 5] {
            wrong.push(format!("{row:?}"));
        }
        let effects = services.report(&row.site_id).map(|r| r.effects);
        let expected = BTreeMap::from([
            (Operation::CreateFileSystem, 1),
            (Operation::CreateDatabase, 1),
            (Operation::Bootstrap, 1),
        ]);
        if effects.as_ref() != Some(&expected) {
            wrong.push(format!("{}: effects {effects:?}", row.site_id));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} sites wrong: {:#?}",
        wrong.len(),
        &wrong[..wrong.len().min(10)]
    );
    // Nothing left over: no task (so no lease or timer), no unconsumed message, no
    // state still running.
    for (what, sql) in [
        ("tasks", "SELECT count(*) FROM xdb_sys_tasks"),
        (
            "unconsumed messages",
            "SELECT count(*) FROM xdb_sys_local_queue_messages WHERE consumed_by IS NULL",
        ),
        (
            "states not completed",
            "SELECT count(*) FROM xdb_sys_async_state_executions WHERE status <> 'COMPLETED'",
        ),
    ] {
        assert_eq!(env.count(sql, &[]).await, 0, "{what} left over");
    }
    assert_eq!(
        env.count("SELECT count(*) FROM xdb_sys_async_state_executions", &[])
            .await,
        (count * counted_site::STATE_EXECUTIONS.len()) as i64,
        "no state execution beyond the flow's"
    );
    // MarkCreated's timer fired once per site, whether its firing settled the state (and
    // called the execute with it) or the message did.
    assert_eq!(
        env.count(
            "SELECT count(*) FROM xdb_sys_history_events WHERE event_type = 'TIMER_FIRED'",
            &[]
        )
        .await,
        count as i64,
        "one TIMER_FIRED per process"
    );
    // Retries and suppressed duplicates, from the history.
    let retries = env
        .count(
            "SELECT count(*) FROM xdb_sys_history_events WHERE event_type = 'STATE_API_FAILED'",
            &[],
        )
        .await;
    let chaos_counts = chaos.counts();
    let state_calls = chaos_counts.passed
        + chaos_counts.server_errors
        + chaos_counts.hangs
        + chaos_counts.malformed;
    let transitions = env
        .count(
            "SELECT count(*) FROM xdb_sys_history_events \
             WHERE event_type IN ('WAIT_UNTIL_COMPLETED', 'EXECUTE_COMPLETED')",
            &[],
        )
        .await;
    assert!(chaos_counts.server_errors > 0 && chaos_counts.malformed > 0);
    assert!(
        injected.kills.load(Ordering::SeqCst) > 0,
        "an instance was killed"
    );
    println!(
        "faults[{db:?}, {mode:?} queue]: {count} processes completed in {:.1} s (all started after {:.1} s); \
         injected: {} SIGKILLs, {} API restarts, {} database restarts, {} leases expired \
         under working instances, {} worker 500s, {} hangs past the timeout, {} malformed \
         bodies, {} external-service failures; {} starts retried while the API or database \
         was down; {} failed attempts retried; {} state calls for {} transitions \
         ({} repeated calls whose transition was already recorded or lost its lease)",
        elapsed.as_secs_f64(),
        started_in.as_secs_f64(),
        injected.kills.load(Ordering::SeqCst),
        injected.api_restarts.load(Ordering::SeqCst),
        injected.database_restarts.load(Ordering::SeqCst),
        injected.expired_leases.load(Ordering::SeqCst),
        chaos_counts.server_errors,
        chaos_counts.hangs,
        chaos_counts.malformed,
        services.injected_failures(),
        refused_starts,
        retries,
        state_calls,
        transitions,
        (chaos_counts.passed as i64 - transitions).max(0),
    );
    for instance in instances {
        instance.kill().await;
    }
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_faults_lose_and_duplicate_nothing() {
    faults_lose_and_duplicate_nothing(Database::Postgres, QueueMode::Database).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_faults_lose_and_duplicate_nothing() {
    faults_lose_and_duplicate_nothing(Database::MySql, QueueMode::Database).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pulsar_postgres_faults_lose_and_duplicate_nothing() {
    faults_lose_and_duplicate_nothing(Database::Postgres, QueueMode::Pulsar).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pulsar_mysql_faults_lose_and_duplicate_nothing() {
    faults_lose_and_duplicate_nothing(Database::MySql, QueueMode::Pulsar).await
}
