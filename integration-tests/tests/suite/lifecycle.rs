//! Stopping an async-service instance the way an orchestrator does (SIGTERM, as in a
//! rolling update) loses and duplicates nothing: it stops claiming, finishes its
//! in-flight work (or, past its grace, abandons it) and releases every lease, so other
//! instances carry on at once. Stopping an API service answers its open long polls at
//! once, so their clients ask another instance. Also: bad configuration stops start-up
//! with a clear message.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::json;
use xdb_integration_tests::metrics::{sample_sum, scrape};
use xdb_integration_tests::processes::counted_site::{self, CountedSiteProcess};
use xdb_integration_tests::processes::hang::HangProcess;
use xdb_integration_tests::processes::park::ParkProcess;
use xdb_integration_tests::skewed::{service_binaries, SkewedService};
use xdb_integration_tests::worker_faults::WorkerFaults;
use xdb_integration_tests::{eventually, Database, EnvOptions, XdbTestEnv};
use xdb_samples::site_services::ExternalServices;
use xdb_sdk::protocol::ProcessStatus;
use xdb_sdk::{ProcessStartOptions, WorkerService};

use crate::common::*;

async fn leases_of(env: &XdbTestEnv, owner: &str) -> i64 {
    env.count(
        "SELECT count(*) FROM xdb_sys_tasks WHERE lease_owner = $1",
        &[owner.into()],
    )
    .await
}

/// Worker calls last longer than the lease (4 s against 3 s): only a drain that keeps
/// renewing its leases until its calls finish avoids a second instance taking them over.
async fn sigterm_finishes_in_flight_work_then_releases_leases(db: Database) {
    const SITES: usize = 8;
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            async_instances: 0,
            ..Default::default()
        },
    )
    .await;
    let services = ExternalServices::reliable();
    let faults = WorkerFaults::new();
    faults.set_delay(Some(Duration::from_secs(4)));
    let router = WorkerService::new()
        .register(CountedSiteProcess::new(services.clone()))
        .router();
    let worker = env.start_worker(faults.wrap(router)).await;
    let draining = env
        .spawn_async_process(ASYNC_INSTANCE_BIN, "draining")
        .await;
    let site = |i: usize| format!("drain-{i}");
    for i in 0..SITES {
        counted_site::start(&env.client, &worker, &site(i))
            .await
            .unwrap();
    }
    eventually(
        "the instance to hold leases with calls outstanding",
        SOON,
        || async { leases_of(&env, "draining").await >= 4 && faults.in_flight() >= 4 },
    )
    .await;
    // A second instance, ready to take over whatever the first one gives up.
    let survivor = env
        .spawn_async_process(ASYNC_INSTANCE_BIN, "survivor")
        .await;

    draining.terminate();
    let ready_url = format!("{}/health/ready", draining.http_url());
    let http = reqwest::Client::new();
    eventually(
        "the draining instance to report not ready",
        SOON,
        || async {
            http.get(&ready_url)
                .send()
                .await
                .is_ok_and(|r| r.status() == reqwest::StatusCode::SERVICE_UNAVAILABLE)
        },
    )
    .await;
    assert!(
        faults.in_flight() > 0,
        "still draining while it reports not ready"
    );
    let status = draining.wait(Duration::from_secs(20)).await;
    assert!(
        status.success(),
        "a drained instance exits cleanly: {status}"
    );
    assert_eq!(leases_of(&env, "draining").await, 0, "no lease left behind");

    for i in 0..SITES {
        let done = env
            .client
            .wait_for_process_completion(
                &counted_site::process_id(&site(i)),
                Duration::from_secs(60),
            )
            .await
            .unwrap();
        assert_eq!(
            done.status,
            ProcessStatus::Completed,
            "{}: {done:?}",
            site(i)
        );
        assert_eq!(decode(&done.result), json!("created"));
    }
    // The drained calls finished where they were: no call was made twice.
    let calls = faults.calls();
    let mut seen = HashSet::new();
    let repeated: Vec<_> = calls
        .iter()
        .filter(|c| !seen.insert((c.idempotency_key.clone(), c.attempt)))
        .collect();
    assert!(repeated.is_empty(), "calls repeated: {repeated:?}");
    let rows = env.counted_site_rows().await;
    assert_eq!(rows.len(), SITES);
    for row in &rows {
        assert_eq!(row.status, "created", "{row:?}");
        assert_eq!(row.counters, [1; 5], "each write once: {row:?}");
    }
    assert_eq!(
        env.count("SELECT count(*) FROM xdb_sys_tasks", &[]).await,
        0
    );
    survivor.terminate();
    assert!(survivor.wait(Duration::from_secs(20)).await.success());
    env.shutdown().await;
}

/// A call that outlasts the shutdown grace is abandoned, and its lease released at
/// exit: another instance takes it over at once instead of after the (long) lease.
async fn sigterm_past_the_grace_releases_the_lease_for_immediate_takeover(db: Database) {
    let lease = Duration::from_secs(120);
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            async_instances: 0,
            lease_seconds: lease.as_secs_f64(),
            ..Default::default()
        },
    )
    .await;
    let process = HangProcess::default();
    let worker = serve(&mut env, &process).await;
    let impatient = env
        .spawn_async_process_with(
            ASYNC_INSTANCE_BIN,
            "impatient",
            &["--shutdown-grace-seconds", "1"],
        )
        .await;
    let exec = start(
        &env,
        &process,
        &worker,
        "hang-grace",
        ProcessStartOptions::new().global_attribute_pk_value("g1"),
    )
    .await
    .unwrap();
    eventually("the worker call to hang", SOON, || async {
        process.calls.len() == 1
    })
    .await;
    env.add_async_instance().await;
    assert_eq!(leases_of(&env, "impatient").await, 1);

    impatient.terminate();
    let status = impatient.wait(Duration::from_secs(10)).await;
    assert!(status.success(), "{status}");
    assert_eq!(leases_of(&env, "impatient").await, 0);

    let done = env
        .client
        .wait_for_process_completion("hang-grace", Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");
    let calls = process.calls.all();
    assert_eq!(calls.len(), 2, "the abandoned call is made again, once");
    assert_eq!(calls[0].idempotency_key, calls[1].idempotency_key);
    let history = env.history_types(&exec).await;
    assert_eq!(
        history.iter().filter(|e| *e == "EXECUTE_COMPLETED").count(),
        1,
        "{history:?}"
    );
    assert_eq!(
        env.entity_row("g1").await.unwrap().note.as_deref(),
        Some("done")
    );
    env.shutdown().await;
}

/// Runs the instance binary to its (failed) end; its stderr.
/// A wait-for-completion open on an API service process when it gets SIGTERM answers
/// at once with the execution as it is (`timedOut: true`), not after its 60 s, and the
/// process then exits cleanly.
async fn sigterm_answers_open_waits_at_once_with_timed_out(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let worker = env
        .start_worker(WorkerService::new().register(ParkProcess).router())
        .await;
    start(
        &env,
        &ParkProcess,
        &worker,
        "parked-at-sigterm",
        ProcessStartOptions::new(),
    )
    .await
    .unwrap();
    let (api_binary, _) = service_binaries().await;
    let args = ["--database-url", env.db().url(), "--max-wait-seconds", "60"].map(String::from);
    let mut api =
        SkewedService::spawn_unskewed(api_binary, &args, "XDB API service listening").await;
    let url = format!(
        "{}{}",
        api.url,
        xdb_sdk::protocol::paths::WAIT_FOR_COMPLETION
    );
    let wait = tokio::spawn(async move {
        let response = reqwest::Client::new()
            .post(url)
            .json(&json!({"processId": "parked-at-sigterm", "timeoutSeconds": 60}))
            .send()
            .await
            .expect("the API service answers the open wait");
        let status = response.status().as_u16();
        let body: serde_json::Value = response.json().await.expect("a JSON answer");
        (status, body)
    });
    eventually("the wait to be registered", SOON, || async {
        let text = scrape(&api.url).await;
        sample_sum(&text, "xdb_api_waits_registered", &[]).unwrap_or(0.0) >= 1.0
    })
    .await;

    let signalled = Instant::now();
    api.terminate();
    let (status, body) = tokio::time::timeout(SOON, wait)
        .await
        .unwrap_or_else(|_| panic!("the open wait was not answered within {SOON:?} of SIGTERM"))
        .expect("the waiting task does not panic");
    let answered_after = signalled.elapsed();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["timedOut"], true, "{body}");
    assert_eq!(body["status"], "RUNNING", "{body}");
    assert!(answered_after < SOON, "answered after {answered_after:?}");
    let exit = api.wait(Duration::from_secs(20)).await;
    assert!(
        exit.success(),
        "a drained API service exits cleanly: {exit}"
    );
    env.shutdown().await;
}

async fn failed_start(env: &XdbTestEnv, extra: &[&str], vars: &[(&str, &str)]) -> String {
    let output = tokio::process::Command::new(ASYNC_INSTANCE_BIN)
        .arg("--database-url")
        .arg(env.db().url())
        .args(extra)
        .envs(vars.iter().copied())
        .env("XDB_ASYNC_LISTEN", "127.0.0.1:0")
        .output()
        .await
        .expect("run the async instance");
    assert!(!output.status.success(), "it must refuse to start");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

async fn bad_configuration_stops_start_up_with_a_clear_message(db: Database) {
    let env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            async_instances: 0,
            ..Default::default()
        },
    )
    .await;
    let stderr = failed_start(
        &env,
        &["--pool-size", "0"],
        &[
            ("XDB_ASYNC_LEASE_SECONDS", "0"),
            ("XDB_ASYNC_POOLSIZE", "2"),
        ],
    )
    .await;
    assert!(stderr.contains("invalid configuration"), "{stderr}");
    assert!(
        stderr.contains("from environment variable XDB_ASYNC_POOLSIZE"),
        "{stderr}"
    );

    let stderr = failed_start(
        &env,
        &[
            "--set",
            "queue.mode=pulsar",
            "--set",
            // Nothing listens on port 9: the broker is unreachable.
            "pulsar.service_url=pulsar://127.0.0.1:9",
        ],
        &[],
    )
    .await;
    assert!(
        stderr.contains("cannot connect to Pulsar at pulsar://127.0.0.1:9"),
        "{stderr}"
    );
    // Nothing was claimed or registered.
    assert_eq!(
        env.count("SELECT count(*) FROM xdb_sys_tasks", &[]).await,
        0
    );
    env.shutdown().await;
}

both_databases!(
    sigterm_finishes_in_flight_work_then_releases_leases,
    sigterm_past_the_grace_releases_the_lease_for_immediate_takeover,
    sigterm_answers_open_waits_at_once_with_timed_out,
    bad_configuration_stops_start_up_with_a_clear_message,
);

pulsar_mode_too!(
    sigterm_finishes_in_flight_work_then_releases_leases,
    sigterm_past_the_grace_releases_the_lease_for_immediate_takeover,
);
