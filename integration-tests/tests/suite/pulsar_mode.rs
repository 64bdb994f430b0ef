//! What only Pulsar CDC mode has: XDB's own delayed messages on the timer topic, change
//! events that name tasks which are not there (stale or forged), and the sweep that runs
//! tasks whose events were lost.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use prost::Message as _;
use pulsar::consumer::{ConsumerOptions, InitialPosition};
use pulsar::{Consumer, Pulsar, SubType, TokioExecutor};
use xdb_async_service::TaskTimer;
use xdb_config::QueueMode;
use xdb_integration_tests::processes::timer::{TimerEvent, TimerProcess};
use xdb_integration_tests::pulsar::{timer_topic, DEFAULT_PULSAR_URL, PULSAR_URL_ENV};
use xdb_integration_tests::{Database, EnvOptions, XdbTestEnv};
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
    let message = tokio::time::timeout(SOON, timers.next())
        .await
        .expect("a timer message within 10 s")
        .expect("the consumer runs")
        .expect("a message");
    let published = TaskTimer::decode(message.payload.data.as_slice()).expect("a TaskTimer");
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

mod postgres {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_sweep_runs_tasks_whose_change_events_were_lost() {
        super::the_sweep_runs_tasks_whose_change_events_were_lost(
            xdb_integration_tests::Database::Postgres,
        )
        .await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_timer_due_later_goes_through_the_timer_topic_and_never_fires_early() {
        super::a_timer_due_later_goes_through_the_timer_topic_and_never_fires_early(
            xdb_integration_tests::Database::Postgres,
        )
        .await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_timer_message_for_a_missing_task_changes_nothing() {
        super::a_timer_message_for_a_missing_task_changes_nothing(
            xdb_integration_tests::Database::Postgres,
        )
        .await
    }
}
