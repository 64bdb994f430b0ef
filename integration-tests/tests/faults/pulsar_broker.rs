//! Ten restarts of the Pulsar broker in a row, under load: the async instances are never
//! restarted. After each restart the `pulsar` client reconnects, and a consumer it gave
//! up on is subscribed again by the instance itself (`pulsar_source/subscriptions.rs`);
//! the instances stay alive all along, and every site creation completes with each step
//! once. On PostgreSQL only: what is tested is the consumer, not the database. One
//! `pulsar-broker-report` line.

use std::time::{Duration, Instant};

use tokio::sync::watch;
use xdb_async_service::AsyncService;
use xdb_config::QueueMode;
use xdb_integration_tests::metrics::{sample_sum, scrape};
use xdb_integration_tests::processes::counted_site::{self, CountedSiteProcess};
use xdb_integration_tests::processes::Recorder;
use xdb_integration_tests::pulsar::{CdcCapture, TestBroker};
use xdb_integration_tests::worker_faults::WorkerFaults;
use xdb_integration_tests::{Database, EnvOptions, XdbTestEnv};
use xdb_samples::site_services::ExternalServices;
use xdb_sdk::protocol::ProcessStatus;
use xdb_sdk::WorkerService;

use super::partitions::check_sites;

const RESTARTS: usize = 10;
/// Site creations started before each restart.
const PER_ROUND: usize = 4;
const PREFIX: &str = "br";

/// Watches the instances' liveness probes every 100 ms until stopped; every failed
/// answer, as "address: status body".
fn watch_liveness(
    addresses: Vec<std::net::SocketAddr>,
    mut stop: watch::Receiver<bool>,
) -> (Recorder<String>, tokio::task::JoinHandle<()>) {
    let failures = Recorder::new();
    let recorded = failures.clone();
    let watching = tokio::spawn(async move {
        let http = reqwest::Client::new();
        loop {
            for address in &addresses {
                let url = format!("http://{address}/health/live");
                match http.get(&url).send().await {
                    Ok(response) if response.status() == 200 => {}
                    Ok(response) => {
                        let status = response.status();
                        let body = response.text().await.unwrap_or_default();
                        recorded.push(format!("{address}: {status} {body}"));
                    }
                    Err(error) => recorded.push(format!("{address}: {error}")),
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                _ = stop.changed() => return,
            }
        }
    });
    (failures, watching)
}

async fn start_round(env: &XdbTestEnv, worker: &str, round: usize) -> Vec<String> {
    let mut execs = Vec::new();
    for i in 0..PER_ROUND {
        let site = format!("{PREFIX}-{round:02}-{i}");
        execs.push(
            counted_site::start(&env.client, worker, &site)
                .await
                .unwrap(),
        );
    }
    execs
}

async fn wait_for_round(env: &XdbTestEnv, round: usize) {
    for i in 0..PER_ROUND {
        let process_id = counted_site::process_id(&format!("{PREFIX}-{round:02}-{i}"));
        let done = env
            .client
            .wait_for_process_completion(&process_id, Duration::from_secs(120))
            .await
            .unwrap();
        assert_eq!(
            done.status,
            ProcessStatus::Completed,
            "round {round}: {process_id}: {done:?}"
        );
    }
}

pub async fn run() {
    let started = Instant::now();
    let mut broker = TestBroker::start_with_pulsar_io().await;
    let mut env = XdbTestEnv::start_with(
        Database::Postgres,
        EnvOptions {
            async_instances: 0,
            cdc_capture: false,
            pulsar_sweep_after_ms: 0,
            queue_mode: QueueMode::Pulsar,
            ..Default::default()
        },
    )
    .await;
    let _capture = CdcCapture::start_on(env.db(), &broker.admin_url()).await;
    let mut instances = Vec::new();
    for n in 1..=2 {
        let mut config = env.async_config(&format!("broker-restarts-{n}"));
        config.pulsar.service_url = Some(broker.url());
        instances.push(
            AsyncService::start(config)
                .await
                .expect("the async service starts on the test broker"),
        );
    }
    let addresses: Vec<_> = instances.iter().map(|i| i.address()).collect();
    let services = ExternalServices::faulty(0.0, 11);
    let faults = WorkerFaults::new();
    // Calls take a while, so that some are in flight at each restart.
    faults.set_delay(Some(Duration::from_millis(100)));
    let router = WorkerService::new()
        .register(CountedSiteProcess::new(services.clone()))
        .router();
    let worker = env.start_worker(faults.wrap(router)).await;
    let (stop, stopping) = watch::channel(false);
    let (liveness_failures, watching) = watch_liveness(addresses.clone(), stopping);

    let mut restart_times = Vec::new();
    for round in 0..RESTARTS {
        start_round(&env, &worker, round).await;
        let restarting = Instant::now();
        broker.restart().await;
        restart_times.push(restarting.elapsed());
        wait_for_round(&env, round).await;
    }
    let _ = stop.send(true);
    watching.await.expect("the watcher ends");
    check_sites(&env, &services, PREFIX).await;

    let mut lost = 0.0;
    for address in &addresses {
        let text = scrape(&format!("http://{address}")).await;
        lost += sample_sum(&text, "xdb_async_pulsar_consumers_lost_total", &[]).unwrap_or(0.0);
    }
    let failures = liveness_failures.all();
    println!(
        "pulsar-broker-report [Postgres]: {RESTARTS} broker restarts, {} site creations \
         completed once each, {lost} consumers lost and subscribed again by their instance, \
         {} failed liveness answers, restarts took {:?}; {:?} in all",
        RESTARTS * PER_ROUND,
        failures.len(),
        restart_times,
        started.elapsed()
    );
    assert!(
        failures.is_empty(),
        "an instance was not alive: {failures:?}"
    );
    // Every consumer is subscribed again: the instances say ready.
    for address in &addresses {
        let url = format!("http://{address}/health/ready");
        xdb_integration_tests::eventually(
            "the instance to be ready",
            Duration::from_secs(60),
            || async { reqwest::get(&url).await.is_ok_and(|r| r.status() == 200) },
        )
        .await;
    }
    for instance in instances {
        instance.shutdown().await.expect("shuts down");
    }
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pulsar_broker_restarts_need_no_instance_restart() {
    let _one = super::ONE_AT_A_TIME.lock().await;
    run().await;
}
