//! Pulsar CDC mode: an instance SIGKILLed while it holds a message (its worker call in
//! flight, the message unacknowledged) loses it to another instance through the broker's
//! redelivery alone, again and again.

use std::time::{Duration, Instant};

use xdb_config::QueueMode;
use xdb_integration_tests::processes::hang::HangProcess;
use xdb_integration_tests::{eventually, AsyncProcess, Database, EnvOptions, XdbTestEnv};
use xdb_sdk::protocol::ProcessStatus;
use xdb_sdk::ProcessStartOptions;

use crate::common::*;

/// `p`-th percentile (nearest rank) of `sorted`.
fn percentile(sorted: &[Duration], p: usize) -> Duration {
    let rank = (sorted.len() * p).div_ceil(100).max(1);
    sorted[rank - 1]
}

/// Twenty times: a process's first worker call hangs on the instance whose change event
/// brought it, that instance is SIGKILLed, and the call comes again from the other
/// instance. The sweep for tasks without events is off, so only the broker's
/// redelivery of the dead consumer's unacknowledged message can bring it: the other
/// instance finds the dead instance's lease, publishes a timer for its expiry (2 s at
/// most) and runs the task then. A replacement instance (a new id, as a new pod) starts
/// after each repetition.
async fn sigkilled_instance_s_unacknowledged_message_is_redelivered_every_time(db: Database) {
    const REPETITIONS: usize = 20;
    let lease = Duration::from_secs(2);
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            async_instances: 0,
            lease_seconds: lease.as_secs_f64(),
            // Off (0): nothing but the redelivered message can run a task again.
            pulsar_sweep_after_ms: 0,
            queue_mode: QueueMode::Pulsar,
            ..Default::default()
        },
    )
    .await;
    let process = HangProcess::new();
    let worker = serve(&mut env, &process).await;
    let mut started = 0;
    let mut instances: Vec<(String, AsyncProcess)> = Vec::new();
    for _ in 0..2 {
        started += 1;
        let id = format!("instance-{started}");
        instances.push((
            id.clone(),
            env.spawn_async_process(ASYNC_INSTANCE_BIN, &id).await,
        ));
    }

    let mut takeovers = Vec::new();
    let mut execs = Vec::new();
    for i in 0..REPETITIONS {
        let process_id = format!("takeover-{i}");
        let exec = start(
            &env,
            &process,
            &worker,
            &process_id,
            ProcessStartOptions::new().global_attribute_pk_value(format!("t{i}")),
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
        let holder = instances
            .iter()
            .position(|(id, _)| *id == owner)
            .unwrap_or_else(|| panic!("{owner} is not a live instance"));
        let (_, doomed) = instances.remove(holder);
        let killed_at = Instant::now();
        doomed.kill().await;

        eventually(
            "the call to come again from the other instance",
            lease + Duration::from_secs(10),
            || async { process.calls_of(&exec).len() >= 2 },
        )
        .await;
        let calls = process.calls_of(&exec);
        takeovers.push(calls[1].at - killed_at);
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
        execs.push(exec);

        started += 1;
        let id = format!("instance-{started}");
        instances.push((
            id.clone(),
            env.spawn_async_process(ASYNC_INSTANCE_BIN, &id).await,
        ));
    }

    let mut sorted = takeovers.clone();
    sorted.sort();
    let ms = |d: Duration| d.as_millis();
    eprintln!(
        "takeover after SIGKILL ({REPETITIONS} runs, lease {lease:?}, sweep off): min {} ms, \
         p50 {} ms, p90 {} ms, max {} ms; all: {:?} ms",
        ms(sorted[0]),
        ms(percentile(&sorted, 50)),
        ms(percentile(&sorted, 90)),
        ms(sorted[REPETITIONS - 1]),
        takeovers.iter().map(|d| ms(*d)).collect::<Vec<_>>()
    );
    // The killed instance's lease must run out first (it was renewed every third of
    // it); then a timer message brings the task back, late by a broker tick at most.
    assert!(
        sorted[REPETITIONS - 1] < lease + Duration::from_secs(3),
        "{sorted:?}"
    );

    for (i, exec) in execs.iter().enumerate() {
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
        assert_eq!(
            env.entity_row(&format!("t{i}"))
                .await
                .and_then(|row| row.note)
                .as_deref(),
            Some("done")
        );
    }
    // The held calls end; the instances go before their database does.
    process.release();
    for (_, instance) in instances {
        instance.kill().await;
    }
    env.shutdown().await;
}

both_databases!(sigkilled_instance_s_unacknowledged_message_is_redelivered_every_time);
