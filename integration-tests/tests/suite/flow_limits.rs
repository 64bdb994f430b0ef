//! Flow limits through the API and the async service: three async instances held to a
//! limit of 50 worker calls a second over a minute (within 10%), calls held back costing
//! no attempt and shown `FLOW_LIMITED` by `states`; a concurrency limit held across
//! instances while one is SIGKILLed (also in Pulsar mode); bad limits refused naming the
//! field, changing nothing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
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
    a_concurrency_limit_holds_across_instances_and_a_killed_one_gives_its_places_back,
    bad_limits_are_refused_naming_the_field_and_change_nothing,
);

// The held-back task comes back as a row change, through the CDC pipeline.
pulsar_mode_too!(a_concurrency_limit_holds_across_instances_and_a_killed_one_gives_its_places_back);

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

/// An environment without async instances, `process`'s worker, and the limit `set` (a
/// `flow-limits/set` body) in force before any instance starts, so each applies it from
/// its first claim; the limit's entry as set.
async fn limited<P: Process + Clone>(
    db: Database,
    process: &P,
    set: serde_json::Value,
) -> (XdbTestEnv, String, serde_json::Value) {
    limited_with(db, process, set, EnvOptions::default()).await
}

/// [`limited`] in an environment of `options` (its async instances aside).
async fn limited_with<P: Process + Clone>(
    db: Database,
    process: &P,
    set: serde_json::Value,
    options: EnvOptions,
) -> (XdbTestEnv, String, serde_json::Value) {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            async_instances: 0,
            ..options
        },
    )
    .await;
    let worker = serve(&mut env, process).await;
    let (status, entry) = call(&env, paths::FLOW_LIMITS_SET, set).await;
    assert_eq!(status, 200, "{entry}");
    (env, worker, entry)
}

async fn three_instances_keep_to_the_limit_and_held_calls_cost_no_attempt(db: Database) {
    let process = RatedProcess::default();
    let (mut env, worker, entry) = limited(
        db,
        &process,
        json!({"processType": "RatedProcess", "override": {"maxCallsPerSecond": LIMIT},
               "reason": "the downstream takes 50 a second"}),
    )
    .await;
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
    eventually("a call shown FLOW_LIMITED", SOON, || async {
        for i in (0..total).rev().step_by(97) {
            let view = states(&env, &format!("rated-{i}")).await;
            if view.to_string().contains("\"FLOW_LIMITED\"") {
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

/// One state whose execute takes [`SLOW_CALL`], counting the calls running at once.
#[derive(Debug, Clone, Default)]
struct SlowProcess {
    running: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
    done: Arc<AtomicUsize>,
    /// Calls seen, by execution: a second call of one execution is a repeated call (a
    /// takeover), not another place.
    calls: Recorder<(String, u32, Instant)>,
}

const SLOW_CALL: Duration = Duration::from_millis(300);
const CONCURRENCY: u32 = 3;

impl Process for SlowProcess {
    fn state_schema(&self) -> StateSchema {
        StateSchema::with_starting_state(SlowState(self.clone()))
    }
}

struct SlowState(SlowProcess);

/// Counts one call out when it ends, however it ends.
struct Running(Arc<AtomicUsize>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[async_trait]
impl AsyncState for SlowState {
    type Input = ();

    async fn execute(
        &self,
        ctx: &Context,
        _input: (),
        _results: &CommandResults,
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        let counts = &self.0;
        counts.calls.push((
            ctx.process_execution_id.clone(),
            ctx.attempt,
            Instant::now(),
        ));
        let now = counts.running.fetch_add(1, Ordering::SeqCst) + 1;
        counts.most.fetch_max(now, Ordering::SeqCst);
        // The call of a SIGKILLed instance is dropped with its connection: it must leave
        // the count then too.
        let _running = Running(counts.running.clone());
        tokio::time::sleep(SLOW_CALL).await;
        counts.done.fetch_add(1, Ordering::SeqCst);
        Ok(StateDecision::graceful_complete_process(json!(null)))
    }
}

/// 60 executions of a state limited to 3 calls at once, on two async instances (OS
/// processes), one SIGKILLed midway and replaced: the worker never sees more than 3
/// calls at once, nor does the database (sampled every 50 ms), and all complete.
async fn a_concurrency_limit_holds_across_instances_and_a_killed_one_gives_its_places_back(
    db: Database,
) {
    const EXECUTIONS: usize = 60;
    let process = SlowProcess::default();
    // In Pulsar mode, calls given back (due later) wait as change events held in memory,
    // some by the instance killed: those come back to the others as its unacknowledged
    // messages, within the deadline. The sweep, the safety net for lost events, is put
    // far past the deadline so that it can never be what brings them back.
    let (env, worker, _) = limited_with(
        db,
        &process,
        json!({"processType": "SlowProcess", "stateId": "SlowState",
               "override": {"maxConcurrentCalls": CONCURRENCY}}),
        EnvOptions {
            pulsar_sweep_after_ms: 600_000,
            ..Default::default()
        },
    )
    .await;
    let mut first = Some(env.spawn_async_process(ASYNC_INSTANCE_BIN, "slots-1").await);
    let _second = env.spawn_async_process(ASYNC_INSTANCE_BIN, "slots-2").await;
    for i in 0..EXECUTIONS {
        start(
            &env,
            &process,
            &worker,
            &format!("slow-{i}"),
            ProcessStartOptions::new(),
        )
        .await
        .unwrap();
    }
    let places_taken = "SELECT COUNT(*) FROM xdb_sys_call_slots s \
         JOIN xdb_sys_tasks t ON t.id = s.task_id AND t.lease_owner = s.owner";
    let mut most_in_database = 0;
    let mut replacement = None;
    let mut killed_at = None;
    let deadline = Instant::now() + Duration::from_secs(90);
    while process.done.load(Ordering::SeqCst) < EXECUTIONS {
        assert!(
            Instant::now() < deadline,
            "{} of {EXECUTIONS} done after 90 s",
            process.done.load(Ordering::SeqCst)
        );
        let rows = env.sql().query(places_taken, &[]).await;
        most_in_database = most_in_database.max(rows[0].i64(0));
        if replacement.is_none() && process.done.load(Ordering::SeqCst) >= EXECUTIONS / 3 {
            // Mid-call, most likely: its places come back with its leases.
            if let Some(instance) = first.take() {
                instance.kill().await;
                killed_at = Some(Instant::now());
            }
            replacement = Some(env.spawn_async_process(ASYNC_INSTANCE_BIN, "slots-3").await);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let most = process.most.load(Ordering::SeqCst);
    let calls = process.calls.all();
    let mut executions: Vec<&String> = calls.iter().map(|(exec, _, _)| exec).collect();
    executions.sort();
    executions.dedup();
    // Calls repeated after the kill: the killed instance's, taken over.
    println!(
        "calls={} executions={} killed_after={:?}",
        calls.len(),
        executions.len(),
        killed_at.map(|at: Instant| at.duration_since(calls[0].2))
    );
    println!(
        "concurrency-limit-report db={db:?} limit={CONCURRENCY} most_at_worker={most} \
         most_in_database={most_in_database}"
    );
    assert!(most <= CONCURRENCY as usize, "{most} calls at once");
    assert_eq!(
        most, CONCURRENCY as usize,
        "the limit's places were all used"
    );
    assert!(
        most_in_database <= i64::from(CONCURRENCY),
        "{most_in_database} places"
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
            json!({"processType": "RatedProcess", "override": {"maxConcurrentCalls": 0}}),
            "override.maxConcurrentCalls",
        ),
        (
            json!({"processType": "RatedProcess", "override": {"maxRunningExecutions": 0}}),
            "override.maxRunningExecutions",
        ),
        (
            json!({"processType": "RatedProcess", "override": {"maxRunningExecutions": 100001}}),
            "override.maxRunningExecutions",
        ),
        (
            json!({"processType": "RatedProcess", "stateId": "RatedState",
                "override": {"maxRunningExecutions": 2}}),
            "override.maxRunningExecutions",
        ),
        (
            json!({"processType": "RatedProcess", "override": {"maxRunningExecutions": 2,
                "concurrencyKeyAttribute": "customer_id; DROP TABLE x"}}),
            "override.concurrencyKeyAttribute",
        ),
        (
            json!({"processType": "RatedProcess",
                "override": {"concurrencyKeyAttribute": "customer_id"}}),
            "override.concurrencyKeyAttribute",
        ),
        (
            json!({"processType": "RatedProcess",
                "override": {"fairnessKeyAttribute": "tenant\"; DROP TABLE x"}}),
            "override.fairnessKeyAttribute",
        ),
        (
            json!({"processType": "RatedProcess", "override": {"fairnessWeight": 0}}),
            "override.fairnessWeight",
        ),
        (
            json!({"processType": "RatedProcess", "override": {"fairnessWeight": 1001}}),
            "override.fairnessWeight",
        ),
        (
            json!({"processType": "RatedProcess", "stateId": "RatedState",
                "override": {"fairnessKeyAttribute": "tenant_id"}}),
            "override.fairnessKeyAttribute",
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
