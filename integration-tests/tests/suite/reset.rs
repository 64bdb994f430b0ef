//! Reset on real services and databases: a running execution restarted from a named
//! state (its wait cancelled), a closed one continued by a new execution linked to it,
//! a reset racing the answer of the current state, and bad requests that write nothing.

use std::time::Duration;

use serde_json::{json, Value};
use xdb_integration_tests::processes::flaky::{FlakyConfig, FlakyProcess};
use xdb_integration_tests::worker_faults::{CallMatch, StateApiKind, WorkerFaults};
use xdb_integration_tests::{eventually, Database, XdbTestEnv};
use xdb_protocol::{paths, ProcessExecutionResetRequest};
use xdb_sdk::protocol::ProcessStatus;
use xdb_sdk::{ProcessStartOptions, WorkerService};

use crate::common::*;

/// A process whose first state waits on a timer of `timer` (with `after_timer`), then
/// an execute that completes at once; `RecoveryState` writes `note = "recovered"`.
fn process(after_timer: Option<Duration>) -> FlakyProcess {
    FlakyProcess::new(FlakyConfig {
        failing_attempts: 0,
        maximum_attempts: 3,
        initial_interval: Duration::from_millis(100),
        recover: false,
        after_timer,
    })
}

/// A reset to `state_id` (the type is not registered: the request says that the state
/// has no waitUntil, as a start would).
fn reset_body(process_id: &str, state_id: &str) -> Value {
    json!({
        "processId": process_id,
        "stateId": state_id,
        "stateInput": encoded(json!({ "from": "reset" })),
        "stateConfig": { "skipWaitUntil": true },
        "reason": "bad deploy",
        "identity": "ops@test",
    })
}

/// A running execution waiting on a 300 s timer is reset to another state: the wait is
/// aborted and its timer deleted, the state runs once with the input, the business row
/// is as it wrote it, and the history records the reset.
async fn a_running_execution_waiting_on_a_timer_is_reset_to_a_state(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let process = process(Some(Duration::from_secs(300)));
    let router = WorkerService::new().register(process.clone()).router();
    let worker = env.start_worker(router).await;
    let exec = start(
        &env,
        &process,
        &worker,
        "waiting",
        ProcessStartOptions::new().global_attribute_pk_value("w1"),
    )
    .await
    .unwrap();
    wait_state(&env, &exec, "TimedFlakyState", 1, "WAITING_COMMANDS").await;

    let (status, body) = call(&env, paths::RESET, reset_body("waiting", "RecoveryState")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["processExecutionId"], exec.as_str(), "{body}");
    assert_eq!(body["newExecution"], false, "{body}");
    assert_eq!(body["stateExecutionId"], "RecoveryState-1", "{body}");

    let done = env
        .client
        .wait_for_process_completion("waiting", SOON)
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");
    assert_eq!(done.process_execution_id, exec);
    assert_eq!(process.recoveries.all(), [json!({ "from": "reset" })]);
    assert_eq!(process.attempts.len(), 0, "the timer's execute never ran");
    assert_eq!(
        env.entity_row("w1").await.unwrap().note.as_deref(),
        Some("recovered")
    );
    let timed = env.state_row(&exec, "TimedFlakyState", 1).await.unwrap();
    assert_eq!(timed.status, "ABORTED");
    let history = env.history(&exec).await;
    let types: Vec<&str> = history.iter().map(|e| e.event_type.as_str()).collect();
    assert!(!types.contains(&"TIMER_FIRED"), "{types:?}");
    let reset = history
        .iter()
        .find(|e| e.event_type == "PROCESS_RESET")
        .expect("the reset is in the history");
    assert_eq!(reset.details["stateExecutionId"], "RecoveryState-1");
    assert_eq!(
        reset.details["closedStateExecutionIds"],
        json!(["TimedFlakyState-1"])
    );
    assert_eq!(reset.details["reason"], "bad deploy");
    assert_eq!(reset.details["identity"], "ops@test");
    assert_eq!(
        types.iter().filter(|t| **t == "EXECUTE_COMPLETED").count(),
        1,
        "{types:?}"
    );
    let tasks = "SELECT count(*) FROM xdb_sys_tasks WHERE process_execution_id = $1";
    let id = xdb_integration_tests::Arg::Uuid(exec.parse().unwrap());
    assert_eq!(env.count(tasks, &[id]).await, 0, "the timer task is gone");
    env.shutdown().await;
}

/// A completed execution is reset: a new execution of the same process id starts at the
/// state, linked to the old one, and completes; the latest execution is the new one,
/// the old history is left as it was. Bad requests before it change nothing.
async fn a_closed_execution_is_reopened_as_a_new_linked_execution(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let process = process(None);
    let router = WorkerService::new().register(process.clone()).router();
    let worker = env.start_worker(router).await;
    let old = start(
        &env,
        &process,
        &worker,
        "done",
        ProcessStartOptions::new().global_attribute_pk_value("d1"),
    )
    .await
    .unwrap();
    let first = env
        .client
        .wait_for_process_completion("done", SOON)
        .await
        .unwrap();
    assert_eq!(first.status, ProcessStatus::Completed);
    assert_eq!(
        env.entity_row("d1").await.unwrap().note.as_deref(),
        Some("flaky done")
    );
    let old_history = env.history_types(&old).await;

    // Bad input: nothing is written.
    let (status, body) = call(&env, paths::RESET, reset_body("nobody", "RecoveryState")).await;
    assert_eq!(
        (status, &body["subType"]),
        (404, &json!("PROCESS_NOT_FOUND")),
        "{body}"
    );
    for body in [reset_body("done", ""), json!({ "processId": "done" })] {
        let (status, answer) = call(&env, paths::RESET, body.clone()).await;
        assert_eq!(
            (status, &answer["subType"]),
            (400, &json!("INVALID_REQUEST")),
            "{body}: {answer}"
        );
    }
    let (_, described) = call(&env, paths::DESCRIBE, json!({ "processId": "done" })).await;
    assert_eq!(described["processExecutionId"], old.as_str(), "{described}");

    let (status, body) = call(&env, paths::RESET, reset_body("done", "RecoveryState")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["newExecution"], true, "{body}");
    assert_eq!(body["stateExecutionId"], "RecoveryState-1", "{body}");
    let new = body["processExecutionId"].as_str().unwrap().to_string();
    assert_ne!(new, old);

    let done = env
        .client
        .wait_for_process_completion("done", SOON)
        .await
        .unwrap();
    assert_eq!(done.process_execution_id, new);
    assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");
    assert_eq!(process.recoveries.all(), [json!({ "from": "reset" })]);
    assert_eq!(
        process.attempts.len(),
        1,
        "the old execution's state ran once"
    );
    assert_eq!(
        env.entity_row("d1").await.unwrap().note.as_deref(),
        Some("recovered")
    );
    let history = env.history(&new).await;
    assert_eq!(history[0].event_type, "PROCESS_STARTED");
    assert_eq!(history[0].details["resetFrom"], old.as_str());
    assert_eq!(history[1].event_type, "PROCESS_RESET");
    assert_eq!(history[1].details["resetFrom"], old.as_str());
    assert_eq!(
        env.history_types(&old).await,
        old_history,
        "old history kept"
    );
    let (_, described) = call(&env, paths::DESCRIBE, json!({ "processId": "done" })).await;
    assert_eq!(described["processExecutionId"], new.as_str(), "{described}");
    let (_, listed) = call(
        &env,
        paths::LIST,
        json!({ "filter": { "processId": "done" } }),
    )
    .await;
    assert_eq!(
        listed["executions"].as_array().unwrap().len(),
        2,
        "{listed}"
    );
    env.shutdown().await;
}

/// A reset while the current state's answer is held by the worker: the reset wins, the
/// held answer applies nothing (its task is gone, its state aborted), the reset-to state
/// runs once.
async fn a_reset_racing_the_current_states_answer_applies_once(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let process = process(None);
    let faults = WorkerFaults::new();
    faults.hold(CallMatch::state("FlakyState", StateApiKind::Execute));
    let router = faults.wrap(WorkerService::new().register(process.clone()).router());
    let worker = env.start_worker(router).await;
    let exec = start(
        &env,
        &process,
        &worker,
        "racing",
        ProcessStartOptions::new().global_attribute_pk_value("r1"),
    )
    .await
    .unwrap();
    eventually("the execute's answer to be held", SOON, || async {
        faults.held() == 1
    })
    .await;
    // Through the Rust SDK's client this time.
    let request: ProcessExecutionResetRequest =
        serde_json::from_value(reset_body("racing", "RecoveryState")).unwrap();
    let answer = env.client.reset(&request).await.unwrap();
    assert_eq!(answer.process_execution_id, exec);
    assert!(!answer.new_execution);
    faults.release();
    let done = env
        .client
        .wait_for_process_completion("racing", SOON)
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");
    assert_eq!(process.recoveries.len(), 1);
    let flaky = env.state_row(&exec, "FlakyState", 1).await.unwrap();
    assert_eq!(flaky.status, "ABORTED");
    let history = env.history(&exec).await;
    let completed: Vec<&Value> = history
        .iter()
        .filter(|e| e.event_type == "EXECUTE_COMPLETED")
        .map(|e| &e.details["stateExecutionId"])
        .collect();
    assert_eq!(completed, [&json!("RecoveryState-1")], "{history:?}");
    assert_eq!(
        env.entity_row("r1").await.unwrap().note.as_deref(),
        Some("recovered"),
        "the held answer's write was not applied"
    );
    env.shutdown().await;
}

both_databases!(
    a_running_execution_waiting_on_a_timer_is_reset_to_a_state,
    a_closed_execution_is_reopened_as_a_new_linked_execution,
    a_reset_racing_the_current_states_answer_applies_once,
);

pulsar_mode_too!(
    a_running_execution_waiting_on_a_timer_is_reset_to_a_state,
    a_reset_racing_the_current_states_answer_applies_once,
);
