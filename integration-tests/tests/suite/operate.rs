//! The operator's calls on real services and databases: the states view, retry-now,
//! give-up, pause and resume, and tasks parked after the database refused them.

use std::time::Duration;

use serde_json::{json, Value};
use xdb_integration_tests::processes::flaky::{FlakyConfig, FlakyProcess};
use xdb_integration_tests::sql::SqlSession;
use xdb_integration_tests::{eventually, Database, EnvOptions, XdbTestEnv};
use xdb_protocol::paths;
use xdb_sdk::protocol::ProcessStatus;
use xdb_sdk::{ProcessStartOptions, WorkerService};

use crate::common::*;

/// POSTs `body` to `path`; the status and the JSON answer.
async fn call(env: &XdbTestEnv, path: &str, body: Value) -> (u16, Value) {
    post_raw(env, path, body.to_string(), Some("application/json")).await
}

async fn states(env: &XdbTestEnv, process_id: &str) -> Value {
    let (status, body) = call(env, paths::STATES, json!({ "processId": process_id })).await;
    assert_eq!(status, 200, "{body}");
    body
}

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

/// A transition the database refuses every time is parked with the reason after
/// `async.park_after_refusals` refusals instead of looping; fixed, retry-now runs it.
async fn a_task_the_database_keeps_refusing_is_parked_until_retry_now(db: Database) {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            park_after_refusals: 3,
            ..Default::default()
        },
    )
    .await;
    let mut admin = SqlSession::open(env.db()).await;
    match db {
        Database::Postgres => {
            admin
                .execute(
                    "CREATE FUNCTION refuse_completion() RETURNS trigger AS $$ \
                     BEGIN RAISE EXCEPTION 'refused by the test trigger'; END $$ \
                     LANGUAGE plpgsql",
                )
                .await
                .unwrap();
            admin
                .execute(
                    "CREATE TRIGGER refuse_completion BEFORE UPDATE \
                     ON xdb_sys_async_state_executions FOR EACH ROW \
                     WHEN (NEW.status = 'COMPLETED') EXECUTE FUNCTION refuse_completion()",
                )
                .await
                .unwrap();
        }
        Database::MySql => {
            admin
                .execute(
                    "CREATE TRIGGER refuse_completion BEFORE UPDATE \
                     ON xdb_sys_async_state_executions FOR EACH ROW \
                     BEGIN IF NEW.status = 'COMPLETED' THEN \
                     SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused by the test trigger'; \
                     END IF; END",
                )
                .await
                .unwrap();
        }
    }
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
    assert!(reason.contains("refused by the test trigger"), "{view}");
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

    let drop = match db {
        Database::Postgres => "DROP TRIGGER refuse_completion ON xdb_sys_async_state_executions",
        Database::MySql => "DROP TRIGGER refuse_completion",
    };
    admin.execute(drop).await.unwrap();
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

both_databases!(
    a_failing_state_is_shown_retried_now_and_given_up,
    a_paused_execution_runs_nothing_until_it_resumes,
    a_task_the_database_keeps_refusing_is_parked_until_retry_now,
);
