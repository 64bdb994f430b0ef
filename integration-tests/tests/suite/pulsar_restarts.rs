//! Pulsar CDC mode through restarts of the broker and of the connector: on a standalone
//! of the test's own (the shared one is not disturbed), with its own Pulsar IO capture.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use pulsar::SubType;
use serde_json::Value;
use tokio::sync::watch;
use xdb_async_service::{AsyncService, AsyncServiceConfig};
use xdb_config::QueueMode;
use xdb_integration_tests::processes::counted_site::{self, CountedSiteProcess};
use xdb_integration_tests::processes::Recorder;
use xdb_integration_tests::pulsar::{CdcCapture, TestBroker};
use xdb_integration_tests::worker_faults::WorkerFaults;
use xdb_integration_tests::{eventually, Database, EnvOptions, XdbTestEnv};
use xdb_samples::site_services::ExternalServices;
use xdb_sdk::protocol::ProcessStatus;
use xdb_sdk::WorkerService;

use crate::common::*;

/// Site creations started per batch.
const BATCH: usize = 20;

/// The test broker's newest message of `topic`: (ledger, entry).
async fn last_message_id(admin_url: &str, topic: &str) -> (u64, u64) {
    let path = topic.replacen("persistent://", "", 1);
    let url = format!("{admin_url}/admin/v2/persistent/{path}/lastMessageId");
    let id: Value = reqwest::get(&url)
        .await
        .and_then(|r| r.error_for_status())
        .unwrap_or_else(|e| panic!("GET {url}: {e}"))
        .json()
        .await
        .expect("a message id");
    let field = |name: &str| {
        id[name]
            .as_u64()
            .unwrap_or_else(|| panic!("{name} in {id}"))
    };
    (field("ledgerId"), field("entryId"))
}

/// Starts the site creations `first..first + BATCH`; returns their executions.
async fn start_batch(env: &XdbTestEnv, worker: &str, first: usize) -> Vec<String> {
    let mut execs = Vec::new();
    for i in first..first + BATCH {
        execs.push(
            counted_site::start(&env.client, worker, &format!("rs-{i:02}"))
                .await
                .unwrap(),
        );
    }
    execs
}

/// Waits until the batch is under way: some of its states completed while tasks are
/// still to run (each creation waits on a one-second timer, so none is done yet).
async fn wait_until_under_way(env: &XdbTestEnv, execs: &[String]) -> i64 {
    let pending = std::cell::Cell::new(0);
    eventually(
        "the batch to be under way",
        Duration::from_secs(30),
        || async {
            let mut completed = 0;
            for exec in execs {
                completed += env
                    .state_rows(exec)
                    .await
                    .iter()
                    .filter(|s| s.status == "COMPLETED")
                    .count();
            }
            pending.set(env.count("SELECT count(*) FROM xdb_sys_tasks", &[]).await);
            completed >= BATCH / 2 && pending.get() > 0
        },
    )
    .await;
    pending.get()
}

/// How long a batch may take to complete. On MariaDB a restarted connector streams
/// again only after a minute (see below); a loaded machine adds to that.
const BATCH_DONE_WITHIN: Duration = Duration::from_secs(300);

/// Waits for every creation of `execs` to complete.
async fn wait_for_batch(env: &XdbTestEnv, first: usize) {
    for i in first..first + BATCH {
        let process_id = counted_site::process_id(&format!("rs-{i:02}"));
        let done = env
            .client
            .wait_for_process_completion(&process_id, BATCH_DONE_WITHIN)
            .await
            .unwrap();
        assert_eq!(
            done.status,
            ProcessStatus::Completed,
            "{process_id}: {done:?}"
        );
    }
}

/// Why an instance at `address` is not healthy, if it is not: what `probes` answer.
async fn health_problem(address: std::net::SocketAddr, probes: &[&str]) -> Option<String> {
    for probe in probes {
        let url = format!("http://{address}/health/{probe}");
        match reqwest::get(&url).await {
            Ok(response) if response.status() == 200 => {}
            Ok(response) => {
                let status = response.status();
                let body = response.text().await.unwrap_or_default();
                return Some(format!("/health/{probe}: {status} {body}"));
            }
            Err(error) => return Some(format!("/health/{probe}: {error}")),
        }
    }
    None
}

/// Async instances on the test broker, restarted when their liveness probe fails, as
/// an orchestrator would. None should be: the `pulsar` client reconnects by itself
/// after a broker restart, and a consumer whose re-subscription met the broker still
/// starting (it answered "Not enough non-faulty bookies", or went away again) is
/// subscribed again by the instance, which stays alive (not ready meanwhile).
struct Orchestrator {
    instances: Arc<tokio::sync::Mutex<Vec<AsyncService>>>,
    /// "old id → new id: why", one per restart.
    restarts: Recorder<String>,
    stop: watch::Sender<bool>,
    supervising: tokio::task::JoinHandle<()>,
}

impl Orchestrator {
    /// Starts `count` instances of `template` and watches them.
    async fn start(template: AsyncServiceConfig, count: usize) -> Self {
        let mut started = Vec::new();
        for n in 1..=count {
            let mut config = template.clone();
            config.async_service.instance_id = Some(format!("restarts-{n}"));
            started.push(
                AsyncService::start(config)
                    .await
                    .expect("the async service starts on the test broker"),
            );
        }
        let instances = Arc::new(tokio::sync::Mutex::new(started));
        let restarts = Recorder::new();
        let (stop, mut stopping) = watch::channel(false);
        let supervising = tokio::spawn({
            let instances = instances.clone();
            let restarts = restarts.clone();
            async move {
                let mut next = count;
                loop {
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(250)) => {}
                        _ = stopping.changed() => return,
                    }
                    let mut instances = instances.lock().await;
                    for slot in instances.iter_mut() {
                        let Some(problem) = health_problem(slot.address(), &["live"]).await else {
                            continue;
                        };
                        let mut config = template.clone();
                        config.async_service.instance_id = Some(format!("restarts-{}", next + 1));
                        // The broker may still be starting: tried again on the next round.
                        let Ok(replacement) = AsyncService::start(config).await else {
                            continue;
                        };
                        next += 1;
                        let old = std::mem::replace(slot, replacement);
                        restarts.push(format!(
                            "{} -> {}: {problem}",
                            old.instance_id(),
                            slot.instance_id()
                        ));
                        tokio::spawn(old.shutdown());
                    }
                }
            }
        });
        Self {
            instances,
            restarts,
            stop,
            supervising,
        }
    }

    /// Stops watching, checks every instance is healthy, and shuts them down.
    async fn shutdown(self) -> Vec<String> {
        let _ = self.stop.send(true);
        self.supervising.await.expect("the supervisor ends");
        for instance in self.instances.lock().await.drain(..) {
            // A consumer may still be subscribing again: it has a minute.
            eventually(
                "every instance to be live and ready",
                Duration::from_secs(60),
                || async {
                    health_problem(instance.address(), &["live", "ready"])
                        .await
                        .is_none()
                },
            )
            .await;
            instance.shutdown().await.expect("shuts down");
        }
        self.restarts.all()
    }
}

/// Forty site creations (five states, a timer, a message between threads, a service
/// failing one call in five so that retries wait on timers too), two async instances,
/// the sweep for lost events off: the broker is killed and restarted in the middle of
/// the first twenty (its functions worker, and so the connector, with it), the
/// connector alone in the middle of the other twenty. Every creation completes with
/// each transition, business write and service effect once, and the connector resumed
/// from its stored offset each time: the changes made while it was down came (nothing
/// else would run their tasks), and it never snapshotted the table again (the table was
/// empty when it was first captured, so the only snapshot reads there could be are of a
/// second snapshot, which would read the tasks then pending).
///
/// On MariaDB the restarted connector streams again only a minute later: the new
/// Debezium task tries twelve times, five seconds apart, to register its schema-history
/// metrics MBean ("Unable to register metrics as an old set with the same name exists"),
/// then goes on without it. Pulsar IO 4.0.8's `PulsarDatabaseHistory.stop` does not call
/// Debezium's, which would unregister the stopped task's MBean from the functions
/// worker's JVM. `CdcCapture::restart` does not see the wait (it finds the schema
/// history written already). Nothing is lost; the changes wait.
///
/// The broker's restart closes the ledgers of the connector's offset and history topics;
/// its retention check then deletes them unless the capture set the topics' retention
/// (`pulsar_retention` tests that alone): the connector's restart after it failed for
/// good ("The db history topic is missing") before it did.
async fn broker_and_connector_restarts_mid_load_lose_and_repeat_nothing(db: Database) {
    let test_started = Instant::now();
    let mut broker = TestBroker::start_with_pulsar_io().await;
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            async_instances: 0,
            cdc_capture: false,
            pulsar_sweep_after_ms: 0,
            queue_mode: QueueMode::Pulsar,
            ..Default::default()
        },
    )
    .await;
    let capture = CdcCapture::start_on(env.db(), &broker.admin_url()).await;
    let tasks_topic = capture.registration().tasks_topic.clone();
    let mut template = env.async_config("restarts");
    template.pulsar.service_url = Some(broker.url());
    let orchestrator = Orchestrator::start(template, 2).await;
    let services = ExternalServices::faulty(0.2, 7);
    let faults = WorkerFaults::new();
    // Calls take a while, so that some are in flight at each restart.
    faults.set_delay(Some(Duration::from_millis(200)));
    let router = WorkerService::new()
        .register(CountedSiteProcess::new(services.clone()))
        .router();
    let worker = env.start_worker(faults.wrap(router)).await;
    eprintln!("restarts: set up in {:?}", test_started.elapsed());

    let mut execs = start_batch(&env, &worker, 0).await;
    let pending = wait_until_under_way(&env, &execs).await;
    let restarting = Instant::now();
    eprintln!(
        "restarts: restarting the broker at {:?}",
        test_started.elapsed()
    );
    // SIGKILL, then the same ports and data.
    let attempts = broker.restart().await;
    eprintln!(
        "restarts: broker restarted with {pending} tasks pending, healthy again after {:?} \
         ({attempts} start(s))",
        restarting.elapsed()
    );
    wait_for_batch(&env, 0).await;
    eprintln!("restarts: first batch done at {:?}", test_started.elapsed());

    execs.extend(start_batch(&env, &worker, BATCH).await);
    let pending = wait_until_under_way(&env, &execs[BATCH..]).await;
    let restarting = Instant::now();
    eprintln!(
        "restarts: restarting the connector at {:?}",
        test_started.elapsed()
    );
    capture.restart().await;
    eprintln!(
        "restarts: connector restarted with {pending} tasks pending, running again after {:?}",
        restarting.elapsed()
    );
    wait_for_batch(&env, BATCH).await;
    eprintln!(
        "restarts: second batch done at {:?}",
        test_started.elapsed()
    );

    assert_counted_sites_created_once(&env, &services, &execs).await;
    assert_eq!(
        env.count("SELECT count(*) FROM xdb_sys_tasks", &[]).await,
        0
    );

    // Every change event on the tasks topic, from its first message to its last.
    let last = last_message_id(&broker.admin_url(), &tasks_topic).await;
    let mut reader = subscribe(
        &broker.url(),
        &tasks_topic,
        "test-after-restarts",
        SubType::Exclusive,
    )
    .await;
    let mut ops: BTreeMap<String, usize> = BTreeMap::new();
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let message = reader
                .next()
                .await
                .expect("the reader runs")
                .expect("a message");
            *ops.entry(task_change_event(&message).op).or_default() += 1;
            let id = message.message_id();
            if (id.ledger_id, id.entry_id) >= last {
                break;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the tasks topic up to {last:?} within 30 s: {ops:?}"));
    let restarts = orchestrator.shutdown().await;
    assert!(
        restarts.is_empty(),
        "the instances recover from the broker's restart by themselves: {restarts:#?}"
    );
    eprintln!(
        "restarts: change events by op {ops:?}; {} calls to the worker, {} injected \
         service failures; instances restarted by the orchestrator: {restarts:#?}; {:?} in all",
        faults.calls().len(),
        services.injected_failures(),
        test_started.elapsed()
    );
    assert_eq!(
        ops.get("r"),
        None,
        "a snapshot read the table again: {ops:?}"
    );
    assert!(ops.get("c").is_some_and(|c| *c >= 2 * BATCH), "{ops:?}");

    // The capture goes before the database, the broker after both.
    drop(capture);
    env.shutdown().await;
    drop(broker);
}

both_databases!(broker_and_connector_restarts_mid_load_lose_and_repeat_nothing);
