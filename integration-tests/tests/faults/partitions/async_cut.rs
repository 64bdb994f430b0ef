//! An async instance cut off from the database (both directions blackholed) while it
//! holds leases and has worker calls in flight. Another instance takes its work over
//! once the leases run out; after healing, the cut-off instance's completions, sent
//! into the blackhole, reach the database and must change nothing (they are fenced by
//! lease owner), and it must claim new work with the pools it has, without a restart.
//! Round one heals the connections as they were (held bytes move on); round two resets
//! them first (a partition TCP gave up on), so its pools must open new ones.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use xdb_async_service::AsyncService;
use xdb_config::QueueMode;
use xdb_integration_tests::processes::counted_site::{self, CountedSiteProcess};
use xdb_integration_tests::tcp_proxy::{Direction, TcpProxy};
use xdb_integration_tests::worker_faults::WorkerFaults;
use xdb_integration_tests::{eventually, Arg, Database, EnvOptions, XdbTestEnv};
use xdb_samples::site_services::ExternalServices;
use xdb_sdk::WorkerService;

use super::{all_closed, check_sites, last_event, time_to_progress, Report};

/// The instance behind the proxy.
const CUT_OFF: &str = "cut-off";
/// Processes started per round.
const SITES: usize = 6;

pub async fn run(db: Database) -> Vec<Report> {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            async_instances: 0,
            // Short, so the takeover comes soon; the heartbeat-based detection of dead
            // instances, where present, may come sooner.
            lease_seconds: 2.0,
            queue_mode: QueueMode::Database,
            ..Default::default()
        },
    )
    .await;
    let services = ExternalServices::reliable();
    let faults = WorkerFaults::new();
    // Calls take a while, so some are in flight whenever the cut comes.
    faults.set_delay(Some(Duration::from_millis(300)));
    let router = WorkerService::new()
        .register(CountedSiteProcess::new(services.clone()))
        .router();
    let worker = env.start_worker(faults.wrap(router)).await;
    let proxy = TcpProxy::start_for_url(env.db().url()).await;
    let mut config = env.async_config(CUT_OFF);
    config.database_url = proxy.url_to(env.db().url());
    let cut_off = AsyncService::start(config)
        .await
        .expect("the instance behind the proxy starts");

    let mut reports = Vec::new();
    for (round, reset) in [(0, false), (1, true)] {
        // Only the instance to cut runs now: every task is its.
        let prefix = format!("cut{round}-");
        for i in 0..SITES {
            counted_site::start(&env.client, &worker, &format!("{prefix}{i}"))
                .await
                .expect("start");
        }
        eventually(
            "the instance to cut to hold leases with calls in flight",
            Duration::from_secs(20),
            || async { leased_by(&env, CUT_OFF).await > 0 && faults.in_flight() > 0 },
        )
        .await;
        proxy.blackhole(Direction::Both);
        let cut = Instant::now();
        let affected: BTreeSet<String> = env
            .query(
                "SELECT DISTINCT process_execution_id FROM xdb_sys_tasks WHERE lease_owner = $1",
                &[Arg::from(CUT_OFF)],
            )
            .await
            .iter()
            .map(|r| r.uuid(0).to_string())
            .collect();
        let after = last_event(&env).await;
        assert!(!affected.is_empty(), "the cut-off instance held leases");

        // Another instance takes the work over.
        env.add_async_instance().await;
        let takeover = time_to_progress(&env, &affected, after, cut, Duration::from_secs(60)).await;
        all_closed(
            &env,
            &counted_site::process_id(&prefix),
            Duration::from_secs(60),
        )
        .await;

        if reset {
            proxy.reset();
        }
        proxy.heal();
        let healed = Instant::now();
        // Only the healed instance is left: new work finishing proves it claims again.
        env.stop_async_instances().await;
        let after_heal = last_event(&env).await;
        let fresh = format!("after{round}-");
        let mut executions = BTreeSet::new();
        for i in 0..3 {
            executions.insert(
                counted_site::start(&env.client, &worker, &format!("{fresh}{i}"))
                    .await
                    .expect("start"),
            );
        }
        let resumed = time_to_progress(
            &env,
            &executions,
            after_heal,
            healed,
            Duration::from_secs(60),
        )
        .await;
        all_closed(
            &env,
            &counted_site::process_id(&fresh),
            Duration::from_secs(60),
        )
        .await;

        // Nothing the cut-off instance sent into the blackhole applied twice.
        let (lost, duplicated) = check_sites(&env, &services, &prefix).await;
        check_sites(&env, &services, &fresh).await;
        assert_eq!(
            leased_by(&env, CUT_OFF).await,
            0,
            "no lease left with the healed instance"
        );
        reports.push(Report {
            db,
            fault: if reset {
                "async-db-blackhole-then-reset"
            } else {
                "async-db-blackhole"
            },
            injected: 1,
            affected: affected.len(),
            lost,
            duplicated,
            recovery: takeover,
            recovery_from: "cut",
            resumed_after_heal: resumed.into_iter().min(),
        });
    }
    cut_off.shutdown().await.expect("the healed instance stops");
    env.shutdown().await;
    reports
}

async fn leased_by(env: &XdbTestEnv, owner: &str) -> i64 {
    env.count(
        "SELECT count(*) FROM xdb_sys_tasks WHERE lease_owner = $1",
        &[Arg::from(owner)],
    )
    .await
}
