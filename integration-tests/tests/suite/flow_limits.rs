//! Flow limits through the API and the async service: three async instances held to a
//! limit of 50 worker calls a second over a minute (within 10%), calls held back costing
//! no attempt and shown `RATE_LIMITED` by `states`; bad limits refused naming the field,
//! changing nothing.

use std::time::{Duration, Instant};

use futures::{stream, StreamExt};
use serde_json::json;
use xdb_integration_tests::processes::Recorder;
use xdb_integration_tests::{eventually, Database, EnvOptions, XdbTestEnv};
use xdb_protocol::paths;
use xdb_sdk::*;

use crate::common::*;

both_databases!(
    three_instances_keep_to_the_limit_and_held_calls_cost_no_attempt,
    bad_limits_are_refused_naming_the_field_and_change_nothing,
);

const LIMIT: f64 = 50.0;
const MEASURED: Duration = Duration::from_secs(60);
/// Calls before the window, while the instances learn of each other.
const SETTLE: Duration = Duration::from_secs(5);

/// One state whose execute records when it came and completes.
#[derive(Debug, Clone, Default)]
struct RatedProcess {
    calls: Recorder<(Instant, u32)>,
}

impl Process for RatedProcess {
    fn state_schema(&self) -> StateSchema {
        StateSchema::with_starting_state(RatedState {
            calls: self.calls.clone(),
        })
    }
}

struct RatedState {
    calls: Recorder<(Instant, u32)>,
}

#[async_trait]
impl AsyncState for RatedState {
    type Input = ();

    async fn execute(
        &self,
        ctx: &Context,
        _input: (),
        _results: &CommandResults,
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        self.calls.push((Instant::now(), ctx.attempt));
        Ok(StateDecision::graceful_complete_process(json!(null)))
    }
}

async fn three_instances_keep_to_the_limit_and_held_calls_cost_no_attempt(db: Database) {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            async_instances: 0,
            ..Default::default()
        },
    )
    .await;
    let process = RatedProcess::default();
    let worker = serve(&mut env, &process).await;
    // Set before any instance starts, so each applies it from its first claim.
    let (status, entry) = call(
        &env,
        paths::FLOW_LIMITS_SET,
        json!({"processType": "RatedProcess", "override": {"maxCallsPerSecond": LIMIT},
               "reason": "the downstream takes 50 a second"}),
    )
    .await;
    assert_eq!(status, 200, "{entry}");
    assert_eq!(entry["effective"]["maxCallsPerSecond"], json!(LIMIT));
    for _ in 0..3 {
        env.add_async_instance().await;
    }
    // More than the window can take, so every instance always has work.
    let total = ((SETTLE + MEASURED).as_secs_f64() * LIMIT * 1.2) as usize;
    let started = stream::iter(0..total)
        .map(|i| {
            let (env, process, worker) = (&env, &process, &worker);
            async move {
                let id = format!("rated-{i}");
                start(env, process, worker, &id, ProcessStartOptions::new())
                    .await
                    .unwrap();
            }
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;
    assert_eq!(started.len(), total);

    // A call waiting for its turn is shown as such, and due later.
    eventually("a call shown RATE_LIMITED", SOON, || async {
        for i in (0..total).rev().step_by(97) {
            let view = states(&env, &format!("rated-{i}")).await;
            if view.to_string().contains("\"RATE_LIMITED\"") {
                return true;
            }
        }
        false
    })
    .await;

    let first = eventually_first_call(&process).await;
    let window_start = first + SETTLE;
    let window_end = window_start + MEASURED;
    eventually("the window to pass", SETTLE + MEASURED + SOON, || async {
        Instant::now() > window_end + Duration::from_millis(500)
    })
    .await;
    let calls = process.calls.all();
    let in_window = calls
        .iter()
        .filter(|(at, _)| *at >= window_start && *at < window_end)
        .count();
    let rate = in_window as f64 / MEASURED.as_secs_f64();
    println!("flow-limit-report db={db:?} limit={LIMIT} measured={rate:.2}/s calls={in_window}");
    assert!(
        (LIMIT * 0.9..=LIMIT * 1.1).contains(&rate),
        "{rate:.2} calls a second against a limit of {LIMIT}"
    );
    assert!(
        calls.iter().all(|(_, attempt)| *attempt == 1),
        "a call held back cost an attempt"
    );
    env.shutdown().await;
}

async fn eventually_first_call(process: &RatedProcess) -> Instant {
    eventually("the first call", SOON, || async {
        !process.calls.is_empty()
    })
    .await;
    process.calls.all().iter().map(|(at, _)| *at).min().unwrap()
}

async fn bad_limits_are_refused_naming_the_field_and_change_nothing(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let process = RatedProcess::default();
    let worker = WorkerService::new().register(process.clone());
    let url = env.start_worker(worker.router()).await;
    worker
        .register_with(
            &env.client,
            xdb_protocol::WorkerDeployment {
                name: "rated".into(),
                version: "1".into(),
                worker_url: url,
            },
            false,
        )
        .await
        .unwrap();
    let refused = [
        (
            json!({"processType": "RatedProcess", "override": {"maxCallsPerSecond": 0}}),
            "override.maxCallsPerSecond",
        ),
        (
            json!({"processType": "RatedProcess", "override": {"maxCallsPerSecond": -3}}),
            "override.maxCallsPerSecond",
        ),
        (
            json!({"processType": "RatedProcess", "override": {"maxCallsPerSecond": 2e6}}),
            "override.maxCallsPerSecond",
        ),
        (
            json!({"processType": "RatedProcess", "stateId": "NoSuchState",
                "override": {"maxCallsPerSecond": 1}}),
            "stateId",
        ),
        (
            json!({"processType": "RatedProcess", "override": {"maxCallsPerHour": 1}}),
            "maxCallsPerHour",
        ),
        (
            json!({"processType": "", "override": {"maxCallsPerSecond": 1}}),
            "processType",
        ),
    ];
    for (body, field) in refused {
        let (status, answer) = call(&env, paths::FLOW_LIMITS_SET, body.clone()).await;
        assert_eq!(status, 400, "{body} → {answer}");
        assert_eq!(answer["subType"], json!("INVALID_REQUEST"), "{answer}");
        assert!(
            answer["message"]
                .as_str()
                .unwrap_or_default()
                .contains(field),
            "{body}: the answer names {field}: {answer}"
        );
    }
    let (status, listed) = call(&env, paths::FLOW_LIMITS_LIST, json!({})).await;
    assert_eq!(status, 200);
    assert_eq!(listed["limits"], json!([]), "nothing was written");
    let (status, history) = call(&env, paths::FLOW_LIMITS_HISTORY, json!({})).await;
    assert_eq!(status, 200);
    assert_eq!(history["changes"], json!([]), "nothing was recorded");
    let (status, answer) = call(
        &env,
        paths::FLOW_LIMITS_HISTORY,
        json!({"nextPageToken": "'; DROP TABLE x; --"}),
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    env.shutdown().await;
}
