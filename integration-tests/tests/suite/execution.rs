//! How states run: durable timers, local-queue commands, retries, failure recovery,
//! process timeout and id-reuse policies.

use std::time::{Duration, SystemTime};

use serde_json::json;
use xdb_integration_tests::processes::flaky::{FlakyConfig, FlakyProcess};
use xdb_integration_tests::processes::park::{ParkProcess, QUEUE_GO};
use xdb_integration_tests::processes::queue::{QueueProcess, QUEUE_A, QUEUE_B};
use xdb_integration_tests::processes::timer::{TimerEvent, TimerProcess};
use xdb_integration_tests::{eventually, Database, XdbTestEnv};
use xdb_sdk::protocol::*;
use xdb_sdk::{Command, CommandRequest, ProcessIdReusePolicy, ProcessStartOptions};

use crate::common::*;

async fn durable_timer_never_fires_early(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let delay = Duration::from_secs(2);
    let timer = TimerProcess::new(delay);
    let worker = serve(&mut env, &timer).await;
    let exec = start(&env, &timer, &worker, "timer", ProcessStartOptions::new())
        .await
        .unwrap();
    wait_state(&env, &exec, "SleepState", 1, "WAITING_COMMANDS").await;
    let tasks = env.tasks(&exec).await;
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert_eq!(tasks[0].task_type, "TIMER");
    assert_eq!(tasks[0].timer_index, Some(0));
    let fire_at = SystemTime::from(tasks[0].fire_at);

    let done = env
        .client
        .wait_for_process_completion("timer", Duration::from_secs(15))
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed);
    let events = timer.events.all();
    let [TimerEvent::WaitUntilAnswered(answered), TimerEvent::Executed { at, fired }] =
        events.as_slice()
    else {
        panic!("one waitUntil then one execute expected: {events:?}");
    };
    assert!(fired, "execute sees the timer as fired");
    let waited = at
        .duration_since(*answered)
        .expect("execute after waitUntil");
    assert!(
        waited >= delay,
        "execute ran {waited:?} after waitUntil answered"
    );
    assert!(*at >= fire_at, "execute ran before the timer was due");
    assert!(
        waited < delay + Duration::from_secs(2),
        "fired late: {waited:?}"
    );
    assert!(env
        .history_types(&exec)
        .await
        .contains(&"TIMER_FIRED".into()));
    env.shutdown().await;
}

async fn local_queue_all_of_waits_for_every_command_and_its_count(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let queue = QueueProcess::new(CommandRequest::all_of(vec![
        Command::local_queue_count(QUEUE_A, 2),
        Command::local_queue(QUEUE_B),
    ]));
    let worker = serve(&mut env, &queue).await;
    let exec = start(&env, &queue, &worker, "all-of", ProcessStartOptions::new())
        .await
        .unwrap();
    wait_state(&env, &exec, "WaitQueuesState", 1, "WAITING_COMMANDS").await;
    let publish = |queue_name: &'static str, payload: &'static str| {
        let client = env.client.clone();
        async move {
            client
                .publish_to_local_queue("all-of", queue_name, payload, None)
                .await
                .expect("publish")
        }
    };
    // One of two on `a`: nothing is consumed.
    publish(QUEUE_A, "a1").await;
    let state = env.state_row(&exec, "WaitQueuesState", 1).await.unwrap();
    assert_eq!(state.status, "WAITING_COMMANDS");
    assert!(env
        .messages(&exec)
        .await
        .iter()
        .all(|m| m.consumed_by.is_none()));
    // `b` completes its command, but `a` still lacks one.
    publish(QUEUE_B, "b1").await;
    let state = env.state_row(&exec, "WaitQueuesState", 1).await.unwrap();
    assert_eq!(state.status, "WAITING_COMMANDS");
    let consumed: Vec<(String, Option<String>)> = env
        .messages(&exec)
        .await
        .into_iter()
        .map(|m| (m.queue_name, m.consumed_by))
        .collect();
    assert_eq!(
        consumed,
        vec![
            ("a".to_string(), None),
            ("b".to_string(), Some("WaitQueuesState-1".to_string()))
        ]
    );
    assert!(queue.results.is_empty(), "execute must not run yet");
    publish(QUEUE_A, "a2").await;
    let done = env
        .client
        .wait_for_process_completion("all-of", SOON)
        .await
        .unwrap();
    assert_eq!(
        decode(&done.result),
        json!({"a": ["a1", "a2"], "b": ["b1"]})
    );
    let results = queue.results.all();
    assert_eq!(results.len(), 1);
    assert!(results[0]
        .local_queue_results
        .iter()
        .all(|r| r.status == LocalQueueCommandStatus::Received));
    assert!(env
        .messages(&exec)
        .await
        .iter()
        .all(|m| m.consumed_by.as_deref() == Some("WaitQueuesState-1")));
    env.shutdown().await;
}

async fn local_queue_any_of_goes_on_with_the_first_complete_command(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let queue = QueueProcess::new(CommandRequest::any_of(vec![
        Command::local_queue_count(QUEUE_A, 2),
        Command::local_queue(QUEUE_B),
        Command::timer(Duration::from_secs(300)),
    ]));
    let worker = serve(&mut env, &queue).await;
    let exec = start(&env, &queue, &worker, "any-of", ProcessStartOptions::new())
        .await
        .unwrap();
    wait_state(&env, &exec, "WaitQueuesState", 1, "WAITING_COMMANDS").await;
    env.client
        .publish_to_local_queue("any-of", QUEUE_A, "a1", None)
        .await
        .unwrap();
    assert_eq!(
        env.state_row(&exec, "WaitQueuesState", 1)
            .await
            .unwrap()
            .status,
        "WAITING_COMMANDS",
        "one of two messages completes nothing"
    );
    env.client
        .publish_to_local_queue("any-of", QUEUE_B, "b1", None)
        .await
        .unwrap();
    let done = env
        .client
        .wait_for_process_completion("any-of", SOON)
        .await
        .unwrap();
    assert_eq!(decode(&done.result), json!({"a": [], "b": ["b1"]}));
    let results = queue.results.all();
    assert_eq!(results.len(), 1);
    let statuses: Vec<_> = results[0]
        .local_queue_results
        .iter()
        .map(|r| (r.queue_name.as_str(), r.status))
        .collect();
    assert_eq!(
        statuses,
        vec![
            ("a", LocalQueueCommandStatus::Skipped),
            ("b", LocalQueueCommandStatus::Received)
        ]
    );
    assert_eq!(results[0].timer_results[0].status, TimerStatus::Skipped);
    // `a1` was not taken; the timer is gone with the state.
    let messages = env.messages(&exec).await;
    assert_eq!(messages[0].consumed_by, None);
    assert_eq!(
        messages[1].consumed_by.as_deref(),
        Some("WaitQueuesState-1")
    );
    assert!(env.tasks(&exec).await.is_empty());
    env.shutdown().await;
}

fn flaky(failing_attempts: u32, maximum_attempts: u32, recover: bool) -> FlakyProcess {
    FlakyProcess::new(FlakyConfig {
        failing_attempts,
        maximum_attempts,
        initial_interval: Duration::from_millis(200),
        recover,
        after_timer: None,
    })
}

fn entity_options(id: &str) -> ProcessStartOptions {
    ProcessStartOptions::new()
        .global_attribute_pk_value(id)
        .initial_global_attribute("note", "initial")
}

async fn retry_policy_retries_with_attempt_numbers_and_one_idempotency_key(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let process = flaky(2, 5, false);
    let worker = serve(&mut env, &process).await;
    let exec = start(&env, &process, &worker, "flaky", entity_options("e1"))
        .await
        .unwrap();
    let done = env
        .client
        .wait_for_process_completion("flaky", SOON)
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");
    assert_eq!(decode(&done.result), json!("ok"));
    let attempts = process.attempts.all();
    assert_eq!(
        attempts.iter().map(|c| c.attempt).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    let first = &attempts[0];
    assert_eq!(first.state_execution_id.as_deref(), Some("FlakyState-1"));
    assert_eq!(first.process_execution_id, exec);
    assert!(
        first.idempotency_key.contains(&exec),
        "{}",
        first.idempotency_key
    );
    for attempt in &attempts {
        assert_eq!(attempt.idempotency_key, first.idempotency_key);
        assert_eq!(
            attempt.first_attempt_timestamp_ms,
            first.first_attempt_timestamp_ms
        );
        assert_eq!(attempt.state_execution_id, first.state_execution_id);
    }
    // Only the successful attempt's writes reached the table.
    assert_eq!(
        env.entity_row("e1").await.unwrap().note.as_deref(),
        Some("flaky done")
    );
    let history = env.history_types(&exec).await;
    assert_eq!(
        history.iter().filter(|e| *e == "STATE_API_FAILED").count(),
        2,
        "{history:?}"
    );
    env.shutdown().await;
}

/// The execute a timer's firing starts is called before the firing is written (one
/// transition for both); when that call fails, the firing is still recorded once and the
/// execute is retried by its policy, under one idempotency key.
async fn a_failed_execute_after_a_timer_is_retried_by_policy(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let mut process = flaky(1, 3, false);
    process.config.after_timer = Some(Duration::from_secs(1));
    let worker = serve(&mut env, &process).await;
    let exec = start(
        &env,
        &process,
        &worker,
        "timed-flaky",
        entity_options("e-timed"),
    )
    .await
    .unwrap();
    let done = env
        .client
        .wait_for_process_completion("timed-flaky", SOON)
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");
    let attempts = process.attempts.all();
    assert_eq!(
        attempts.iter().map(|c| c.attempt).collect::<Vec<_>>(),
        vec![1, 2]
    );
    assert_eq!(attempts[0].idempotency_key, attempts[1].idempotency_key);
    assert_eq!(
        attempts[0].state_execution_id.as_deref(),
        Some("TimedFlakyState-1")
    );
    assert_eq!(
        env.entity_row("e-timed").await.unwrap().note.as_deref(),
        Some("flaky done")
    );
    let history = env.history_types(&exec).await;
    let count = |event: &str| history.iter().filter(|e| *e == event).count();
    assert_eq!(count("TIMER_FIRED"), 1, "{history:?}");
    assert_eq!(count("STATE_API_FAILED"), 1, "{history:?}");
    assert_eq!(count("EXECUTE_COMPLETED"), 1, "{history:?}");
    assert!(env.tasks(&exec).await.is_empty());
    env.shutdown().await;
}

async fn exhausted_retries_fail_the_process_with_the_reason(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let process = flaky(u32::MAX, 3, false);
    let worker = serve(&mut env, &process).await;
    let exec = start(&env, &process, &worker, "doomed", entity_options("e2"))
        .await
        .unwrap();
    let done = env
        .client
        .wait_for_process_completion("doomed", SOON)
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Failed);
    let failure = done.failure.expect("a failure");
    assert!(
        failure.reason.contains("FlakyState-1") && failure.reason.contains("execute"),
        "{failure:?}"
    );
    assert!(
        failure
            .details
            .as_deref()
            .is_some_and(|d| d.contains("flaky failure on attempt 3")),
        "{failure:?}"
    );
    assert_eq!(process.attempts.len(), 3);
    let state = env.state_row(&exec, "FlakyState", 1).await.unwrap();
    assert_eq!(state.status, "FAILED");
    assert!(state.last_failure.is_some());
    assert!(env.tasks(&exec).await.is_empty());
    assert_eq!(
        env.entity_row("e2").await.unwrap().note.as_deref(),
        Some("initial"),
        "failed attempts write nothing"
    );
    let history = env.history_types(&exec).await;
    assert!(
        history.ends_with(&["STATE_FAILED".into(), "PROCESS_CLOSED".into()]),
        "{history:?}"
    );
    env.shutdown().await;
}

async fn failure_recovery_proceeds_to_the_configured_state(db: Database) {
    recovers_from(db, None).await
}

/// Giving up on the execute a timer's firing starts (called before the firing is
/// written) recovers the same way.
async fn failure_recovery_after_a_timer_proceeds_to_the_configured_state(db: Database) {
    recovers_from(db, Some(Duration::from_secs(1))).await
}

/// A flaky state that never succeeds, behind `after_timer` if given, recovers.
async fn recovers_from(db: Database, after_timer: Option<Duration>) {
    let mut env = XdbTestEnv::start(db).await;
    let mut process = flaky(u32::MAX, 2, true);
    process.config.after_timer = after_timer;
    let flaky_state = match after_timer {
        Some(_) => "TimedFlakyState-1",
        None => "FlakyState-1",
    };
    let worker = serve(&mut env, &process).await;
    let exec = start(&env, &process, &worker, "recovering", entity_options("e3"))
        .await
        .unwrap();
    let done = env
        .client
        .wait_for_process_completion("recovering", SOON)
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");
    assert_eq!(decode(&done.result), json!("recovered"));
    assert_eq!(process.attempts.len(), 2);
    let recoveries = process.recoveries.all();
    assert_eq!(recoveries.len(), 1);
    assert_eq!(recoveries[0]["stateExecutionId"], flaky_state);
    assert_eq!(recoveries[0]["api"], "execute");
    assert!(recoveries[0]["error"]
        .as_str()
        .is_some_and(|e| e.contains("flaky failure on attempt 2")));
    let states: Vec<(String, String)> = env
        .state_rows(&exec)
        .await
        .into_iter()
        .map(|s| (s.execution_id(), s.status))
        .collect();
    assert_eq!(
        states,
        vec![
            (flaky_state.into(), "FAILED".into()),
            ("RecoveryState-1".into(), "COMPLETED".into())
        ]
    );
    assert_eq!(
        env.entity_row("e3").await.unwrap().note.as_deref(),
        Some("recovered")
    );
    assert!(env.tasks(&exec).await.is_empty());
    env.shutdown().await;
}

async fn process_timeout_closes_the_execution_as_timeout(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let timer = TimerProcess::new(Duration::from_secs(120));
    let worker = serve(&mut env, &timer).await;
    let exec = start(
        &env,
        &timer,
        &worker,
        "slow",
        ProcessStartOptions::new().timeout(Duration::from_secs(1)),
    )
    .await
    .unwrap();
    let timeout_task = env
        .tasks(&exec)
        .await
        .into_iter()
        .find(|t| t.task_type == "PROCESS_TIMEOUT")
        .expect("a PROCESS_TIMEOUT task is written with the start");
    let started = env.process_row(&exec).await.unwrap().start_time;
    assert!(timeout_task.fire_at >= started + chrono::Duration::seconds(1));
    let done = env
        .client
        .wait_for_process_completion("slow", SOON)
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Timeout);
    assert!(
        done.failure
            .as_ref()
            .is_some_and(|f| f.reason.contains("timed out")),
        "{done:?}"
    );
    let row = env.process_row(&exec).await.unwrap();
    assert!(row.close_time.unwrap() >= started + chrono::Duration::seconds(1));
    assert!(
        env.tasks(&exec).await.is_empty(),
        "the state's timer is gone too"
    );
    assert_eq!(
        env.state_row(&exec, "SleepState", 1).await.unwrap().status,
        "ABORTED"
    );
    assert!(
        !timer
            .events
            .all()
            .iter()
            .any(|e| matches!(e, TimerEvent::Executed { .. })),
        "execute never ran"
    );
    env.shutdown().await;
}

async fn start_park(
    env: &XdbTestEnv,
    worker: &str,
    id: &str,
    policy: ProcessIdReusePolicy,
) -> Result<String, xdb_sdk::ClientError> {
    start(
        env,
        &ParkProcess,
        worker,
        id,
        ProcessStartOptions::new().id_reuse_policy(policy),
    )
    .await
}

async fn complete_park(env: &XdbTestEnv, id: &str) {
    env.client
        .publish_to_local_queue(id, QUEUE_GO, (), None)
        .await
        .unwrap();
    let done = env
        .client
        .wait_for_process_completion(id, SOON)
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed);
}

async fn id_reuse_policies(db: Database) {
    use ProcessIdReusePolicy::*;
    let mut env = XdbTestEnv::start(db).await;
    let worker = serve(&mut env, &ParkProcess).await;
    let conflict = |r| expect_api_error(r, 409, ErrorSubType::ProcessAlreadyStarted);

    // ALLOW_IF_NO_RUNNING: refused while running, allowed once closed.
    let first = start_park(&env, &worker, "p-no-running", AllowIfNoRunning)
        .await
        .unwrap();
    conflict(start_park(&env, &worker, "p-no-running", AllowIfNoRunning).await);
    complete_park(&env, "p-no-running").await;
    let second = start_park(&env, &worker, "p-no-running", AllowIfNoRunning)
        .await
        .unwrap();
    assert_ne!(first, second);
    assert_eq!(env.latest_execution("p-no-running").await, Some(second));

    // ALLOW_IF_PREVIOUS_EXIT_ABNORMALLY: refused after a completion, allowed after a failure.
    start_park(&env, &worker, "p-abnormal", AllowIfPreviousExitAbnormally)
        .await
        .unwrap();
    complete_park(&env, "p-abnormal").await;
    conflict(start_park(&env, &worker, "p-abnormal", AllowIfPreviousExitAbnormally).await);
    let failing = start_park(&env, &worker, "p-abnormal-2", AllowIfPreviousExitAbnormally)
        .await
        .unwrap();
    // Stopped once it waits on its commands, so that what it failed from is known (a
    // stop racing with its transitions succeeds too, see
    // stop_racing_with_state_transitions_succeeds).
    wait_state(&env, &failing, "ParkState", 1, "WAITING_COMMANDS").await;
    env.client
        .stop_process("p-abnormal-2", ProcessExecutionStopType::Fail, None)
        .await
        .unwrap();
    start_park(&env, &worker, "p-abnormal-2", AllowIfPreviousExitAbnormally)
        .await
        .expect("allowed after a failure");

    // DISALLOW_REUSE: never a second execution.
    start_park(&env, &worker, "p-disallow", DisallowReuse)
        .await
        .unwrap();
    complete_park(&env, "p-disallow").await;
    conflict(start_park(&env, &worker, "p-disallow", DisallowReuse).await);
    assert_eq!(env.process_rows_of("p-disallow").await.len(), 1);

    // TERMINATE_IF_RUNNING: the running execution is terminated and replaced.
    let old = start_park(&env, &worker, "p-terminate", TerminateIfRunning)
        .await
        .unwrap();
    wait_state(&env, &old, "ParkState", 1, "WAITING_COMMANDS").await;
    let new = start_park(&env, &worker, "p-terminate", TerminateIfRunning)
        .await
        .unwrap();
    let old_row = env.process_row(&old).await.unwrap();
    assert_eq!(old_row.status, "TERMINATED");
    assert_eq!(
        env.state_row(&old, "ParkState", 1).await.unwrap().status,
        "ABORTED"
    );
    assert!(env.tasks(&old).await.is_empty());
    assert_eq!(env.process_row(&new).await.unwrap().status, "RUNNING");
    assert_eq!(env.latest_execution("p-terminate").await, Some(new.clone()));
    // Messages now go to the new execution.
    complete_park(&env, "p-terminate").await;
    assert_eq!(env.messages(&new).await.len(), 1);
    assert!(env.messages(&old).await.is_empty());
    env.shutdown().await;
}

async fn concurrent_starts_of_one_process_id_start_one_execution(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let worker = serve(&mut env, &ParkProcess).await;
    let starts = (0..8).map(|_| {
        let client = env.client.clone();
        let worker = worker.clone();
        tokio::spawn(async move {
            let definition = xdb_sdk::ProcessDefinition::new(ParkProcess);
            client
                .start_process_with(
                    &definition,
                    "contended",
                    Some(&worker),
                    (),
                    Default::default(),
                )
                .await
        })
    });
    let results: Vec<_> = futures::future::join_all(starts)
        .await
        .into_iter()
        .map(|r| r.expect("task"))
        .collect();
    let started: Vec<&String> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(started.len(), 1, "exactly one start wins: {results:?}");
    for result in &results {
        if let Err(error) = result {
            assert_eq!(error.status(), Some(409), "{error}");
            assert_eq!(error.sub_type(), Some(ErrorSubType::ProcessAlreadyStarted));
        }
    }
    let rows = env.process_rows_of("contended").await;
    assert_eq!(rows.len(), 1);
    assert_eq!(&rows[0].id.to_string(), started[0]);
    assert_eq!(
        env.latest_execution("contended").await.as_ref(),
        Some(started[0])
    );
    assert_eq!(env.state_rows(started[0]).await.len(), 1);
    eventually(
        "the one execution to wait for its message",
        SOON,
        || async {
            env.state_row(started[0], "ParkState", 1)
                .await
                .is_some_and(|s| s.status == "WAITING_COMMANDS")
        },
    )
    .await;
    env.shutdown().await;
}

/// A stop that races with the async service's work on the same execution (here: right
/// after the start, while waitUntil runs) must still succeed, forty times in a row.
///
/// Stop and the async service's transitions both lock the process row before its task
/// rows (the lock order stated in `xdb-persistence`'s `tables.rs`), so neither can
/// deadlock the other; the other way round, PostgreSQL reported deadlocks and one side
/// got a 500.
async fn stop_racing_with_state_transitions_succeeds(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let worker = serve(&mut env, &ParkProcess).await;
    let mut failures = Vec::new();
    for i in 0..40 {
        let pid = format!("race-{i}");
        let exec = start_park(&env, &worker, &pid, ProcessIdReusePolicy::AllowIfNoRunning)
            .await
            .unwrap();
        if let Err(error) = env
            .client
            .stop_process(&pid, ProcessExecutionStopType::Fail, None)
            .await
        {
            failures.push(format!("{pid}: {error}"));
            continue;
        }
        let row = env.process_row(&exec).await.unwrap();
        assert_eq!(row.status, "FAILED");
    }
    assert!(failures.is_empty(), "stops failed: {failures:#?}");
    env.shutdown().await;
}

both_databases!(
    durable_timer_never_fires_early,
    local_queue_all_of_waits_for_every_command_and_its_count,
    local_queue_any_of_goes_on_with_the_first_complete_command,
    retry_policy_retries_with_attempt_numbers_and_one_idempotency_key,
    a_failed_execute_after_a_timer_is_retried_by_policy,
    exhausted_retries_fail_the_process_with_the_reason,
    failure_recovery_proceeds_to_the_configured_state,
    failure_recovery_after_a_timer_proceeds_to_the_configured_state,
    process_timeout_closes_the_execution_as_timeout,
    id_reuse_policies,
    concurrent_starts_of_one_process_id_start_one_execution,
    stop_racing_with_state_transitions_succeeds,
);

pulsar_mode_too!(
    durable_timer_never_fires_early,
    local_queue_all_of_waits_for_every_command_and_its_count,
    local_queue_any_of_goes_on_with_the_first_complete_command,
    retry_policy_retries_with_attempt_numbers_and_one_idempotency_key,
    a_failed_execute_after_a_timer_is_retried_by_policy,
    exhausted_retries_fail_the_process_with_the_reason,
    failure_recovery_proceeds_to_the_configured_state,
    failure_recovery_after_a_timer_proceeds_to_the_configured_state,
    process_timeout_closes_the_execution_as_timeout,
);
