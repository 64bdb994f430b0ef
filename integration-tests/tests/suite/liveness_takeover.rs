//! Dead instances are noticed by their heartbeats: the work a SIGKILLed async instance
//! held runs elsewhere within two seconds, with the default 30 s lease; a live instance
//! keeps its leases however long its calls take; and an instance that was only stopped
//! for a while (SIGSTOP) finds its work taken over and applies nothing when it resumes.

use std::time::{Duration, Instant};

use xdb_config::QueueMode;
use xdb_integration_tests::metrics::{sample_sum, scrape};
use xdb_integration_tests::processes::hang::HangProcess;
use xdb_integration_tests::{eventually, AsyncProcess, Database, EnvOptions, XdbTestEnv};
use xdb_sdk::protocol::ProcessStatus;
use xdb_sdk::ProcessStartOptions;

use crate::common::*;

/// The default lease (`async.lease_seconds`): takeovers must not wait for it.
const DEFAULT_LEASE_SECONDS: f64 = 30.0;
/// The bound on kill → the held work's next call, for all takeovers of a run but the
/// slowest.
const TAKEOVER_BOUND: Duration = Duration::from_secs(2);
/// The bound on the slowest takeover of a run. A survivor whose own heartbeat stalled
/// (a commit waiting on a busy disk) judges nobody for a whole liveness timeout more,
/// by design, lest it take a live peer's leases; where the database shares its disk
/// with Pulsar's bookie, one takeover in 20 took 2.2 to 3.6 s that way. Far less than
/// the 30 s lease all the same.
const SLOWEST_TAKEOVER_BOUND: Duration = Duration::from_secs(5);
/// The default `async.liveness_timeout_ms`.
const LIVENESS_TIMEOUT: Duration = Duration::from_millis(1000);

/// `p`-th percentile (nearest rank) of `sorted`.
fn percentile(sorted: &[Duration], p: usize) -> Duration {
    let rank = (sorted.len() * p).div_ceil(100).max(1);
    sorted[rank - 1]
}

/// An environment with no async instance of its own, the default lease, in `mode`; in
/// Pulsar mode the sweep for tasks without events is off, so only events run tasks.
async fn environment(db: Database, mode: QueueMode) -> XdbTestEnv {
    XdbTestEnv::start_with(
        db,
        EnvOptions {
            async_instances: 0,
            lease_seconds: DEFAULT_LEASE_SECONDS,
            pulsar_sweep_after_ms: 0,
            queue_mode: mode,
            ..Default::default()
        },
    )
    .await
}

/// Spawns OS-process instance number `n`.
async fn spawn(env: &XdbTestEnv, n: usize) -> (String, AsyncProcess) {
    let id = format!("instance-{n}");
    let process = env.spawn_async_process(ASYNC_INSTANCE_BIN, &id).await;
    (id, process)
}

/// Starts a [`HangProcess`] execution and waits for its first call to hang; returns
/// the execution and the instance holding its task.
async fn hung_execution(
    env: &XdbTestEnv,
    process: &HangProcess,
    worker: &str,
    process_id: &str,
    entity: &str,
) -> (String, String) {
    let exec = start(
        env,
        process,
        worker,
        process_id,
        ProcessStartOptions::new().global_attribute_pk_value(entity),
    )
    .await
    .unwrap();
    eventually("the first call to hang", SOON, || async {
        process.calls_of(&exec).len() == 1
    })
    .await;
    let tasks = env.tasks(&exec).await;
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    let owner = tasks[0].lease_owner.clone().expect("the task is leased");
    (exec, owner)
}

/// The execution's call ran twice with one idempotency key, its transition once, its
/// business row was written, and no task is left.
async fn applied_once(env: &XdbTestEnv, process: &HangProcess, exec: &str, entity: &str) {
    let calls = process.calls_of(exec);
    assert_eq!(calls.len(), 2, "one call repeated, no more: {calls:?}");
    assert_eq!(calls[0].idempotency_key, calls[1].idempotency_key);
    let history = env.history_types(exec).await;
    assert_eq!(
        history.iter().filter(|e| *e == "EXECUTE_COMPLETED").count(),
        1,
        "the transition happened once: {history:?}"
    );
    assert!(env.tasks(exec).await.is_empty());
    let note = env.entity_row(entity).await.and_then(|row| row.note);
    assert_eq!(note.as_deref(), Some("done"));
}

/// Twenty times: a process's first worker call hangs on one of two instances (OS
/// processes, default 30 s lease), that instance is SIGKILLed, and the time until the
/// call comes again from the other instance is measured; a replacement instance (a new
/// id, as a new pod) starts after each. All but the slowest must be under 2 s (p95 of
/// 20), the slowest under 5 s ([`SLOWEST_TAKEOVER_BOUND`]).
/// Used by the Pulsar-mode test too (`pulsar_takeover`).
pub(crate) async fn takeover_after_sigkill(db: Database, mode: QueueMode) {
    takeover_of(db, mode, HangProcess::new(), 20).await;
}

/// [`takeover_after_sigkill`] of `process`'s held call, `repetitions` times.
pub(crate) async fn takeover_of(
    db: Database,
    mode: QueueMode,
    process: HangProcess,
    repetitions: usize,
) {
    let mut env = environment(db, mode).await;
    let worker = serve(&mut env, &process).await;
    let mut started = 0;
    let mut instances = Vec::new();
    for _ in 0..2 {
        started += 1;
        instances.push(spawn(&env, started).await);
    }

    let mut takeovers = Vec::new();
    let mut execs = Vec::new();
    for i in 0..repetitions {
        let process_id = format!("takeover-{i}");
        let entity = format!("t{i}");
        let (exec, owner) = hung_execution(&env, &process, &worker, &process_id, &entity).await;
        let holder = instances
            .iter()
            .position(|(id, _)| *id == owner)
            .unwrap_or_else(|| panic!("{owner} is not a live instance"));
        let (_, doomed) = instances.remove(holder);
        if process.waits_first() {
            // The instance that ran the waitUntil took the execute as its continuation.
            let text = scrape(doomed.http_url()).await;
            let continuations = sample_sum(
                &text,
                "xdb_async_continuations_total",
                &[("task_type", "EXECUTE")],
            );
            assert!(continuations >= Some(1.0), "{owner}: {continuations:?}");
        }
        let killed_at = Instant::now();
        doomed.kill().await;

        // Far less than the lease: a takeover that waited for it fails here.
        eventually(
            "the call to come again from the other instance",
            SOON,
            || async { process.calls_of(&exec).len() >= 2 },
        )
        .await;
        takeovers.push(process.calls_of(&exec)[1].at - killed_at);
        let done = env
            .client
            .wait_for_process_completion(&process_id, SOON)
            .await
            .unwrap();
        assert_eq!(
            done.status,
            ProcessStatus::Completed,
            "{process_id}: {done:?}"
        );
        execs.push((exec, entity));

        started += 1;
        instances.push(spawn(&env, started).await);
    }

    let mut sorted = takeovers.clone();
    sorted.sort();
    let ms = |d: Duration| d.as_millis();
    eprintln!(
        "takeover after SIGKILL ({db:?}, {mode:?} queue, {repetitions} kills, lease \
         {DEFAULT_LEASE_SECONDS} s, liveness timeout {LIVENESS_TIMEOUT:?}): p50 {} ms, \
         p99 {} ms, max {} ms; all: {:?} ms",
        ms(percentile(&sorted, 50)),
        ms(percentile(&sorted, 99)),
        ms(sorted[repetitions - 1]),
        takeovers.iter().map(|d| ms(*d)).collect::<Vec<_>>()
    );
    let all_but_the_slowest = sorted[repetitions.saturating_sub(2)];
    assert!(
        all_but_the_slowest < TAKEOVER_BOUND,
        "second slowest takeover {all_but_the_slowest:?} (all: {sorted:?})"
    );
    assert!(
        sorted[repetitions - 1] < SLOWEST_TAKEOVER_BOUND,
        "slowest takeover {:?} (all: {sorted:?})",
        sorted[repetitions - 1]
    );

    for (exec, entity) in &execs {
        applied_once(&env, &process, exec, entity).await;
    }
    // The dead instances' registrations went with their leases.
    let mut live: Vec<String> = instances.iter().map(|(id, _)| id.clone()).collect();
    live.sort();
    eventually("only live instances to stay registered", SOON, || async {
        registered(&env).await == live
    })
    .await;
    // The held calls end; the instances go before their database does.
    process.release();
    for (_, instance) in instances {
        instance.kill().await;
    }
    env.shutdown().await;
}

/// The async instances registered, by id.
async fn registered(env: &XdbTestEnv) -> Vec<String> {
    let rows = env
        .query(
            "SELECT instance_id FROM xdb_sys_service_instances \
             WHERE service = 'ASYNC' ORDER BY instance_id",
            &[],
        )
        .await;
    rows.iter().map(|row| row.text(0)).collect()
}

async fn sigkilled_instance_s_work_runs_elsewhere_within_two_seconds(db: Database) {
    takeover_after_sigkill(db, QueueMode::Database).await;
}

/// A worker call that lasts three liveness timeouts, on one of two instances: the
/// instance heartbeats all along, so its lease stays its own and the call is made once.
async fn a_live_instance_s_slow_call_keeps_its_lease(db: Database) {
    let mut env = environment(db, QueueMode::Database).await;
    let process = HangProcess::new();
    let worker = serve(&mut env, &process).await;
    let instances = [spawn(&env, 1).await, spawn(&env, 2).await];
    let (exec, owner) = hung_execution(&env, &process, &worker, "slow", "slow").await;

    // An observation window, not a wait for a condition: nothing may happen in it.
    let window = Instant::now() + LIVENESS_TIMEOUT * 3;
    while Instant::now() < window {
        assert_eq!(
            process.calls_of(&exec).len(),
            1,
            "a second call while the first runs"
        );
        let tasks = env.tasks(&exec).await;
        assert_eq!(tasks.len(), 1, "{tasks:?}");
        assert_eq!(
            tasks[0].lease_owner.as_deref(),
            Some(owner.as_str()),
            "the lease moved"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    process.release();
    let done = env
        .client
        .wait_for_process_completion("slow", SOON)
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");
    assert_eq!(
        process.calls_of(&exec).len(),
        1,
        "the slow call was made once"
    );
    assert_eq!(
        env.entity_row("slow")
            .await
            .and_then(|row| row.note)
            .as_deref(),
        Some("done")
    );
    for (_, instance) in instances {
        instance.kill().await;
    }
    env.shutdown().await;
}

/// The instance holding a hung call is stopped (SIGSTOP) past the liveness timeout: the
/// other takes the work over and completes it. Then the first call returns and the
/// stopped instance resumes: its late transition is refused as stale (counted in its
/// metrics) and nothing is applied twice.
async fn a_resumed_instance_applies_nothing_of_the_work_taken_from_it(db: Database) {
    let mut env = environment(db, QueueMode::Database).await;
    let process = HangProcess::new();
    let worker = serve(&mut env, &process).await;
    let mut instances = vec![spawn(&env, 1).await, spawn(&env, 2).await];
    let (exec, owner) = hung_execution(&env, &process, &worker, "paused", "paused").await;
    let holder = instances.iter().position(|(id, _)| *id == owner).unwrap();
    let (_, paused) = instances.remove(holder);
    let stale_before = stale_handlings(paused.http_url()).await;
    paused.pause();

    eventually("the other instance to call again", SOON, || async {
        process.calls_of(&exec).len() >= 2
    })
    .await;
    let done = env
        .client
        .wait_for_process_completion("paused", SOON)
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");
    // The first call answers now, into the stopped instance's socket.
    process.release();
    paused.resume();
    eventually(
        "the resumed instance to find its task gone",
        SOON,
        || async { stale_handlings(paused.http_url()).await > stale_before },
    )
    .await;
    applied_once(&env, &process, &exec, "paused").await;
    eventually("the resumed instance to register again", SOON, || async {
        registered(&env).await.contains(&owner)
    })
    .await;
    paused.kill().await;
    for (_, instance) in instances {
        instance.kill().await;
    }
    env.shutdown().await;
}

/// Task handlings an instance found stale.
async fn stale_handlings(base_url: &str) -> f64 {
    let text = scrape(base_url).await;
    sample_sum(
        &text,
        "xdb_async_tasks_completed_total",
        &[("outcome", "stale")],
    )
    .unwrap_or(0.0)
}

/// The instance that releases a dead instance's leases may be full (`max_in_flight`)
/// while another is idle: the freed work must reach the idle one at once, not at its
/// next poll (a minute here). Instances: B full (one in flight, hung), A holding the
/// work, C idle with takeovers off, so that B is the one to release.
async fn freed_work_reaches_an_idle_instance_when_the_releasing_one_is_full(db: Database) {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            async_instances: 0,
            lease_seconds: DEFAULT_LEASE_SECONDS,
            poll_interval_ms: 60_000,
            ..Default::default()
        },
    )
    .await;
    let process = HangProcess::new();
    let worker = serve(&mut env, &process).await;
    // Each execution is started before its instance: the instance's first claim, at
    // start-up, takes it (no wake-up is needed, and the poll is a minute).
    let started_then_claimed_by = |process_id: &'static str, instance: &'static str| {
        let (env, process, worker) = (&env, &process, &worker);
        async move {
            let options = ProcessStartOptions::new().global_attribute_pk_value(process_id);
            let exec = start(env, process, worker, process_id, options)
                .await
                .unwrap();
            let args: &[&str] = match instance {
                "instance-b" => &["--max-in-flight", "1"],
                _ => &[],
            };
            let spawned = env
                .spawn_async_process_with(ASYNC_INSTANCE_BIN, instance, args)
                .await;
            eventually("the first call to hang", SOON, || async {
                process.calls_of(&exec).len() == 1
            })
            .await;
            let tasks = env.tasks(&exec).await;
            assert_eq!(tasks[0].lease_owner.as_deref(), Some(instance), "{tasks:?}");
            (exec, spawned)
        }
    };
    let (_, full) = started_then_claimed_by("fills-b", "instance-b").await;
    let (exec, holder) = started_then_claimed_by("held-by-a", "instance-a").await;
    let idle = env
        .spawn_async_process_with(
            ASYNC_INSTANCE_BIN,
            "instance-c",
            &["--set", "async.liveness_timeout_ms=0"],
        )
        .await;
    eventually("the idle instance to register", SOON, || async {
        registered(&env).await.contains(&"instance-c".to_string())
    })
    .await;

    let killed_at = Instant::now();
    holder.kill().await;
    eventually(
        "the freed call to come again, from the idle instance",
        SOON,
        || async { process.calls_of(&exec).len() >= 2 },
    )
    .await;
    let taken_over = process.calls_of(&exec)[1].at - killed_at;
    assert!(
        taken_over < TAKEOVER_BOUND,
        "the idle instance took the freed work after {taken_over:?}"
    );
    let done = env
        .client
        .wait_for_process_completion("held-by-a", SOON)
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");
    applied_once(&env, &process, &exec, "held-by-a").await;
    process.release();
    full.kill().await;
    idle.kill().await;
    env.shutdown().await;
}

both_databases!(
    freed_work_reaches_an_idle_instance_when_the_releasing_one_is_full,
    sigkilled_instance_s_work_runs_elsewhere_within_two_seconds,
    a_live_instance_s_slow_call_keeps_its_lease,
    a_resumed_instance_applies_nothing_of_the_work_taken_from_it,
);
