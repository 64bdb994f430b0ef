//! Worker answers that can never succeed (a non-retryable `errorType`) park the state's
//! call after one attempt, with the reason in `states`, describe and the history;
//! retry-now runs it again once the worker is fixed, give-up applies the failure
//! recovery. A retryable answer (500) still spends the retry policy.

use std::time::Duration;

use serde_json::json;
use xdb_integration_tests::processes::flaky::{FlakyConfig, FlakyProcess};
use xdb_integration_tests::worker_faults::{CallMatch, StateApiKind, WorkerFaults};
use xdb_integration_tests::{eventually, Database, XdbTestEnv};
use xdb_protocol::paths;
use xdb_sdk::protocol::ProcessStatus;
use xdb_sdk::{ProcessStartOptions, WorkerService};

use crate::common::*;

/// Retries forever, 100 ms apart: only the classification can stop them. With
/// `with_wait_until`, the state has a waitUntil (a short timer) before its execute.
fn process(with_wait_until: bool) -> FlakyProcess {
    FlakyProcess::new(FlakyConfig {
        failing_attempts: 0,
        maximum_attempts: 0,
        initial_interval: Duration::from_millis(100),
        recover: false,
        after_timer: with_wait_until.then_some(Duration::from_secs(0)),
    })
}

fn state_id(with_wait_until: bool) -> &'static str {
    if with_wait_until {
        "TimedFlakyState"
    } else {
        "FlakyState"
    }
}

/// The calls the worker saw for `process_id`'s `api`.
fn calls(faults: &WorkerFaults, process_id: &str, api: StateApiKind) -> usize {
    faults
        .calls()
        .iter()
        .filter(|c| c.process_id == process_id && c.api == api)
        .count()
}

/// Each non-retryable answer parks the call after exactly one attempt, visibly; fixed,
/// retry-now completes the process once.
async fn each_non_retryable_answer_parks_after_one_attempt_until_retry_now(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let flaky = process(false);
    let timed = process(true);
    let faults = WorkerFaults::new();
    let worker = env
        .start_worker(faults.wrap(WorkerService::new().register(flaky.clone()).router()))
        .await;
    let timed_faults = WorkerFaults::new();
    let timed_worker = env
        .start_worker(timed_faults.wrap(WorkerService::new().register(timed.clone()).router()))
        .await;
    let cases = [
        ("UNKNOWN_PROCESS_TYPE", StateApiKind::WaitUntil),
        ("UNKNOWN_STATE", StateApiKind::Execute),
        ("UNDECODABLE_INPUT", StateApiKind::Execute),
        ("NOT_IMPLEMENTED", StateApiKind::WaitUntil),
        ("UNKNOWN_RPC", StateApiKind::Execute),
    ];
    for (n, (error_type, api)) in cases.into_iter().enumerate() {
        let with_wait_until = api == StateApiKind::WaitUntil;
        let (faults, worker, recorded) = if with_wait_until {
            (&timed_faults, &timed_worker, &timed)
        } else {
            (&faults, &worker, &flaky)
        };
        let state = state_id(with_wait_until);
        let id = format!("never-{n}");
        faults.refuse(
            CallMatch::state(state, api).in_process(&id),
            400,
            error_type,
        );
        let exec = start(
            &env,
            recorded,
            worker,
            &id,
            ProcessStartOptions::new().global_attribute_pk_value(&id),
        )
        .await
        .unwrap();
        eventually("the call to be parked", SOON, || async {
            states(&env, &id).await["states"][0]["pendingCall"]["phase"] == "PARKED"
        })
        .await;
        // Parked in the transaction that recorded the failure: no other attempt can run.
        assert_eq!(calls(faults, &id, api), 1, "{error_type}: one attempt");
        let view = states(&env, &id).await;
        let pending = &view["states"][0]["pendingCall"];
        assert_eq!(
            pending["parkedKind"], "NON_RETRYABLE_WORKER_ERROR",
            "{view}"
        );
        assert_eq!(
            pending["attempt"], 2,
            "released, it is the next attempt: {view}"
        );
        let reason = pending["parkedReason"].as_str().unwrap_or_default();
        assert!(
            reason.starts_with(&format!("{error_type}: injected")),
            "{view}"
        );
        let failure = &view["states"][0]["lastFailure"];
        assert_eq!(failure["attempt"], 1, "{view}");
        let (_, described) = call(&env, paths::DESCRIBE, json!({ "processId": id })).await;
        assert_eq!(described["parkedTasks"], 1, "{described}");
        let history = env.history(&exec).await;
        let failed: Vec<_> = history
            .iter()
            .filter(|e| e.event_type == "STATE_API_FAILED")
            .collect();
        assert_eq!(failed.len(), 1, "{error_type}");
        assert_eq!(failed[0].details["nonRetryableErrorType"], error_type);
        let parked = history
            .iter()
            .find(|e| e.event_type == "TASK_PARKED")
            .expect("the parking is in the history");
        assert_eq!(parked.details["reason"], "NON_RETRYABLE_WORKER_ERROR");
        assert_eq!(parked.details["workerErrorType"], error_type);
        assert_eq!(parked.details["stateExecutionId"], format!("{state}-1"));

        // A deploy fixes the worker; the operator runs the call again.
        faults.stop_failing();
        let (status, body) = call(&env, paths::RETRY_NOW, json!({ "processId": id })).await;
        assert_eq!(
            (status, &body["stateExecutionIds"]),
            (200, &json!([format!("{state}-1")])),
            "{error_type}"
        );
        let done = env
            .client
            .wait_for_process_completion(&id, SOON)
            .await
            .unwrap();
        assert_eq!(
            done.status,
            ProcessStatus::Completed,
            "{error_type}: {done:?}"
        );
        assert_eq!(calls(faults, &id, api), 2, "{error_type}: the retry, once");
        let executes = recorded
            .attempts
            .all()
            .iter()
            .filter(|a| a.process_id == id)
            .count();
        assert_eq!(executes, 1, "{error_type}: the state completed once");
        let (_, described) = call(&env, paths::DESCRIBE, json!({ "processId": id })).await;
        assert_eq!(described["parkedTasks"], 0, "{described}");
    }
    env.shutdown().await;
}

/// give-up on a parked call applies the state's failure recovery (here: the process
/// fails) without calling the worker again.
async fn give_up_on_a_non_retryable_answer_applies_the_failure_recovery(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let flaky = process(false);
    let faults = WorkerFaults::new();
    let worker = env
        .start_worker(faults.wrap(WorkerService::new().register(flaky.clone()).router()))
        .await;
    faults.refuse(
        CallMatch::state("FlakyState", StateApiKind::Execute),
        400,
        "UNKNOWN_STATE",
    );
    start(
        &env,
        &flaky,
        &worker,
        "doomed",
        ProcessStartOptions::new().global_attribute_pk_value("d1"),
    )
    .await
    .unwrap();
    eventually("the call to be parked", SOON, || async {
        states(&env, "doomed").await["states"][0]["pendingCall"]["phase"] == "PARKED"
    })
    .await;
    let (status, body) = call(
        &env,
        paths::GIVE_UP,
        json!({ "processId": "doomed", "reason": "no such state in this deployment" }),
    )
    .await;
    assert_eq!(
        (status, &body["stateExecutionIds"]),
        (200, &json!(["FlakyState-1"]))
    );
    let done = env
        .client
        .wait_for_process_completion("doomed", SOON)
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Failed, "{done:?}");
    assert_eq!(calls(&faults, "doomed", StateApiKind::Execute), 1);
    env.shutdown().await;
}

/// A 500 and a 400 `INVALID_REQUEST` are failed attempts under the policy: retried, never
/// parked, until the worker recovers; meanwhile a 400 `UNDECODABLE_INPUT` of the same
/// worker is parked after its one attempt.
async fn only_non_retryable_types_park_and_other_answers_retry(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let flaky = process(false);
    let faults = WorkerFaults::new();
    let worker = env
        .start_worker(faults.wrap(WorkerService::new().register(flaky.clone()).router()))
        .await;
    let cases = [
        ("retried-500", 500, "USER_CODE_ERROR"),
        ("retried-400", 400, "INVALID_REQUEST"),
        ("parked-400", 400, "UNDECODABLE_INPUT"),
    ];
    for (id, status, error_type) in cases {
        faults.refuse(
            CallMatch::state("FlakyState", StateApiKind::Execute).in_process(id),
            status,
            error_type,
        );
        start(
            &env,
            &flaky,
            &worker,
            id,
            ProcessStartOptions::new().global_attribute_pk_value(id),
        )
        .await
        .unwrap();
    }
    eventually("three attempts of each retried call", SOON, || async {
        calls(&faults, "retried-500", StateApiKind::Execute) >= 3
            && calls(&faults, "retried-400", StateApiKind::Execute) >= 3
    })
    .await;
    for id in ["retried-500", "retried-400"] {
        let view = states(&env, id).await;
        assert_ne!(
            view["states"][0]["pendingCall"]["phase"], "PARKED",
            "{view}"
        );
        let (_, described) = call(&env, paths::DESCRIBE, json!({ "processId": id })).await;
        assert_eq!(described["parkedTasks"], 0, "{described}");
    }
    eventually("the undecodable input to be parked", SOON, || async {
        states(&env, "parked-400").await["states"][0]["pendingCall"]["phase"] == "PARKED"
    })
    .await;
    assert_eq!(calls(&faults, "parked-400", StateApiKind::Execute), 1);

    faults.stop_failing();
    for id in ["retried-500", "retried-400"] {
        let done = env
            .client
            .wait_for_process_completion(id, SOON)
            .await
            .unwrap();
        assert_eq!(done.status, ProcessStatus::Completed, "{id}: {done:?}");
    }
    // Fixed, it still waits for an operator.
    let view = states(&env, "parked-400").await;
    assert_eq!(
        view["states"][0]["pendingCall"]["phase"], "PARKED",
        "{view}"
    );
    assert_eq!(calls(&faults, "parked-400", StateApiKind::Execute), 1);
    env.shutdown().await;
}

both_databases!(
    each_non_retryable_answer_parks_after_one_attempt_until_retry_now,
    give_up_on_a_non_retryable_answer_applies_the_failure_recovery,
    only_non_retryable_types_park_and_other_answers_retry,
);

pulsar_mode_too!(
    each_non_retryable_answer_parks_after_one_attempt_until_retry_now,
    give_up_on_a_non_retryable_answer_applies_the_failure_recovery,
);
