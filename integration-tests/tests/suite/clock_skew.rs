//! One clock, the database's: service instances whose clocks run 5 s ahead of or behind
//! the database's never fire a timer or a process timeout early, and never take a live
//! lease from each other.
//!
//! The real `xdb-api-service` and `xdb-async-service` binaries run under Debian's
//! `faketime` (wall clock shifted, monotonic clock not); the worker runs in this test's
//! process, whose clock is the database server's (same machine). Each worker call
//! naps longer than the (short) lease, so leases live only by renewal while both async
//! instances claim. A timer is written by whichever instance completes its waitUntil
//! and fired by whichever claims it; the API instance writes the process timeout.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use xdb_integration_tests::metrics::{sample_sum, scrape};
use xdb_integration_tests::processes::Recorder;
use xdb_integration_tests::skewed::{service_binaries, SkewedService};
use xdb_integration_tests::{eventually, Database, EnvOptions, XdbTestEnv};
use xdb_sdk::*;

both_databases!(
    instances_behind_and_ahead_never_fire_early_nor_steal_leases_api_behind,
    instances_behind_and_ahead_never_fire_early_nor_steal_leases_api_ahead,
);

/// Processes with a timer, run at once.
const PROCESSES: usize = 6;
/// Their timer.
const TIMER: Duration = Duration::from_secs(2);
/// How long each worker call takes: longer than the lease.
const NAP: Duration = Duration::from_millis(1500);
const LEASE_SECONDS: &str = "1";
/// A poll interval of a second: timers are claimed up to a second ahead and held until
/// due, the hold that an instance ahead of the database would cut short by its own clock.
const POLL_INTERVAL_MS: &str = "1000";
/// The process timeout of the probe process, whose timer never fires first.
const PROCESS_TIMEOUT: Duration = Duration::from_secs(3);
/// A timer or timeout that fires this much after its due time is late by a skew, not by
/// load (lateness is normally a few milliseconds; the skew is 5 s).
const LATE: TimeDelta = TimeDelta::milliseconds(4500);

async fn instances_behind_and_ahead_never_fire_early_nor_steal_leases_api_behind(db: Database) {
    skewed_instances(db, "-5s").await
}

async fn instances_behind_and_ahead_never_fire_early_nor_steal_leases_api_ahead(db: Database) {
    skewed_instances(db, "+5s").await
}

/// The API service at `api_skew`, two async instances at +5 s and -5 s.
async fn skewed_instances(db: Database, api_skew: &str) {
    let options = EnvOptions {
        async_instances: 0,
        ..Default::default()
    };
    let mut env = XdbTestEnv::start_with(db, options).await;
    let (api_binary, async_binary) = service_binaries().await;
    let url = env.db().url().to_string();
    let api = SkewedService::spawn(
        api_binary,
        api_skew,
        &["--database-url".into(), url.clone()],
        "XDB API service listening",
    )
    .await;
    let mut instances = Vec::new();
    for (skew, id) in [("+5s", "ahead"), ("-5s", "behind")] {
        let args = [
            "--database-url",
            &url,
            "--instance-id",
            id,
            "--lease-seconds",
            LEASE_SECONDS,
            "--poll-interval-ms",
            POLL_INTERVAL_MS,
            "--pool-size",
            "4",
        ]
        .map(String::from);
        let service =
            SkewedService::spawn(async_binary, skew, &args, "XDB async service started").await;
        instances.push((skew, service));
    }
    expect_skew(&api, api_skew).await;
    for (skew, service) in &instances {
        expect_skew(service, skew).await;
    }

    let process = NapProcess::default();
    let worker = env
        .start_worker(WorkerService::new().register(process.clone()).router())
        .await;
    let client = Client::new(api.url.clone()).with_request_timeout(Duration::from_secs(30));
    let definition = ProcessDefinition::new(process.clone());
    let mut executions = Vec::new();
    for n in 0..PROCESSES {
        let id = format!("nap-{n}");
        let input = TIMER.as_millis() as u64;
        let execution = client
            .start_process_with(&definition, &id, Some(&worker), input, Default::default())
            .await
            .expect("start");
        executions.push(execution);
    }
    // The probe's timer is far off: its process timeout ends it.
    let probe_started = Utc::now();
    let probe = client
        .start_process_with(
            &definition,
            "timeout-probe",
            Some(&worker),
            60_000u64,
            ProcessStartOptions::new().timeout(PROCESS_TIMEOUT),
        )
        .await
        .expect("start the probe");
    let probe_answered = Utc::now();
    let timeout_task = env
        .tasks(&probe)
        .await
        .into_iter()
        .find(|task| task.task_type == "PROCESS_TIMEOUT")
        .expect("the probe's timeout task");
    let due = TimeDelta::from_std(PROCESS_TIMEOUT).unwrap();
    assert!(
        timeout_task.fire_at >= probe_started + due && timeout_task.fire_at <= probe_answered + due,
        "the process timeout is due at {}, not {PROCESS_TIMEOUT:?} after the start \
         ({probe_started} .. {probe_answered}) by the database's clock",
        timeout_task.fire_at
    );

    let closed = |execution: String, status: &'static str| {
        let env = &env;
        async move {
            env.process_row(&execution)
                .await
                .is_some_and(|row| row.status == status)
        }
    };
    let deadline = Duration::from_secs(60);
    eventually("the probe to time out", deadline, || {
        closed(probe.clone(), "TIMEOUT")
    })
    .await;
    // At most a poll (25 ms) after it timed out.
    let seen = Utc::now();
    assert!(
        seen >= probe_started + due,
        "the probe timed out early: seen at {seen}, started at {probe_started}"
    );
    assert!(
        seen <= probe_answered + due + LATE,
        "the probe timed out late: seen at {seen}, started at {probe_answered}"
    );
    for execution in &executions {
        eventually("every process to complete", deadline, || {
            closed(execution.clone(), "COMPLETED")
        })
        .await;
    }

    let calls = process.calls.all();
    let timer = TimeDelta::from_std(TIMER).unwrap();
    for execution in &executions {
        let of = |api: &str| {
            calls
                .iter()
                .filter(|call| call.context.process_execution_id == *execution && call.api == api)
                .collect::<Vec<_>>()
        };
        let (wait_until, execute) = (of("waitUntil"), of("execute"));
        assert_eq!((wait_until.len(), execute.len()), (1, 1), "{calls:#?}");
        let answered = wait_until[0].answered.expect("waitUntil answered");
        let fired = execute[0].arrived;
        assert!(
            fired >= answered + timer,
            "{execution}: the timer of {TIMER:?} fired {:?} after waitUntil answered",
            fired - answered
        );
        assert!(
            fired <= answered + timer + LATE,
            "{execution}: the timer of {TIMER:?} fired {:?} after waitUntil answered",
            fired - answered
        );
    }
    // No lease was taken from a live instance: no call was made twice.
    let mut made: HashMap<(String, u32), usize> = HashMap::new();
    for call in &calls {
        *made
            .entry((call.context.idempotency_key.clone(), call.context.attempt))
            .or_default() += 1;
    }
    let twice: Vec<_> = made.iter().filter(|(_, count)| **count > 1).collect();
    assert!(twice.is_empty(), "calls made more than once: {twice:?}");
    assert!(
        calls.iter().all(|call| call.context.attempt == 1),
        "no call failed, so none was retried: {calls:#?}"
    );
    drop(instances);
    drop(api);
    env.shutdown().await;
}

/// The service's clock really is `skew` off (by its log's timestamps), the store
/// measured it (`xdb_clock_offset_seconds`), and it warned operators.
async fn expect_skew(service: &SkewedService, skew: &str) {
    let seconds: f64 = skew
        .trim_end_matches('s')
        .parse()
        .expect("a skew in seconds");
    let logged = service.logged_skew().num_milliseconds() as f64 / 1000.0;
    assert!(
        (seconds - 2.0..=seconds + 0.1).contains(&logged),
        "{skew}: the log's clock was {logged} s off"
    );
    let offset = sample_sum(&scrape(&service.url).await, "xdb_clock_offset_seconds", &[])
        .expect("xdb_clock_offset_seconds is exported");
    assert!(
        (offset - seconds).abs() < 0.5,
        "{skew}: the store measured an offset of {offset} s"
    );
    let side = if seconds > 0.0 { "ahead of" } else { "behind" };
    let warned = service.log_lines_with(&format!("s {side} the database's"));
    assert!(!warned.is_empty(), "{skew}: no warning about the clock");
}

/// One state: waitUntil naps, then asks for a timer of the input's milliseconds;
/// execute naps, then completes. Every call is recorded.
#[derive(Clone, Default)]
struct NapProcess {
    calls: Recorder<Call>,
}

#[derive(Debug, Clone)]
struct Call {
    api: &'static str,
    /// When the call reached the worker.
    arrived: DateTime<Utc>,
    /// When the worker answered (waitUntil only: what its timer counts from).
    answered: Option<DateTime<Utc>>,
    context: Context,
}

impl Process for NapProcess {
    fn state_schema(&self) -> StateSchema {
        StateSchema::with_starting_state(NapState(self.clone()))
    }
}

struct NapState(NapProcess);

#[async_trait]
impl AsyncState for NapState {
    /// The timer's delay, in milliseconds.
    type Input = u64;
    const HAS_WAIT_UNTIL: bool = true;

    async fn wait_until(
        &self,
        ctx: &Context,
        timer_ms: u64,
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<CommandRequest> {
        let arrived = Utc::now();
        tokio::time::sleep(NAP).await;
        self.0.calls.push(Call {
            api: "waitUntil",
            arrived,
            answered: Some(Utc::now()),
            context: ctx.clone(),
        });
        Ok(CommandRequest::all_of(vec![Command::timer(
            Duration::from_millis(timer_ms),
        )]))
    }

    async fn execute(
        &self,
        ctx: &Context,
        _timer_ms: u64,
        _results: &CommandResults,
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        self.0.calls.push(Call {
            api: "execute",
            arrived: Utc::now(),
            answered: None,
            context: ctx.clone(),
        });
        tokio::time::sleep(NAP).await;
        Ok(StateDecision::graceful_complete_process(None::<()>))
    }
}
