//! The path from the async service to the worker blackholed while state calls are in
//! flight: each call times out per the state's timeout (the environment's default API
//! timeout, 5 s), is retried per its retry policy into the blackhole, and completes
//! once the path heals; the business row and the external effects show each step once
//! (the worker may have done a call whose answer was lost: the retry carries the same
//! idempotency key).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use xdb_config::QueueMode;
use xdb_integration_tests::processes::counted_site::{self, CountedSiteProcess};
use xdb_integration_tests::tcp_proxy::{upstream_of, Direction, TcpProxy};
use xdb_integration_tests::worker_faults::WorkerFaults;
use xdb_integration_tests::{eventually, Arg, Database, EnvOptions, XdbTestEnv};
use xdb_samples::site_services::ExternalServices;
use xdb_sdk::WorkerService;

use super::{all_closed, check_sites, last_event, time_to_progress, Report};

const PREFIX: &str = "w-";
/// The environment's state API timeout.
const STATE_TIMEOUT: Duration = Duration::from_secs(5);

async fn failed_calls(env: &XdbTestEnv) -> i64 {
    env.count(
        "SELECT count(*) FROM xdb_sys_history_events WHERE event_type = 'STATE_API_FAILED'",
        &[],
    )
    .await
}

pub async fn run(db: Database) -> Report {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            queue_mode: QueueMode::Database,
            ..Default::default()
        },
    )
    .await;
    let services = ExternalServices::reliable();
    let faults = WorkerFaults::new();
    faults.set_delay(Some(Duration::from_millis(300)));
    let router = WorkerService::new()
        .register(CountedSiteProcess::new(services.clone()))
        .router();
    let worker = env.start_worker(faults.wrap(router)).await;
    let proxy = TcpProxy::start(upstream_of(&worker)).await;
    let via_proxy = format!("http://{}", proxy.address());
    for i in 0..8 {
        counted_site::start(&env.client, &via_proxy, &format!("{PREFIX}{i}"))
            .await
            .expect("start");
    }
    eventually("state calls in flight", Duration::from_secs(20), || async {
        faults.in_flight() > 0
    })
    .await;
    let failed_before = failed_calls(&env).await;
    proxy.blackhole(Direction::Both);
    let cut = Instant::now();
    let affected: BTreeSet<String> = env
        .query(
            "SELECT id FROM xdb_sys_process_executions \
             WHERE status = 'RUNNING' AND process_id LIKE $1",
            &[Arg::from(format!("{}%", counted_site::process_id(PREFIX)))],
        )
        .await
        .iter()
        .map(|r| r.uuid(0).to_string())
        .collect();

    eventually("a call to time out", STATE_TIMEOUT * 3, || async {
        failed_calls(&env).await > failed_before
    })
    .await;
    let first_timeout = cut.elapsed();
    // A call in flight at the cut began at most its worker delay (and a claim) earlier.
    assert!(
        first_timeout >= STATE_TIMEOUT - Duration::from_secs(1),
        "a call failed {first_timeout:?} after the cut, before its timeout"
    );
    // Let a retry go into the blackhole as well, then heal.
    let calls_seen = faults.calls().len();
    let failed_first = failed_calls(&env).await;
    eventually("a retry to time out too", STATE_TIMEOUT * 3, || async {
        failed_calls(&env).await > failed_first
    })
    .await;
    assert_eq!(
        faults.calls().len(),
        calls_seen,
        "nothing reaches the worker"
    );
    let after = last_event(&env).await;
    proxy.heal();
    let healed = Instant::now();
    let recovery = time_to_progress(&env, &affected, after, healed, Duration::from_secs(60)).await;
    all_closed(
        &env,
        &counted_site::process_id(PREFIX),
        Duration::from_secs(60),
    )
    .await;

    let retried = faults.calls().iter().filter(|c| c.attempt > 1).count();
    assert!(retried > 0, "calls were retried after their timeout");
    let (lost, duplicated) = check_sites(&env, &services, PREFIX).await;
    println!(
        "partition worker-path-blackhole [{db:?}]: first timeout {:.1} s after the cut, \
         {} failed attempts, {retried} retried calls reached the worker",
        first_timeout.as_secs_f64(),
        failed_calls(&env).await - failed_before,
    );
    env.shutdown().await;
    Report {
        db,
        fault: "worker-path-blackhole",
        injected: 1,
        affected: affected.len(),
        lost,
        duplicated,
        recovery,
        recovery_from: "heal",
        resumed_after_heal: None,
    }
}
