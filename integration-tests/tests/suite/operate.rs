//! The operator's calls on real services and databases: the states view, retry-now,
//! give-up, pause and resume, and tasks parked after the database refused them.

use std::time::Duration;

use serde_json::json;
use xdb_integration_tests::processes::flaky::{FlakyConfig, FlakyProcess};
use xdb_integration_tests::sql::SqlSession;
use xdb_integration_tests::worker_faults::{CallMatch, StateApiKind, WorkerFaults};
use xdb_integration_tests::{eventually, Database, EnvOptions, XdbTestEnv};
use xdb_protocol::{paths, HistoryEventType, ProcessExecutionHistoryRequest};
use xdb_sdk::protocol::ProcessStatus;
use xdb_sdk::{ProcessStartOptions, WorkerService};

use crate::common::*;

fn flaky(failing_attempts: u32, initial_interval: Duration) -> FlakyProcess {
    FlakyProcess::new(FlakyConfig {
        failing_attempts,
        maximum_attempts: 1000,
        initial_interval,
        recover: false,
        after_timer: None,
    })
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// A state whose attempts keep failing: `states` shows its next attempt and last failure,
/// retry-now runs the retry at once (attempt count kept), give-up fails the process.
async fn a_failing_state_is_shown_retried_now_and_given_up(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let process = flaky(1000, Duration::from_secs(300));
    let router = WorkerService::new().register(process.clone()).router();
    let worker = env.start_worker(router).await;
    let exec = start(
        &env,
        &process,
        &worker,
        "stuck",
        ProcessStartOptions::new().global_attribute_pk_value("s1"),
    )
    .await
    .unwrap();
    eventually("the first attempt to fail", SOON, || async {
        states(&env, "stuck").await["states"][0]["lastFailure"].is_object()
    })
    .await;
    let view = states(&env, "stuck").await;
    assert_eq!(view["processExecutionId"], exec.as_str());
    let state = &view["states"][0];
    assert_eq!(state["stateExecutionId"], "FlakyState-1", "{view}");
    assert_eq!(state["status"], "EXECUTE_RUNNING", "{view}");
    assert_eq!(state["lastFailure"]["attempt"], 1, "{view}");
    assert_eq!(state["lastFailure"]["api"], "execute", "{view}");
    assert!(!state["lastFailure"]["error"].as_str().unwrap().is_empty());
    let call_view = &state["pendingCall"];
    assert_eq!(call_view["attempt"], 2, "{view}");
    // The list shows it backing off, with the next attempt and the last error.
    let (status, listed) = call(
        &env,
        paths::LIST,
        json!({"where": {"field": "processId", "op": "=", "value": "stuck"}}),
    )
    .await;
    assert_eq!(status, 200, "{listed}");
    let backing_off = &listed["executions"][0]["backingOff"];
    assert_eq!(backing_off["stateExecutionId"], "FlakyState-1", "{listed}");
    assert_eq!(backing_off["attempt"], 2, "{listed}");
    assert_eq!(
        backing_off["lastError"], state["lastFailure"]["error"],
        "{listed}"
    );
    assert!(backing_off["nextAttemptTimestampMs"].as_i64().unwrap() > now_ms() + 200_000);
    assert_eq!(call_view["phase"], "SCHEDULED", "{view}");
    assert!(
        call_view["dueTimestampMs"].as_i64().unwrap() > now_ms() + 200_000,
        "the retry waits for its 300 s backoff: {view}"
    );

    let (status, body) = call(
        &env,
        paths::RETRY_NOW,
        json!({ "processId": "stuck", "reason": "fixed the bug", "identity": "ops@test" }),
    )
    .await;
    assert_eq!(
        (status, &body["stateExecutionIds"]),
        (200, &json!(["FlakyState-1"]))
    );
    eventually("the retry to run at once", SOON, || async {
        process.attempts.len() >= 2
    })
    .await;
    assert_eq!(
        process.attempts.all()[1].attempt,
        2,
        "the attempt count is kept"
    );

    eventually("the second attempt to fail", SOON, || async {
        let view = states(&env, "stuck").await;
        view["states"][0]["lastFailure"]["attempt"] == 2
            && view["states"][0]["pendingCall"]["phase"] == "SCHEDULED"
    })
    .await;
    let (status, body) = call(
        &env,
        paths::GIVE_UP,
        json!({ "processId": "stuck", "stateExecutionId": "FlakyState-1", "reason": "bad input" }),
    )
    .await;
    assert_eq!(
        (status, &body["stateExecutionIds"]),
        (200, &json!(["FlakyState-1"]))
    );
    let done = env
        .client
        .wait_for_process_completion("stuck", SOON)
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Failed, "{done:?}");
    assert_eq!(process.attempts.len(), 2, "no attempt after giving up");

    let history = env.history(&exec).await;
    let retry = history
        .iter()
        .find(|e| e.event_type == "RETRY_REQUESTED")
        .expect("retry-now is in the history");
    assert_eq!(retry.details["identity"], "ops@test");
    assert_eq!(retry.details["reason"], "fixed the bug");
    let types: Vec<&str> = history.iter().map(|e| e.event_type.as_str()).collect();
    let give_up = types
        .iter()
        .position(|t| *t == "GIVE_UP_REQUESTED")
        .unwrap();
    assert_eq!(types[give_up + 1], "STATE_FAILED", "{types:?}");

    // Nothing applies to a closed execution.
    let (status, body) = call(&env, paths::RETRY_NOW, json!({ "processId": "stuck" })).await;
    assert_eq!(
        (status, &body["subType"]),
        (409, &json!("PROCESS_NOT_RUNNING"))
    );
    env.shutdown().await;
}

/// While paused nothing of the execution is called, even past its retry's due time; it is
/// visible in describe, list and states; resumed, it runs what fell due.
async fn a_paused_execution_runs_nothing_until_it_resumes(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let backoff = Duration::from_secs(3);
    let process = flaky(1, backoff);
    let router = WorkerService::new().register(process.clone()).router();
    let worker = env.start_worker(router).await;
    start(
        &env,
        &process,
        &worker,
        "held",
        ProcessStartOptions::new().global_attribute_pk_value("h1"),
    )
    .await
    .unwrap();
    let (status, body) = call(&env, paths::RESUME, json!({ "processId": "held" })).await;
    assert_eq!(
        (status, &body["subType"]),
        (409, &json!("CONTROL_NOT_APPLICABLE"))
    );
    eventually("the first attempt to fail", SOON, || async {
        states(&env, "held").await["states"][0]["lastFailure"].is_object()
    })
    .await;

    let (status, body) = call(
        &env,
        paths::PAUSE,
        json!({ "processId": "held", "reason": "maintenance", "identity": "ops@test" }),
    )
    .await;
    assert_eq!(
        (status, &body["stateExecutionIds"]),
        (200, &json!(["FlakyState-1"]))
    );
    let paused_at = std::time::Instant::now();
    for (path, sub_type) in [
        (paths::PAUSE, "CONTROL_NOT_APPLICABLE"),
        (paths::RETRY_NOW, "CONTROL_NOT_APPLICABLE"),
    ] {
        let (status, body) = call(&env, path, json!({ "processId": "held" })).await;
        assert_eq!(
            (status, &body["subType"]),
            (409, &json!(sub_type)),
            "{path}"
        );
    }
    let (status, body) = call(
        &env,
        paths::PAUSE,
        json!({ "processId": "held", "stateExecutionId": "FlakyState-1" }),
    )
    .await;
    assert_eq!((status, &body["subType"]), (400, &json!("INVALID_REQUEST")));

    let (_, described) = call(&env, paths::DESCRIBE, json!({ "processId": "held" })).await;
    assert_eq!(described["paused"]["reason"], "maintenance", "{described}");
    let (_, listed) = call(
        &env,
        paths::LIST,
        json!({ "filter": { "processId": "held" } }),
    )
    .await;
    assert_eq!(listed["executions"][0]["paused"], true, "{listed}");
    let view = states(&env, "held").await;
    assert_eq!(view["paused"]["identity"], "ops@test", "{view}");
    assert_eq!(
        view["states"][0]["pendingCall"]["phase"], "PAUSED",
        "{view}"
    );

    // Past the retry's due time (and a second more), still nothing is called.
    while paused_at.elapsed() < backoff + Duration::from_secs(1) {
        assert_eq!(process.attempts.len(), 1, "a paused execution was called");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, body) = call(&env, paths::RESUME, json!({ "processId": "held" })).await;
    assert_eq!(
        (status, &body["stateExecutionIds"]),
        (200, &json!(["FlakyState-1"]))
    );
    let done = env
        .client
        .wait_for_process_completion("held", SOON)
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");
    assert_eq!(process.attempts.len(), 2);
    env.shutdown().await;
}

/// A transition the database refuses for now every time (as a deadlock each time) is
/// parked with the reason after `async.park_after_refusals` refusals instead of
/// looping; fixed, retry-now runs it.
async fn a_task_the_database_keeps_refusing_is_parked_until_retry_now(db: Database) {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            park_after_refusals: 3,
            ..Default::default()
        },
    )
    .await;
    refuse_state_completion(&env, None, Refusal::ForNow).await;
    let process = flaky(0, Duration::from_millis(100));
    let router = WorkerService::new().register(process.clone()).router();
    let worker = env.start_worker(router).await;
    let exec = start(
        &env,
        &process,
        &worker,
        "refused",
        ProcessStartOptions::new().global_attribute_pk_value("r1"),
    )
    .await
    .unwrap();
    eventually("the task to be parked", SOON, || async {
        states(&env, "refused").await["states"][0]["pendingCall"]["phase"] == "PARKED"
    })
    .await;
    let view = states(&env, "refused").await;
    let reason = view["states"][0]["pendingCall"]["parkedReason"]
        .as_str()
        .unwrap_or_default();
    assert!(reason.contains(REFUSAL), "{view}");
    let (_, described) = call(&env, paths::DESCRIBE, json!({ "processId": "refused" })).await;
    assert_eq!(described["parkedTasks"], 1, "{described}");
    let parked = env
        .history(&exec)
        .await
        .into_iter()
        .find(|e| e.event_type == "TASK_PARKED")
        .expect("the parking is in the history");
    assert_eq!(parked.details["refusals"], 3);
    let calls_when_parked = process.attempts.len();
    assert!(calls_when_parked >= 3, "the worker was asked on each try");

    allow_state_completion(&env).await;
    let (status, body) = call(&env, paths::RETRY_NOW, json!({ "processId": "refused" })).await;
    assert_eq!(
        (status, &body["stateExecutionIds"]),
        (200, &json!(["FlakyState-1"]))
    );
    let done = env
        .client
        .wait_for_process_completion("refused", SOON)
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");
    assert_eq!(
        env.entity_row("r1").await.unwrap().note.as_deref(),
        Some("flaky done")
    );
    let (_, described) = call(&env, paths::DESCRIBE, json!({ "processId": "refused" })).await;
    assert_eq!(described["parkedTasks"], 0, "{described}");
    env.shutdown().await;
}

/// Controls that race with an attempt being called: retry-now and give-up are refused
/// naming the running attempt, a pause holds nothing of it, and the attempt's answer is
/// the one outcome (it completes the process; nothing fails it afterwards).
async fn controls_racing_a_running_attempt_leave_one_outcome(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let process = flaky(1, Duration::from_secs(300));
    let faults = WorkerFaults::new();
    let router = faults.wrap(WorkerService::new().register(process.clone()).router());
    let worker = env.start_worker(router).await;
    let exec = start(
        &env,
        &process,
        &worker,
        "racing",
        ProcessStartOptions::new().global_attribute_pk_value("x1"),
    )
    .await
    .unwrap();
    eventually("the first attempt to fail", SOON, || async {
        states(&env, "racing").await["states"][0]["lastFailure"].is_object()
    })
    .await;
    faults.hold(CallMatch::state("FlakyState", StateApiKind::Execute));
    let (status, _) = call(&env, paths::RETRY_NOW, json!({ "processId": "racing" })).await;
    assert_eq!(status, 200);
    eventually("the second attempt's answer to be held", SOON, || async {
        faults.held() == 1
    })
    .await;
    let view = states(&env, "racing").await;
    assert_eq!(
        view["states"][0]["pendingCall"]["phase"], "RUNNING",
        "{view}"
    );
    for path in [paths::RETRY_NOW, paths::GIVE_UP] {
        let (status, body) = call(&env, path, json!({ "processId": "racing" })).await;
        assert_eq!(
            (status, &body["subType"]),
            (409, &json!("CONTROL_NOT_APPLICABLE"))
        );
        let message = body["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("attempt 2 of state FlakyState-1 is being called"),
            "{body}"
        );
    }
    let (status, body) = call(&env, paths::PAUSE, json!({ "processId": "racing" })).await;
    assert_eq!((status, &body["stateExecutionIds"]), (200, &json!([])));
    faults.release();
    let done = env
        .client
        .wait_for_process_completion("racing", SOON)
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");
    let types: Vec<String> = env.history_types(&exec).await;
    assert!(!types.iter().any(|t| t == "STATE_FAILED"), "{types:?}");
    assert_eq!(
        types.iter().filter(|t| *t == "EXECUTE_COMPLETED").count(),
        1,
        "{types:?}"
    );
    let paused = types
        .iter()
        .position(|t| t == "PAUSED")
        .expect("the pause is recorded");
    assert!(
        paused < types.len() - 1,
        "the pause came before the close: {types:?}"
    );
    assert_eq!(process.attempts.len(), 2);
    let (status, body) = call(&env, paths::GIVE_UP, json!({ "processId": "racing" })).await;
    assert_eq!(
        (status, &body["subType"]),
        (409, &json!("PROCESS_NOT_RUNNING"))
    );
    env.shutdown().await;
}

/// A long history comes a page at a time: 2,500 events in pages of at most 1,000, each
/// page's cursor leading to the next, together the whole history in order; a type filter
/// pages over its own events only.
async fn a_history_of_thousands_of_events_is_paged(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let process = flaky(1000, Duration::from_secs(300));
    let router = WorkerService::new().register(process.clone()).router();
    let worker = env.start_worker(router).await;
    let exec = start(
        &env,
        &process,
        &worker,
        "long",
        ProcessStartOptions::new().global_attribute_pk_value("l1"),
    )
    .await
    .unwrap();
    // Its history stays as it is from its first failure on (the retry is 300 s away).
    eventually("the first attempt to fail", SOON, || async {
        states(&env, "long").await["states"][0]["lastFailure"].is_object()
    })
    .await;
    // 2,500 events written straight into the table: the paging is what is tested.
    let id = match db {
        Database::Postgres => format!("CAST('{exec}' AS uuid)"),
        Database::MySql => format!("'{exec}'"),
    };
    let digits = "(SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 \
                  UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 \
                  UNION ALL SELECT 8 UNION ALL SELECT 9)";
    let mut admin = SqlSession::open(env.db()).await;
    admin
        .execute(&format!(
            "INSERT INTO xdb_sys_history_events (process_execution_id, event_type, details) \
             SELECT {id}, 'LOCAL_QUEUE_MESSAGES_PUBLISHED', '{{\"messages\": 1, \"duplicates\": 0}}' \
             FROM {digits} a, {digits} b, {digits} c, {digits} e \
             WHERE a.d * 1000 + b.d * 100 + c.d * 10 + e.d < 2500"
        ))
        .await
        .unwrap();
    let total = env.history(&exec).await.len();
    assert!(total >= 2501, "{total}");

    let page = |after: Option<i64>, types: Vec<HistoryEventType>| {
        let client = &env.client;
        async move {
            client
                .history(&ProcessExecutionHistoryRequest {
                    process_id: "long".into(),
                    after_event_id: after,
                    page_size: Some(1000),
                    event_types: types,
                    ..Default::default()
                })
                .await
                .unwrap()
        }
    };
    let mut events = Vec::new();
    let mut sizes = Vec::new();
    let mut after = None;
    loop {
        let answer = page(after, Vec::new()).await;
        sizes.push(answer.events.len());
        events.extend(answer.events);
        after = answer.next_after_event_id;
        if after.is_none() {
            break;
        }
    }
    assert_eq!(events.len(), total);
    assert_eq!(&sizes[..2], &[1000, 1000], "{sizes:?}");
    assert!(events.windows(2).all(|w| w[0].event_id < w[1].event_id));
    assert_eq!(events[0].event_type, "PROCESS_STARTED");
    let started = page(None, vec![HistoryEventType::ProcessStarted]).await;
    assert_eq!(started.events.len(), 1);
    assert_eq!(started.next_after_event_id, None);
    env.shutdown().await;
}

/// Stop works on a paused execution as on any other, and takes what the pause set aside
/// with it.
async fn stopping_a_paused_execution_drops_what_it_set_aside(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let process = flaky(1000, Duration::from_secs(300));
    let router = WorkerService::new().register(process.clone()).router();
    let worker = env.start_worker(router).await;
    let exec = start(
        &env,
        &process,
        &worker,
        "stopped",
        ProcessStartOptions::new().global_attribute_pk_value("t1"),
    )
    .await
    .unwrap();
    eventually("the first attempt to fail", SOON, || async {
        states(&env, "stopped").await["states"][0]["lastFailure"].is_object()
    })
    .await;
    let (status, _) = call(&env, paths::PAUSE, json!({ "processId": "stopped" })).await;
    assert_eq!(status, 200);
    let set_aside = "SELECT count(*) FROM xdb_sys_parked_tasks WHERE process_execution_id = $1";
    let id = || xdb_integration_tests::Arg::Uuid(exec.parse().unwrap());
    assert_eq!(env.count(set_aside, &[id()]).await, 1);
    let (status, body) = call(&env, paths::STOP, json!({ "processId": "stopped" })).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(env.count(set_aside, &[id()]).await, 0);
    let (_, described) = call(&env, paths::DESCRIBE, json!({ "processId": "stopped" })).await;
    assert_eq!(described["status"], "TERMINATED", "{described}");
    assert!(described["paused"].is_null(), "{described}");
    env.shutdown().await;
}

both_databases!(
    a_failing_state_is_shown_retried_now_and_given_up,
    a_paused_execution_runs_nothing_until_it_resumes,
    a_task_the_database_keeps_refusing_is_parked_until_retry_now,
    controls_racing_a_running_attempt_leave_one_outcome,
    a_history_of_thousands_of_events_is_paged,
    stopping_a_paused_execution_drops_what_it_set_aside,
);
