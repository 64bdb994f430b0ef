//! `/metrics` of both services after real processes ran: the counters the operators
//! watch (claims, completions, worker calls and their failures, retries, timer
//! lateness) moved, and the gauges (backlog, leases, what needs an operator) are there.

use std::time::Duration;

use serde_json::json;
use xdb_integration_tests::metrics::{sample_sum, scrape};
use xdb_integration_tests::processes::flaky::{FlakyConfig, FlakyProcess};
use xdb_integration_tests::processes::timer::TimerProcess;
use xdb_integration_tests::worker_faults::{CallMatch, StateApiKind, WorkerFaults};
use xdb_integration_tests::{eventually, Database, EnvOptions, XdbTestEnv};
use xdb_sdk::protocol::{paths, ProcessStatus};
use xdb_sdk::{ProcessStartOptions, WorkerService};

use crate::common::*;

async fn metrics_count_what_the_services_did(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    // Fails its first execute once, so a worker error and a retry are recorded.
    let flaky = FlakyProcess::new(FlakyConfig {
        failing_attempts: 1,
        maximum_attempts: 3,
        initial_interval: Duration::from_millis(100),
        recover: false,
        after_timer: None,
    });
    let timer = TimerProcess::new(Duration::from_millis(200));
    let router = WorkerService::new()
        .register(flaky.clone())
        .register(timer.clone())
        .router();
    let worker = env.start_worker(router).await;
    let options = ProcessStartOptions::new().global_attribute_pk_value("m1");
    start(&env, &flaky, &worker, "flaky", options)
        .await
        .unwrap();
    start(&env, &timer, &worker, "timer", ProcessStartOptions::new())
        .await
        .unwrap();
    for process_id in ["flaky", "timer"] {
        let done = env
            .client
            .wait_for_process_completion(process_id, SOON)
            .await
            .unwrap();
        assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");
    }

    let [async_url] = env.async_urls().try_into().expect("one async instance");
    // A timer read ahead (claimed up to a second before it is due) stays held until its
    // due time even when its process completed meanwhile; then it is dropped as stale.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let text = loop {
        let text = scrape(&async_url).await;
        let held = sample_sum(&text, "xdb_async_leases_held", &[]);
        if held == Some(0.0) || std::time::Instant::now() > deadline {
            break text;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let value = |name: &str, labels: &[(&str, &str)]| {
        sample_sum(&text, name, labels).unwrap_or_else(|| panic!("no {name} {labels:?}:\n{text}"))
    };
    // The flaky state's execute ran twice (one failure, one retry); the timer's state
    // ran its execute with the firing, in the timer task.
    assert_eq!(
        value("xdb_async_tasks_claimed_total", &[("task_type", "EXECUTE")]),
        2.0
    );
    assert_eq!(
        value(
            "xdb_async_tasks_completed_total",
            &[("task_type", "TIMER"), ("outcome", "ok")]
        ),
        1.0
    );
    assert_eq!(
        value(
            "xdb_async_worker_call_duration_seconds_count",
            &[("state_id", "SleepState"), ("api", "execute")]
        ),
        1.0
    );
    assert_eq!(
        value("xdb_async_task_retries_total", &[("task_type", "EXECUTE")]),
        1.0
    );
    assert_eq!(
        value(
            "xdb_async_tasks_completed_total",
            &[("task_type", "EXECUTE"), ("outcome", "ok")]
        ),
        2.0
    );
    let flaky_execute = [("state_id", "FlakyState"), ("api", "execute")];
    assert_eq!(
        value("xdb_async_worker_call_errors_total", &flaky_execute),
        1.0
    );
    assert_eq!(
        value(
            "xdb_async_worker_call_duration_seconds_count",
            &flaky_execute
        ),
        2.0
    );
    assert_eq!(value("xdb_async_timer_lateness_seconds_count", &[]), 1.0);
    assert!(value("xdb_async_timer_lateness_seconds_sum", &[]) >= 0.0);
    // Nothing is due or held once both processes completed.
    assert_eq!(value("xdb_async_queue_backlog", &[]), 0.0);
    assert_eq!(value("xdb_async_leases_held", &[]), 0.0);

    let text = scrape(env.api_url()).await;
    let started = [
        ("route", paths::START),
        ("method", "POST"),
        ("status", "200"),
    ];
    assert_eq!(
        sample_sum(&text, "xdb_api_requests_total", &started),
        Some(2.0)
    );
    assert_eq!(
        sample_sum(
            &text,
            "xdb_api_request_duration_seconds_count",
            &[("route", paths::START)]
        ),
        Some(2.0)
    );
    env.shutdown().await;
}

/// The gauges: with one call slot, a held worker call keeps one lease, and the second
/// process's first task waits due and unclaimed (the backlog); both drain to 0.
async fn gauges_show_leases_held_and_the_backlog(db: Database) {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            max_in_flight: 1,
            ..Default::default()
        },
    )
    .await;
    let timer = TimerProcess::new(Duration::from_millis(10));
    let faults = WorkerFaults::new();
    faults.hold(CallMatch::state("SleepState", StateApiKind::WaitUntil));
    let router = WorkerService::new().register(timer.clone()).router();
    let worker = env.start_worker(faults.wrap(router)).await;
    for process_id in ["held-1", "held-2"] {
        start(
            &env,
            &timer,
            &worker,
            process_id,
            ProcessStartOptions::new(),
        )
        .await
        .unwrap();
    }
    let [async_url] = env.async_urls().try_into().expect("one async instance");
    let gauges = || async {
        let text = scrape(&async_url).await;
        (
            sample_sum(&text, "xdb_async_leases_held", &[]),
            sample_sum(&text, "xdb_async_queue_backlog", &[]),
        )
    };
    eventually("one lease held and one task due", SOON, || async {
        gauges().await == (Some(1.0), Some(1.0))
    })
    .await;
    faults.release();
    for process_id in ["held-1", "held-2"] {
        let done = env
            .client
            .wait_for_process_completion(process_id, SOON)
            .await
            .unwrap();
        assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");
    }
    eventually("no lease held and nothing due", SOON, || async {
        gauges().await == (Some(0.0), Some(0.0))
    })
    .await;
    env.shutdown().await;
}

/// The gauges of what needs an operator: a state that keeps failing once its attempt
/// reaches `async.attempts_alert_threshold` (5 by default); once paused, the execution
/// instead (its task set aside); a transition the database keeps refusing once parked.
async fn gauges_show_what_needs_an_operator(db: Database) {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            park_after_refusals: 2,
            ..Default::default()
        },
    )
    .await;
    let failing = FlakyProcess::new(FlakyConfig {
        failing_attempts: u32::MAX,
        maximum_attempts: 0,
        initial_interval: Duration::from_millis(50),
        recover: false,
        after_timer: None,
    });
    let timer = TimerProcess::new(Duration::from_millis(10));
    let router = WorkerService::new()
        .register(failing.clone())
        .register(timer.clone())
        .router();
    let worker = env.start_worker(router).await;
    let [async_url] = env.async_urls().try_into().expect("one async instance");
    let gauges = || async {
        let text = scrape(&async_url).await;
        [
            "xdb_async_paused_executions",
            "xdb_async_parked_tasks",
            "xdb_async_states_past_attempts",
        ]
        .map(|name| sample_sum(&text, name, &[]))
    };
    assert_eq!(gauges().await, [Some(0.0); 3]);

    let options = ProcessStartOptions::new().global_attribute_pk_value("g1");
    start(&env, &failing, &worker, "failing", options)
        .await
        .unwrap();
    eventually("the failing state's fifth attempt", SOON, || async {
        gauges().await == [Some(0.0), Some(0.0), Some(1.0)]
    })
    .await;
    assert!(failing.attempts.len() >= 4);

    let pause = json!({ "processId": "failing", "reason": "the gauges" }).to_string();
    let (status, body) = post_raw(&env, paths::PAUSE, pause, Some("application/json")).await;
    assert_eq!(status, 200, "{body}");
    eventually(
        "the paused execution counted, its task set aside",
        SOON,
        || async { gauges().await == [Some(1.0), Some(0.0), Some(0.0)] },
    )
    .await;

    refuse_state_completion(&env, None, Refusal::ForNow).await;
    start(&env, &timer, &worker, "refused", ProcessStartOptions::new())
        .await
        .unwrap();
    eventually(
        "the refused transition parked and counted",
        SOON,
        || async { gauges().await == [Some(1.0), Some(1.0), Some(0.0)] },
    )
    .await;

    let resume = json!({ "processId": "failing" }).to_string();
    let (status, body) = post_raw(&env, paths::RESUME, resume, Some("application/json")).await;
    assert_eq!(status, 200, "{body}");
    eventually(
        "the resumed execution's failing state counted again",
        SOON,
        || async { gauges().await == [Some(0.0), Some(1.0), Some(1.0)] },
    )
    .await;
    env.shutdown().await;
}

both_databases!(
    metrics_count_what_the_services_did,
    gauges_show_leases_held_and_the_backlog,
    gauges_show_what_needs_an_operator,
);
