//! What only Pulsar CDC mode has: XDB's own delayed messages on the timer topic, change
//! events that name tasks which are not there (stale or forged), the sweep that runs
//! tasks whose events were lost, the dead-letter path that applies a state's failure
//! recovery, and health probes that notice a dead consumer.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use prost::Message as _;
use pulsar::consumer::{ConsumerOptions, InitialPosition};
use pulsar::{Consumer, Pulsar, SubType, TokioExecutor};
use xdb_async_service::{AsyncService, TaskTimer};
use xdb_config::{QueueMode, SubscriptionType};
use xdb_integration_tests::processes::flaky::{FlakyConfig, FlakyProcess};
use xdb_integration_tests::processes::timer::{TimerEvent, TimerProcess};
use xdb_integration_tests::pulsar::{timer_topic, TestBroker, DEFAULT_PULSAR_URL, PULSAR_URL_ENV};
use xdb_integration_tests::{eventually, Database, EnvOptions, XdbTestEnv};
use xdb_sdk::protocol::ProcessStatus;
use xdb_sdk::ProcessStartOptions;

use crate::common::*;

fn pulsar_env() -> EnvOptions {
    EnvOptions {
        queue_mode: QueueMode::Pulsar,
        ..Default::default()
    }
}

async fn read_from_start(topic: &str, subscription: &str) -> Consumer<Vec<u8>, TokioExecutor> {
    let url = std::env::var(PULSAR_URL_ENV).unwrap_or_else(|_| DEFAULT_PULSAR_URL.into());
    let client = Pulsar::builder(url, TokioExecutor)
        .build()
        .await
        .expect("connect to the test broker");
    client
        .consumer()
        .with_topic(topic)
        .with_subscription(subscription)
        .with_subscription_type(SubType::Exclusive)
        .with_options(ConsumerOptions {
            initial_position: InitialPosition::Earliest,
            ..ConsumerOptions::default()
        })
        .build()
        .await
        .expect("subscribe to the topic")
}

/// The timer (2 s) is due later than the tests' hold (0.5 s), so it is published as a
/// `TaskTimer` with deliverAt; pulsar-lite delivers it at once, and the execute still
/// runs only once the row is due.
async fn a_timer_due_later_goes_through_the_timer_topic_and_never_fires_early(db: Database) {
    let mut env = XdbTestEnv::start_with(db, pulsar_env()).await;
    let delay = Duration::from_secs(2);
    let timer = TimerProcess::new(delay);
    let worker = serve(&mut env, &timer).await;
    let exec = start(&env, &timer, &worker, "timer", ProcessStartOptions::new())
        .await
        .unwrap();
    wait_state(&env, &exec, "SleepState", 1, "WAITING_COMMANDS").await;
    let tasks = env.tasks(&exec).await;
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    let (task_id, fire_at) = (tasks[0].id, tasks[0].fire_at);

    let mut timers = read_from_start(&timer_topic(env.db()), "test-reader").await;
    // Another task's message may come first: a duplicate change event of the earlier
    // state's task, arriving while that task is leased, also becomes a timer message
    // (once on MariaDB with five Pulsar tests in parallel, the first message named another
    // task; not reproduced since). Only the timer task's message is checked.
    let (message, published) = tokio::time::timeout(SOON, async {
        loop {
            let message = timers
                .next()
                .await
                .expect("the consumer runs")
                .expect("a message");
            let published =
                TaskTimer::decode(message.payload.data.as_slice()).expect("a TaskTimer");
            if published.task_id == task_id {
                return (message, published);
            }
        }
    })
    .await
    .expect("a timer message for the timer task within 10 s");
    assert_eq!(published.task_id, task_id);
    assert_eq!(published.process_execution_id, exec);
    let off_by = (published.due_at_millis - fire_at.timestamp_millis()).abs();
    assert!(
        off_by < 200,
        "due {off_by} ms away from fire_at: {published:?}"
    );
    assert_eq!(
        message.metadata().deliver_at_time,
        Some(published.due_at_millis),
        "published with deliverAt at the due time"
    );

    let done = env
        .client
        .wait_for_process_completion("timer", Duration::from_secs(15))
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed);
    let events = timer.events.all();
    let Some(TimerEvent::Executed { at, fired: true }) = events.last() else {
        panic!("the execute after the timer fired expected last: {events:?}");
    };
    assert!(*at >= SystemTime::from(fire_at), "fired before it was due");
    assert!(
        *at < SystemTime::from(fire_at) + Duration::from_secs(3),
        "fired late"
    );
    env.shutdown().await;
}

/// A timer message for a task that does not exist (stale: done long ago, or never
/// there) is dropped without effect, and the instance goes on with real work.
async fn a_timer_message_for_a_missing_task_changes_nothing(db: Database) {
    let mut env = XdbTestEnv::start_with(db, pulsar_env()).await;
    let url = std::env::var(PULSAR_URL_ENV).unwrap_or_else(|_| DEFAULT_PULSAR_URL.into());
    let client = Pulsar::builder(url, TokioExecutor)
        .build()
        .await
        .expect("connect to the test broker");
    let mut producer = client
        .producer()
        .with_topic(timer_topic(env.db()))
        .build()
        .await
        .expect("a producer on the timer topic");
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let stale = TaskTimer {
        task_id: 987_654_321,
        process_execution_id: "00000000-0000-0000-0000-000000000000".into(),
        due_at_millis: now,
    };
    producer
        .send_non_blocking(stale.encode_to_vec())
        .await
        .expect("send")
        .await
        .expect("the broker took the message");

    // Real work still flows: a timer process completes.
    let timer = TimerProcess::new(Duration::from_millis(200));
    let worker = serve(&mut env, &timer).await;
    start(&env, &timer, &worker, "timer", ProcessStartOptions::new())
        .await
        .unwrap();
    let done = env
        .client
        .wait_for_process_completion("timer", Duration::from_secs(15))
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed);
    assert_eq!(
        env.count("SELECT count(*) FROM xdb_sys_process_executions", &[])
            .await,
        1,
        "the stale message created nothing"
    );
    env.shutdown().await;
}

/// No change event ever comes (the database is not captured): the sweep finds the
/// tasks once they are overdue and runs them, so a lost event delays a process but
/// does not stall it.
async fn the_sweep_runs_tasks_whose_change_events_were_lost(db: Database) {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            cdc_capture: false,
            pulsar_sweep_after_ms: 500,
            ..pulsar_env()
        },
    )
    .await;
    let timer = TimerProcess::new(Duration::from_millis(100));
    let worker = serve(&mut env, &timer).await;
    let exec = start(&env, &timer, &worker, "timer", ProcessStartOptions::new())
        .await
        .unwrap();
    let done = env
        .client
        .wait_for_process_completion("timer", Duration::from_secs(15))
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed);
    let history = env.history_types(&exec).await;
    assert!(history.contains(&"TIMER_FIRED".into()), "{history:?}");
    assert!(env.tasks(&exec).await.is_empty());
    env.shutdown().await;
}

/// Refuses, in the database, the transition that completes `FlakyState`: its task can
/// be handled but never recorded, whatever the worker answers (a poison message).
fn refuse_flaky_completion_sql(db: Database) -> &'static str {
    match db {
        Database::Postgres => {
            "CREATE FUNCTION refuse_flaky_completion() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN RAISE EXCEPTION 'poison: FlakyState may not complete'; END $$;
             CREATE TRIGGER refuse_flaky_completion BEFORE UPDATE ON xdb_sys_async_state_executions
             FOR EACH ROW WHEN (NEW.state_id = 'FlakyState' AND NEW.status = 'COMPLETED')
             EXECUTE FUNCTION refuse_flaky_completion();"
        }
        Database::MySql => {
            "CREATE TRIGGER refuse_flaky_completion BEFORE UPDATE ON xdb_sys_async_state_executions
             FOR EACH ROW BEGIN
               IF NEW.state_id = 'FlakyState' AND NEW.status = 'COMPLETED' THEN
                 SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'poison: FlakyState may not complete';
               END IF;
             END"
        }
    }
}

/// The worker answers, but the database refuses to record the transition every time: the
/// message fails `pulsar.max_deliveries` deliveries and goes to the dead-letter topic,
/// whose consumer runs the task once more and then applies the state's failure recovery
/// (here: proceed to the recovery state), though the retry policy had attempts left.
async fn a_dead_lettered_state_task_applies_the_failure_recovery(db: Database) {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            async_instances: 0,
            ..pulsar_env()
        },
    )
    .await;
    env.db().execute_sql(refuse_flaky_completion_sql(db)).await;
    let max_deliveries = 3;
    let mut config = env.async_config("dead-letters");
    config.pulsar.max_deliveries = max_deliveries;
    let service = AsyncService::start(config)
        .await
        .expect("the async service starts");
    let process = FlakyProcess::new(FlakyConfig {
        failing_attempts: 0,
        maximum_attempts: 10,
        initial_interval: Duration::from_millis(100),
        recover: true,
        after_timer: None,
    });
    let worker = serve(&mut env, &process).await;
    let exec = start(
        &env,
        &process,
        &worker,
        "poisoned",
        ProcessStartOptions::new()
            .global_attribute_pk_value("p1")
            .initial_global_attribute("note", "initial"),
    )
    .await
    .unwrap();
    let done = env
        .client
        .wait_for_process_completion("poisoned", Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");

    // Every call was attempt 1: no worker failure was recorded, the row was never
    // rescheduled; the task was handled once per delivery (each with the database's
    // own short retries) and once more on the dead-letter subscription.
    let attempts = process.attempts.all();
    assert!(
        attempts.len() > max_deliveries as usize,
        "{} calls",
        attempts.len()
    );
    assert!(attempts.iter().all(|c| c.attempt == 1), "{attempts:?}");
    let recoveries = process.recoveries.all();
    assert_eq!(recoveries.len(), 1, "{recoveries:?}");
    assert_eq!(recoveries[0]["stateExecutionId"], "FlakyState-1");
    let error = recoveries[0]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains(&format!(
            "could not be recorded in {max_deliveries} deliveries"
        )) && error.contains("poison"),
        "{error}"
    );
    let states: Vec<(String, String)> = env
        .state_rows(&exec)
        .await
        .into_iter()
        .map(|s| (s.execution_id(), s.status))
        .collect();
    assert_eq!(
        states,
        vec![
            ("FlakyState-1".into(), "FAILED".into()),
            ("RecoveryState-1".into(), "COMPLETED".into())
        ]
    );
    assert!(env.tasks(&exec).await.is_empty());
    service.shutdown().await.expect("shuts down");
    env.shutdown().await;
}

/// `pulsar.subscription_type = "key_shared"`: three instances share the work with each
/// execution's messages kept on one instance at a time; every process completes, with
/// its failed attempt retried and each transition applied once.
async fn a_key_shared_subscription_shares_work_and_applies_each_transition_once(db: Database) {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            async_instances: 3,
            pulsar_subscription_type: SubscriptionType::KeyShared,
            ..pulsar_env()
        },
    )
    .await;
    let process = FlakyProcess::new(FlakyConfig {
        failing_attempts: 1,
        maximum_attempts: 3,
        initial_interval: Duration::from_millis(100),
        recover: false,
        after_timer: None,
    });
    let worker = serve(&mut env, &process).await;
    let mut execs = Vec::new();
    for i in 0..8 {
        let options = ProcessStartOptions::new().global_attribute_pk_value(format!("k{i}"));
        let id = format!("keyed-{i}");
        execs.push(start(&env, &process, &worker, &id, options).await.unwrap());
    }
    for i in 0..8 {
        let done = env
            .client
            .wait_for_process_completion(&format!("keyed-{i}"), Duration::from_secs(30))
            .await
            .unwrap();
        assert_eq!(done.status, ProcessStatus::Completed, "keyed-{i}: {done:?}");
    }
    for exec in &execs {
        let history = env.history_types(exec).await;
        for (event, times) in [("STATE_API_FAILED", 1), ("EXECUTE_COMPLETED", 1)] {
            let seen = history.iter().filter(|e| *e == event).count();
            assert_eq!(seen, times, "{event} in {history:?}");
        }
    }
    env.shutdown().await;
}

/// How long the `pulsar` client may take to give up on a broker that is gone: it
/// retries the connection 12 times with a backoff growing to 30 s.
const CONSUMER_GIVES_UP: Duration = Duration::from_secs(240);

/// The broker of an instance dies for good: once its client stops reconnecting, the
/// consumer is dead and the instance can never get work again, so both probes turn
/// unhealthy (and an orchestrator restarts it), naming the consumer.
async fn health_probes_fail_once_the_pulsar_consumer_is_dead(db: Database) {
    let env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            async_instances: 0,
            cdc_capture: false,
            ..pulsar_env()
        },
    )
    .await;
    let mut broker = TestBroker::start().await;
    let mut config = env.async_config("doomed");
    config.pulsar.service_url = Some(broker.url().to_string());
    let service = AsyncService::start(config)
        .await
        .expect("the async service starts on the test broker");
    let base = format!("http://{}", service.address());
    let http = reqwest::Client::new();
    let status = |path: &'static str| {
        let request = http.get(format!("{base}{path}"));
        async move { request.send().await.expect("the probe answers") }
    };
    assert_eq!(status("/health/live").await.status(), 200);
    assert_eq!(status("/health/ready").await.status(), 200);

    broker.kill();
    eventually(
        "the liveness probe to fail once the consumer is dead",
        CONSUMER_GIVES_UP,
        || async { status("/health/live").await.status() == 503 },
    )
    .await;
    let ready = status("/health/ready").await;
    assert_eq!(ready.status(), 503);
    let reason = ready.text().await.unwrap();
    assert!(reason.contains("Pulsar consumer"), "{reason}");
    service.shutdown().await.expect("shuts down");
    env.shutdown().await;
}

both_databases!(
    a_key_shared_subscription_shares_work_and_applies_each_transition_once,
    a_dead_lettered_state_task_applies_the_failure_recovery,
    the_sweep_runs_tasks_whose_change_events_were_lost,
    a_timer_due_later_goes_through_the_timer_topic_and_never_fires_early,
    a_timer_message_for_a_missing_task_changes_nothing,
);

/// The consumer's death has nothing to do with the database: one run is enough.
mod any_database {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn health_probes_fail_once_the_pulsar_consumer_is_dead() {
        super::health_probes_fail_once_the_pulsar_consumer_is_dead(
            xdb_integration_tests::Database::Postgres,
        )
        .await
    }
}
