//! Operators' controls at the edges of what they act on: a close by an execution's own
//! transition takes the tasks parked on its other threads with it, and a timer whose
//! firing's execute keeps failing is retried now and given up like any state call.

use std::time::Duration;

use serde_json::{json, Value};
use xdb_integration_tests::processes::flaky::{FlakyConfig, FlakyProcess};
use xdb_integration_tests::processes::threads::{Ending, ThreadsProcess, QUEUE_FINISH};
use xdb_integration_tests::worker_faults::{CallMatch, StateApiKind, WorkerFaults};
use xdb_integration_tests::{eventually, Arg, Database, XdbTestEnv};
use xdb_protocol::paths;
use xdb_sdk::protocol::ProcessStatus;
use xdb_sdk::{ProcessStartOptions, WorkerService};

use crate::common::*;

/// The executions of `process_id` the list shows as having a parked task.
async fn listed_as_parked(env: &XdbTestEnv, process_id: &str) -> usize {
    let filter = json!({"where": {"and": [
        {"field": "processId", "op": "=", "value": process_id},
        {"field": "parked", "op": "=", "value": true},
    ]}});
    let (status, listed) = call(env, paths::LIST, filter).await;
    assert_eq!(status, 200, "{listed}");
    listed["executions"].as_array().map_or(0, Vec::len)
}

const PARKED_ROWS: &str =
    "SELECT count(*) FROM xdb_sys_parked_tasks WHERE process_execution_id = $1";

/// Thread `Hold`'s call is parked (a non-retryable answer); thread `Finish` then
/// force-completes the process: the close takes the parked task with it, in the system
/// table and in the list's `parked` situation.
async fn a_close_by_another_thread_removes_the_parked_tasks(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let process = ThreadsProcess {
        ending: Ending::ForceComplete,
        repeats: 1,
    };
    let faults = WorkerFaults::new();
    let router = faults.wrap(WorkerService::new().register(process.clone()).router());
    let worker = env.start_worker(router).await;
    faults.refuse(
        CallMatch::state("Hold", StateApiKind::WaitUntil),
        400,
        "UNKNOWN_STATE",
    );
    let exec = start(
        &env,
        &process,
        &worker,
        "forked",
        ProcessStartOptions::new(),
    )
    .await
    .unwrap();
    let hold_parked = |view: &Value| {
        view["states"].as_array().is_some_and(|states| {
            states
                .iter()
                .any(|s| s["stateExecutionId"] == "Hold-1" && s["pendingCall"]["phase"] == "PARKED")
        })
    };
    eventually("Hold's call to be parked", SOON, || async {
        hold_parked(&states(&env, "forked").await)
    })
    .await;
    let id = || Arg::Uuid(exec.parse().unwrap());
    assert_eq!(env.count(PARKED_ROWS, &[id()]).await, 1);
    assert_eq!(listed_as_parked(&env, "forked").await, 1);

    env.client
        .publish_to_local_queue("forked", QUEUE_FINISH, (), None)
        .await
        .unwrap();
    let done = env
        .client
        .wait_for_process_completion("forked", SOON)
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");
    assert_eq!(
        env.count(PARKED_ROWS, &[id()]).await,
        0,
        "the close left the parked task behind"
    );
    assert_eq!(listed_as_parked(&env, "forked").await, 0);
    let tasks = "SELECT count(*) FROM xdb_sys_tasks WHERE process_execution_id = $1";
    assert_eq!(env.count(tasks, &[id()]).await, 0);
    env.shutdown().await;
}

/// A state behind a timer whose execute keeps failing, 300 s between attempts: the
/// timer task stands for the execute. retry-now runs the next attempt at once; give-up
/// applies the state's failure recovery (here: the recovery state completes the
/// process), recorded as GIVE_UP_REQUESTED.
async fn a_timer_standing_for_a_failing_execute_is_retried_now_and_given_up(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let process = FlakyProcess::new(FlakyConfig {
        failing_attempts: u32::MAX,
        maximum_attempts: 1000,
        initial_interval: Duration::from_secs(300),
        recover: true,
        after_timer: Some(Duration::ZERO),
    });
    let router = WorkerService::new().register(process.clone()).router();
    let worker = env.start_worker(router).await;
    let exec = start(
        &env,
        &process,
        &worker,
        "timed",
        ProcessStartOptions::new().global_attribute_pk_value("t1"),
    )
    .await
    .unwrap();
    let id = || Arg::Uuid(exec.parse().unwrap());
    // The timer task, waiting (unleased) to run `attempt` of the execute.
    let backing_off = |attempt: u32| {
        format!(
            "SELECT count(*) FROM xdb_sys_tasks WHERE process_execution_id = $1 \
             AND task_type = 'TIMER' AND attempt = {attempt} AND lease_owner IS NULL"
        )
    };
    eventually("the timer's execute to fail once", SOON, || async {
        env.count(&backing_off(2), &[id()]).await == 1
    })
    .await;
    assert_eq!(process.attempts.len(), 1);

    let (status, body) = call(&env, paths::RETRY_NOW, json!({ "processId": "timed" })).await;
    assert_eq!(
        (status, &body["stateExecutionIds"]),
        (200, &json!(["TimedFlakyState-1"])),
        "{body}"
    );
    eventually("the retry to run at once and fail", SOON, || async {
        env.count(&backing_off(3), &[id()]).await == 1
    })
    .await;
    assert_eq!(process.attempts.len(), 2);

    let (status, body) = call(
        &env,
        paths::GIVE_UP,
        json!({ "processId": "timed", "reason": "bad input", "identity": "ops@test" }),
    )
    .await;
    assert_eq!(
        (status, &body["stateExecutionIds"]),
        (200, &json!(["TimedFlakyState-1"])),
        "{body}"
    );
    let done = env
        .client
        .wait_for_process_completion("timed", SOON)
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");
    assert_eq!(process.recoveries.len(), 1, "the recovery state ran once");
    assert_eq!(process.attempts.len(), 2, "no attempt after giving up");
    assert_eq!(
        env.entity_row("t1").await.unwrap().note.as_deref(),
        Some("recovered")
    );
    let history = env.history(&exec).await;
    let types: Vec<&str> = history.iter().map(|e| e.event_type.as_str()).collect();
    let give_up = types
        .iter()
        .position(|t| *t == "GIVE_UP_REQUESTED")
        .unwrap_or_else(|| panic!("give-up is in the history: {types:?}"));
    assert_eq!(types[give_up + 1], "STATE_FAILED", "{types:?}");
    assert_eq!(history[give_up].details["identity"], "ops@test");
    assert_eq!(history[give_up + 1].details["api"], "execute");
    env.shutdown().await;
}

both_databases!(
    a_close_by_another_thread_removes_the_parked_tasks,
    a_timer_standing_for_a_failing_execute_is_retried_now_and_given_up,
);
