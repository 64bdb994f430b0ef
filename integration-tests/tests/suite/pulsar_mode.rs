//! What only Pulsar CDC mode has: XDB's own delayed messages on the timer topic, change
//! events that name tasks which are not there (stale or forged), the sweep that runs
//! tasks whose events were lost, the dead-letter path that parks a task until retry-now,
//! and a live instance that subscribes again to a consumer its client gave up on.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use prost::Message as _;
use pulsar::consumer::{ConsumerOptions, InitialPosition};
use pulsar::{Consumer, Pulsar, SubType, TokioExecutor};
use serde_json::json;
use xdb_async_service::{AsyncService, TaskTimer};
use xdb_config::{QueueMode, SubscriptionType};
use xdb_integration_tests::metrics::{sample_sum, scrape};
use xdb_integration_tests::processes::flaky::{FlakyConfig, FlakyProcess};
use xdb_integration_tests::processes::timer::{TimerEvent, TimerProcess};
use xdb_integration_tests::processes::Recorder;
use xdb_integration_tests::pulsar::{
    broker_url, dead_letter_topic, timer_topic, topic_stats, TestBroker, DEFAULT_PULSAR_URL,
    PULSAR_URL_ENV,
};
use xdb_integration_tests::{eventually, Database, EnvOptions, XdbTestEnv};
use xdb_protocol::paths;
use xdb_sdk::protocol::ProcessStatus;
use xdb_sdk::ProcessStartOptions;

use crate::common::*;

fn pulsar_env() -> EnvOptions {
    EnvOptions {
        queue_mode: QueueMode::Pulsar,
        ..Default::default()
    }
}

/// Unix epoch milliseconds of `time`.
fn epoch_millis(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH)
        .expect("after the epoch")
        .as_millis() as i64
}

/// The timer (2 s) is due later than the tests' hold (0.5 s), so it is published as a
/// `TaskTimer` with deliverAt at its due time, and the broker really delays it: a
/// Shared subscription of the test's own (the broker applies deliverAt to Shared and
/// Key_Shared subscriptions only; an Exclusive or Failover one gets the message at once)
/// receives it no earlier than deliverAt (pulsar-io/standalone/standalone.conf:
/// strict, 100 ms tick), and not much later. The execute runs only once the row is due.
async fn a_timer_due_later_goes_through_the_timer_topic_and_never_fires_early(db: Database) {
    let mut env = XdbTestEnv::start_with(db, pulsar_env()).await;
    // Subscribed before the timer is published, so it is received as soon as the broker
    // delivers it.
    let mut timers = subscribe(
        &broker_url(),
        &timer_topic(env.db()),
        "test-reader",
        SubType::Shared,
    )
    .await;
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

    // Another task's message may come first: a duplicate change event of the earlier
    // state's task, arriving while that task is leased, also becomes a timer message
    // (once on MariaDB with five Pulsar tests in parallel, the first message named another
    // task; not reproduced since). Only the timer task's message is checked.
    let (message, published, received) = tokio::time::timeout(SOON, async {
        loop {
            let message = timers
                .next()
                .await
                .expect("the consumer runs")
                .expect("a message");
            let received = SystemTime::now();
            let published =
                TaskTimer::decode(message.payload.data.as_slice()).expect("a TaskTimer");
            if published.task_id == task_id {
                return (message, published, received);
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
    // The same clock (this machine's) stamped deliverAt and the receipt. A message not
    // delayed at all would come about 1.5 s early.
    let lateness = epoch_millis(received) - published.due_at_millis;
    eprintln!("delayed delivery: deliverAt {lateness:+} ms");
    assert!(
        lateness >= -5,
        "the broker delivered the timer {} ms before its deliverAt",
        -lateness
    );
    assert!(
        lateness < 2_000,
        "the broker delivered the timer {lateness} ms after its deliverAt"
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
        ..Default::default()
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

/// The worker answers, but the database refuses to record the transition every time: the
/// message fails `pulsar.max_deliveries` deliveries, `pulsar.nack_delay_ms` apart, and
/// goes to the dead-letter topic, whose consumer runs the task once more and then parks
/// it, shown in `states` with the error; fixed, retry-now puts it back (its row's change
/// event brings it) and the process completes.
async fn a_dead_lettered_task_is_parked_until_retry_now(db: Database) {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            async_instances: 0,
            ..pulsar_env()
        },
    )
    .await;
    refuse_state_completion(&env, Some("FlakyState"), Refusal::ForNow).await;
    let max_deliveries = 4;
    // Shorter than the default (1 s), and longer than the database's own retries of a
    // refused transition within one delivery (20 and 200 ms).
    let nack_delay = Duration::from_millis(400);
    let mut config = env.async_config("dead-letters");
    config.pulsar.max_deliveries = max_deliveries;
    config.pulsar.nack_delay_ms = nack_delay.as_millis() as u64;
    let mut dead_letters = subscribe(
        &broker_url(),
        &dead_letter_topic(env.db()),
        "test-dead-letters",
        SubType::Exclusive,
    )
    .await;
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
    let (dead_letter, dead_lettered_at) = tokio::time::timeout(Duration::from_secs(30), async {
        let message = dead_letters
            .next()
            .await
            .expect("the consumer runs")
            .expect("a message");
        (message, Instant::now())
    })
    .await
    .expect("a dead letter within 30 s");
    let states_of = || async {
        let body = json!({ "processId": "poisoned" }).to_string();
        post_raw(&env, paths::STATES, body, Some("application/json"))
            .await
            .1
    };
    eventually(
        "the dead-lettered task to be parked",
        Duration::from_secs(30),
        || async { states_of().await["states"][0]["pendingCall"]["phase"] == "PARKED" },
    )
    .await;
    let view = states_of().await;
    assert_eq!(view["status"], "RUNNING", "{view}");
    let reason = view["states"][0]["pendingCall"]["parkedReason"]
        .as_str()
        .unwrap_or_default();
    assert!(
        reason.contains(&format!(
            "refused the transition {max_deliveries} times in a row"
        )) && reason.contains(REFUSAL),
        "{view}"
    );

    // The dead letter is the change event that created the task, as it came, keyed by
    // its execution.
    let event = task_change_event(&dead_letter);
    assert_eq!(event.op, "c", "{event:?}");
    assert_eq!(event.execution.as_deref(), Some(exec.as_str()), "{event:?}");
    assert_eq!(event.key.as_deref(), Some(exec.as_bytes()), "{event:?}");

    // Every call was attempt 1: no worker failure was recorded, the row was never
    // rescheduled; the task was handled once per delivery and once more on the
    // dead-letter subscription, each handling with the same number of calls (the
    // database's own short retries of a refused transition).
    let attempts = process.attempts.all();
    assert!(attempts.iter().all(|c| c.attempt == 1), "{attempts:?}");
    let handlings = max_deliveries as usize + 1;
    let start = attempts[0].at;
    let timeline: Vec<u128> = attempts
        .iter()
        .map(|c| (c.at - start).as_millis())
        .collect();
    assert!(
        !attempts.is_empty() && attempts.len().is_multiple_of(handlings),
        "{} calls (ms from the first: {timeline:?}) are not {handlings} handlings alike",
        attempts.len()
    );
    let deliveries: Vec<_> = attempts.chunks(attempts.len() / handlings).collect();
    // Each delivery after a refused one comes at least pulsar.nack_delay_ms after the
    // last call of the one before (a call is recorded before the transition is refused).
    let gaps: Vec<Duration> = deliveries[..max_deliveries as usize]
        .windows(2)
        .map(|pair| pair[1][0].at - pair[0].last().expect("calls").at)
        .collect();
    eprintln!(
        "nack redelivery: {} calls per delivery, gaps {:?} ms (pulsar.nack_delay_ms = {})",
        deliveries[0].len(),
        gaps.iter().map(Duration::as_millis).collect::<Vec<_>>(),
        nack_delay.as_millis()
    );
    assert!(
        gaps.iter().all(|gap| *gap >= nack_delay),
        "a delivery came sooner than {nack_delay:?} after the last: {gaps:?} (calls at {timeline:?} ms)"
    );
    // The setting, not the default of 1 s, set the pause.
    assert!(
        gaps.iter().min().expect("gaps") < &Duration::from_secs(1),
        "{gaps:?}"
    );
    // Dead-lettered after the last delivery failed, before its run on the dead-letter
    // subscription.
    let last_delivery = deliveries[max_deliveries as usize - 1];
    assert!(
        dead_lettered_at > last_delivery.last().expect("calls").at,
        "the dead letter came before delivery {max_deliveries} failed"
    );
    assert!(process.recoveries.all().is_empty(), "parked, not given up");
    let history = env.history_types(&exec).await;
    assert!(history.iter().any(|t| t == "TASK_PARKED"), "{history:?}");

    // Fixed, and released: the task runs again and the process completes.
    allow_state_completion(&env).await;
    let body = json!({ "processId": "poisoned", "reason": "trigger dropped" }).to_string();
    let (status, answer) = post_raw(&env, paths::RETRY_NOW, body, Some("application/json")).await;
    assert_eq!(status, 200, "{answer}");
    let done = env
        .client
        .wait_for_process_completion("poisoned", Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");
    let states: Vec<(String, String)> = env
        .state_rows(&exec)
        .await
        .into_iter()
        .map(|s| (s.execution_id(), s.status))
        .collect();
    assert_eq!(states, vec![("FlakyState-1".into(), "COMPLETED".into())]);
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
    // Each process's first task came by change event, claimed by id in gathered statements.
    let (mut statements, mut tasks) = (0.0, 0.0);
    for url in env.async_urls() {
        let metrics = scrape(&url).await;
        let sample = |name| sample_sum(&metrics, name, &[]).unwrap_or(0.0);
        statements += sample("xdb_async_pulsar_claim_batch_tasks_count");
        tasks += sample("xdb_async_pulsar_claim_batch_tasks_sum");
    }
    assert!(
        statements >= 1.0 && tasks >= 8.0 && tasks >= statements,
        "{statements} claim statements for {tasks} tasks"
    );
    env.shutdown().await;
}

/// What Key_Shared promises for the change events themselves: two consumers of a
/// Key_Shared subscription of the test's own on the real tasks topic (keyed by Pulsar IO
/// with Debezium's key, the task's `process_execution_id`) each get every change of an
/// execution or none of them, and both get some.
///
/// BUG (both dialects, with the committed source configs): Pulsar IO publishes through
/// a producer with the default batcher, which puts changes of several executions in one
/// entry (the inserts of processes started together, say), and Key_Shared dispatches an
/// entry whole, by one key: an execution's next changes may go to the other consumer.
/// XDB stays correct (an event is a hint, the row claim decides), but `key_shared` does
/// not keep an execution on one instance. With `producerConfig: {batchBuilder:
/// KEY_BASED}` in the source config (a batch holds one key) this test passes: checked
/// by registering such a source by hand, three runs on MariaDB.
async fn a_key_shared_subscription_keeps_each_execution_s_changes_on_one_consumer(db: Database) {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            async_instances: 2,
            pulsar_subscription_type: SubscriptionType::KeyShared,
            ..pulsar_env()
        },
    )
    .await;
    let topic = env
        .capture()
        .expect("the database is captured")
        .registration()
        .tasks_topic
        .clone();
    changes_of_each_execution_stay_on_one_key_shared_consumer(&mut env, &topic).await;
    env.shutdown().await;
}

/// Runs flaky processes while two Key_Shared consumers read `topic`; asserts each
/// execution's changes reached one consumer only, and both consumers got some.
async fn changes_of_each_execution_stay_on_one_key_shared_consumer(
    env: &mut XdbTestEnv,
    topic: &str,
) {
    let client = Pulsar::builder(broker_url(), TokioExecutor)
        .build()
        .await
        .expect("connect to the test broker");
    let received: [Recorder<TaskChangeEvent>; 2] = Default::default();
    let mut consuming = tokio::task::JoinSet::new();
    for (n, events) in received.iter().enumerate() {
        let mut consumer: Consumer<Vec<u8>, TokioExecutor> = client
            .consumer()
            .with_topic(topic)
            .with_subscription("test-key-shared")
            .with_subscription_type(SubType::KeyShared)
            .with_consumer_name(format!("test-key-shared-{n}"))
            .with_options(ConsumerOptions {
                initial_position: InitialPosition::Earliest,
                ..ConsumerOptions::default()
            })
            .build()
            .await
            .expect("a Key_Shared consumer of the tasks topic");
        let events = events.clone();
        consuming.spawn(async move {
            while let Some(Ok(message)) = consumer.next().await {
                events.push(task_change_event(&message));
                consumer.ack(&message).await.expect("ack");
            }
        });
    }

    let process = FlakyProcess::new(FlakyConfig {
        failing_attempts: 1,
        maximum_attempts: 3,
        initial_interval: Duration::from_millis(100),
        recover: false,
        after_timer: None,
    });
    let worker = serve(env, &process).await;
    // Keys are random execution ids, hashed over the two consumers' ranges: processes are
    // started, eight at a time, until both consumers have had some executions' changes
    // (at least 16 processes; 40 all on one consumer would be odds of 2^-39 for an even
    // split). The eight start at once, so their first changes come close together, as
    // they do under load.
    const AT_ONCE: usize = 8;
    let keyed = |events: &Recorder<TaskChangeEvent>| {
        events
            .all()
            .iter()
            .any(|e| e.key_execution.as_deref().is_some_and(|k| !k.is_empty()))
    };
    let mut execs = Vec::new();
    while execs.len() < 2 * AT_ONCE || !received.iter().all(keyed) {
        assert!(
            execs.len() < 40,
            "{} processes, all of their changes on one consumer",
            execs.len()
        );
        let first = execs.len();
        let starts = (first..first + AT_ONCE).map(|i| {
            let options = ProcessStartOptions::new().global_attribute_pk_value(format!("ks{i}"));
            let (env, process, worker) = (&*env, &process, &worker);
            async move {
                start(env, process, worker, &format!("key-shared-{i}"), options)
                    .await
                    .unwrap()
            }
        });
        execs.extend(futures::future::join_all(starts).await);
        for i in first..execs.len() {
            let done = env
                .client
                .wait_for_process_completion(&format!("key-shared-{i}"), Duration::from_secs(30))
                .await
                .unwrap();
            assert_eq!(
                done.status,
                ProcessStatus::Completed,
                "key-shared-{i}: {done:?}"
            );
        }
        // Deletes are not published (`skipped.operations`), so no event says a task is
        // done. A sentinel started after these completed is the mark instead: Debezium
        // publishes in commit order, so once its creation is on the topic every earlier
        // change is too, and once the subscription has nothing left unacknowledged,
        // every change of these executions was read.
        let sentinel_id = format!("key-shared-{}", execs.len());
        let options =
            ProcessStartOptions::new().global_attribute_pk_value(format!("ks{}", execs.len()));
        let sentinel = start(env, &process, &worker, &sentinel_id, options)
            .await
            .unwrap();
        eventually("the change events of every task", SOON, || async {
            let created = received
                .iter()
                .flat_map(Recorder::all)
                .any(|e| e.op == "c" && e.execution.as_deref() == Some(sentinel.as_str()));
            created && subscription_backlog(topic, "test-key-shared").await == 0
        })
        .await;
        let done = env
            .client
            .wait_for_process_completion(&sentinel_id, SOON)
            .await
            .unwrap();
        assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");
        execs.push(sentinel);
    }
    consuming.abort_all();

    // Which execution each task belongs to, from the events that carry it.
    let mut owner_of_task: BTreeMap<i64, String> = BTreeMap::new();
    for event in received.iter().flat_map(Recorder::all) {
        if let (Some(task), Some(exec)) = (event.task_id, &event.execution) {
            if !exec.is_empty() {
                owner_of_task.insert(task, exec.clone());
            }
        }
    }
    let mut consumers_of: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
    let mut split: Vec<String> = Vec::new();
    let (mut messages, mut unkeyed_deletes) = ([0; 2], 0);
    for (n, events) in received.iter().enumerate() {
        for event in events.all() {
            let task = event.task_id.expect("every change names its task");
            let exec = owner_of_task
                .get(&task)
                .unwrap_or_else(|| panic!("no execution for {event:?}"));
            // The committed source configs skip deletes. A source that publishes them
            // keys PostgreSQL's by "" (only the primary key of a deleted row is logged,
            // the table's replica identity being the default), and they go wherever
            // that key hashes. The consumer ignores deletes; they are counted, not
            // checked.
            if event.op == "d" && event.key_execution.as_deref() == Some("") {
                assert_eq!(env.database(), Database::Postgres, "{event:?}");
                unkeyed_deletes += 1;
                continue;
            }
            assert_eq!(
                event.key_execution.as_ref(),
                Some(exec),
                "keyed by its execution: {event:?}"
            );
            consumers_of.entry(exec.clone()).or_default().insert(n);
            split.push(format!("{n}: {} task {task} of {exec}", event.op));
            messages[n] += 1;
        }
    }
    let mut executions_of = [0; 2];
    for exec in &execs {
        let consumers = consumers_of.get(exec).cloned().unwrap_or_default();
        assert_eq!(
            consumers.len(),
            1,
            "execution {exec}'s changes went to consumers {consumers:?}:\n{}",
            split
                .iter()
                .filter(|line| line.ends_with(exec.as_str()))
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        );
        executions_of[*consumers.first().expect("one")] += 1;
    }
    assert_eq!(consumers_of.len(), execs.len(), "{consumers_of:?}");
    eprintln!(
        "key_shared: {} executions, {executions_of:?} per consumer ({messages:?} messages, \
         {unkeyed_deletes} deletes keyed \"\")",
        execs.len()
    );
    assert!(executions_of.iter().all(|n| *n > 0), "{executions_of:?}");
}

/// Messages of `topic` that `subscription` has not acknowledged, from the broker's
/// topic stats.
async fn subscription_backlog(topic: &str, subscription: &str) -> u64 {
    let stats = topic_stats(topic).await;
    stats["subscriptions"][subscription]["msgBacklog"]
        .as_u64()
        .unwrap_or_else(|| panic!("no backlog of {subscription} in {stats}"))
}

/// How long the `pulsar` client may take to give up on a broker that is gone: it
/// retries the connection 12 times with a backoff growing to 30 s.
const CONSUMER_GIVES_UP: Duration = Duration::from_secs(240);

/// The broker of an instance goes away: once its client stops reconnecting, the
/// consumers are lost. The instance stays alive (an orchestrator must not restart it),
/// says not ready naming the consumer it is subscribing again, and when the broker is
/// back it subscribes again by itself and turns ready.
async fn a_lost_pulsar_consumer_is_subscribed_again_by_a_live_instance(db: Database) {
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
    let mut config = env.async_config("survivor");
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
        "the readiness probe to name a consumer being subscribed again",
        CONSUMER_GIVES_UP,
        || async {
            assert_eq!(
                status("/health/live").await.status(),
                200,
                "alive all along"
            );
            let ready = status("/health/ready").await;
            ready.status() == 503
                && ready
                    .text()
                    .await
                    .is_ok_and(|reason| reason.contains("subscribing again"))
        },
    )
    .await;
    broker.restart().await;
    // The longest pause between tries (30 s), and a subscription on a broker just up.
    eventually(
        "the instance to subscribe again and be ready",
        Duration::from_secs(120),
        || async {
            assert_eq!(
                status("/health/live").await.status(),
                200,
                "alive all along"
            );
            status("/health/ready").await.status() == 200
        },
    )
    .await;
    let metrics = scrape(&base).await;
    let lost = sample_sum(&metrics, "xdb_async_pulsar_consumers_lost_total", &[]);
    assert!(lost.is_some_and(|n| n >= 1.0), "{lost:?}");
    service.shutdown().await.expect("shuts down");
    env.shutdown().await;
}

both_databases!(
    a_key_shared_subscription_shares_work_and_applies_each_transition_once,
    a_key_shared_subscription_keeps_each_execution_s_changes_on_one_consumer,
    a_dead_lettered_task_is_parked_until_retry_now,
    the_sweep_runs_tasks_whose_change_events_were_lost,
    a_timer_due_later_goes_through_the_timer_topic_and_never_fires_early,
    a_timer_message_for_a_missing_task_changes_nothing,
);

/// The consumer's loss has nothing to do with the database: one run is enough.
mod any_database {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lost_pulsar_consumer_is_subscribed_again_by_a_live_instance() {
        super::a_lost_pulsar_consumer_is_subscribed_again_by_a_live_instance(
            xdb_integration_tests::Database::Postgres,
        )
        .await
    }
}
