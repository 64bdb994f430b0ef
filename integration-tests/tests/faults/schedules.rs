//! Schedules under faults: a cron spec firing every second runs for
//! `XDB_FAULTS_SCHEDULE_SECONDS` (default 120) while three async instances fire it, one
//! of them SIGKILLed (and replaced) every 5 s, and the database server restarts once
//! halfway. Afterwards the database must show every nominal second from the first fire
//! time to the stop started exactly once: one firing row, one execution under the
//! firing's derived process id, started no earlier than its nominal time, completed by
//! the worker. How late the firings ran is reported, bounded only loosely: a killed
//! lease holder and the restart delay them.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use xdb_config::QueueMode;
use xdb_integration_tests::{db_server, eventually, Database, EnvOptions, XdbTestEnv};
use xdb_protocol::{firing_process_id, paths};
use xdb_sdk::*;

use super::{ASYNC_INSTANCE_BIN, ONE_AT_A_TIME};

const SCHEDULE_ID: &str = "every-second";
/// Async instances running at any time.
const INSTANCES: usize = 3;
/// One instance is SIGKILLed (and replaced) this often.
const KILL_EVERY: Duration = Duration::from_secs(5);
/// Missed firings this old still run: longer than any outage here, so none is dropped.
const CATCH_UP_WINDOW_SECONDS: u32 = 60;
/// Longest a firing may start after its nominal time: the faults delay firings by a few
/// seconds (a killed lease holder's 5-second lease, the database's restart).
const LATENESS_BOUND: Duration = Duration::from_secs(30);
/// Longest the firings and their executions may take to settle after the faults.
const SETTLE: Duration = Duration::from_secs(120);

fn run_for() -> Duration {
    Duration::from_secs(
        std::env::var("XDB_FAULTS_SCHEDULE_SECONDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(120),
    )
}

/// When the worker was first called for each process id, on this machine's clock (the
/// database server's too: the suite restarts it, so it runs here).
type FirstCalls = Arc<Mutex<HashMap<String, DateTime<Utc>>>>;

/// What each firing starts: one state that completes the process at once.
struct TickProcess {
    calls: FirstCalls,
}

impl Process for TickProcess {
    fn state_schema(&self) -> StateSchema {
        StateSchema::with_starting_state(TickState {
            calls: self.calls.clone(),
        })
    }
}

struct TickState {
    calls: FirstCalls,
}

#[async_trait]
impl AsyncState for TickState {
    type Input = ();

    async fn execute(
        &self,
        ctx: &Context,
        _input: (),
        _results: &CommandResults,
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        let now = Utc::now();
        self.calls
            .lock()
            .expect("the calls' lock")
            .entry(ctx.process_id.clone())
            .and_modify(|first| *first = (*first).min(now))
            .or_insert(now);
        Ok(StateDecision::graceful_complete_process(json!("ticked")))
    }
}

/// Posts `body` to `path` until the API service answers 200 (the database may be coming
/// back from its restart); the answer.
async fn call_until_ok(env: &XdbTestEnv, path: &str, body: &Value) -> Value {
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = client
            .post(format!("{}{path}", env.api_url()))
            .json(body)
            .send()
            .await;
        let failure = match answer {
            Ok(response) if response.status().is_success() => {
                return response.json().await.expect("a JSON answer")
            }
            Ok(response) => format!(
                "{}: {}",
                response.status(),
                response.text().await.unwrap_or_default()
            ),
            Err(error) => error.to_string(),
        };
        assert!(Instant::now() < deadline, "{path}: {failure}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The database server's clock, in ms since the Unix epoch.
async fn database_now_ms(env: &XdbTestEnv) -> i64 {
    let sql = match env.database() {
        Database::Postgres => {
            "SELECT CAST(floor(extract(epoch FROM clock_timestamp()) * 1000) AS BIGINT)"
        }
        Database::MySql => "SELECT CAST(FLOOR(UNIX_TIMESTAMP(NOW(3)) * 1000) AS SIGNED)",
    };
    env.count(sql, &[]).await
}

/// Firings of the schedule meeting `condition` (SQL).
async fn count_firings(env: &XdbTestEnv, condition: &str) -> i64 {
    env.count(
        &format!(
            "SELECT count(*) FROM xdb_sys_schedule_firings WHERE schedule_id = $1 AND {condition}"
        ),
        &[SCHEDULE_ID.into()],
    )
    .await
}

async fn schedule_fires_each_time_once(db: Database) {
    let _serial = ONE_AT_A_TIME.lock().await;
    let run_for = run_for();
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            async_instances: 0,
            lease_seconds: 2.0,
            queue_mode: QueueMode::Database,
            ..Default::default()
        },
    )
    .await;
    let calls = FirstCalls::default();
    let process = TickProcess {
        calls: calls.clone(),
    };
    let process_type = process.process_type();
    let worker = env
        .start_worker(WorkerService::new().register(process).router())
        .await;
    let mut instances = Vec::new();
    for i in 0..INSTANCES {
        instances.push(
            env.spawn_async_process(ASYNC_INSTANCE_BIN, &format!("schedule-{i}"))
                .await,
        );
    }
    let created = call_until_ok(
        &env,
        paths::SCHEDULE_CREATE,
        &json!({
            "scheduleId": SCHEDULE_ID,
            // Six fields, seconds first: every second.
            "spec": {"cron": {"expression": "* * * * * *", "timeZone": "UTC"}},
            "start": {
                "processType": process_type,
                "workerUrl": worker,
                "startStateId": TickState::id(),
                "startStateConfig": {"skipWaitUntil": true},
            },
            "overlapPolicy": "ALLOW_ALL",
            "catchupWindowSeconds": CATCH_UP_WINDOW_SECONDS,
        }),
    )
    .await;
    let first = created["schedule"]["nextFireTimestampMs"]
        .as_i64()
        .unwrap_or_else(|| panic!("a first fire time: {created}"));
    assert_eq!(first % 1000, 0, "on the second: {created}");

    // The faults: one instance SIGKILLed and replaced every 5 s, the database server
    // restarted once halfway.
    let began = Instant::now();
    let mut kills = 0u32;
    let mut restarted = false;
    let mut step = 0u32;
    loop {
        step += 1;
        let at = began + KILL_EVERY * step;
        if at > began + run_for {
            break;
        }
        tokio::time::sleep_until(at.into()).await;
        let victim = instances.remove(step as usize % instances.len());
        victim.kill().await;
        kills += 1;
        instances.push(
            env.spawn_async_process(
                ASYNC_INSTANCE_BIN,
                &format!("schedule-{}", INSTANCES as u32 + step),
            )
            .await,
        );
        if !restarted && began.elapsed() >= run_for / 2 {
            restarted = true;
            tokio::task::spawn_blocking(move || db_server::restart(db))
                .await
                .expect("the restart runs");
            env.reconnect_sql().await;
        }
    }
    tokio::time::sleep_until((began + run_for).into()).await;
    assert!(
        restarted,
        "the database restarted (run for longer than 10 s)"
    );
    let stop = database_now_ms(&env).await;

    // Every firing up to the stop recorded, then no more.
    eventually(
        "the firings up to the stop to be recorded",
        SETTLE,
        || async { count_firings(&env, &format!("nominal_ms >= {stop}")).await > 0 },
    )
    .await;
    let paused = call_until_ok(
        &env,
        paths::SCHEDULE_PAUSE,
        &json!({"scheduleId": SCHEDULE_ID, "reason": "the faults are over"}),
    )
    .await;
    assert_eq!(paused["schedule"]["paused"], true, "{paused}");
    eventually("every recorded firing to be started", SETTLE, || async {
        count_firings(&env, "outcome IN ('PENDING', 'BUFFERED')").await == 0
    })
    .await;
    eventually("every firing's execution to complete", SETTLE, || async {
        env.count(
            "SELECT count(*) FROM xdb_sys_process_executions WHERE status = 'RUNNING'",
            &[],
        )
        .await
            == 0
    })
    .await;

    // The firings: one per nominal second from the first to the last, each started.
    let firings = env
        .query(
            "SELECT nominal_ms, process_id, fired_by, outcome, process_execution_id, reason \
             FROM xdb_sys_schedule_firings WHERE schedule_id = $1 ORDER BY nominal_ms",
            &[SCHEDULE_ID.into()],
        )
        .await;
    let last = firings.last().map(|f| f.i64(0)).unwrap_or(first);
    assert!(
        last >= stop,
        "firings recorded up to the stop {stop}: last {last}"
    );
    let nominal: Vec<i64> = firings.iter().map(|f| f.i64(0)).collect();
    let expected: Vec<i64> = (first..=last).step_by(1000).collect();
    if nominal != expected {
        let missing: Vec<i64> = expected
            .iter()
            .filter(|t| !nominal.contains(t))
            .copied()
            .collect();
        let extra: Vec<i64> = nominal
            .iter()
            .filter(|t| !expected.contains(t))
            .copied()
            .collect();
        panic!(
            "one firing per second from {first} to {last}: {} missing {missing:?}, {} extra {extra:?}",
            missing.len(),
            extra.len()
        );
    }
    let mut wrong = Vec::new();
    for firing in &firings {
        let at = firing.i64(0);
        if firing.text(1) != firing_process_id(SCHEDULE_ID, at)
            || firing.text(2) != "SPEC"
            || firing.text(3) != "STARTED"
            || firing.is_null(4)
        {
            wrong.push(format!("{firing:?}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "firings not started as expected: {wrong:#?}"
    );

    // The executions: exactly one per firing, under its process id, none early.
    let executions = env
        .query(
            "SELECT process_id, id, start_time, status FROM xdb_sys_process_executions \
             ORDER BY process_id, start_time",
            &[],
        )
        .await;
    let mut by_process: BTreeMap<String, Vec<_>> = BTreeMap::new();
    for execution in &executions {
        by_process
            .entry(execution.text(0))
            .or_default()
            .push(execution);
    }
    let mut problems = Vec::new();
    let mut max_late_ms = 0i64;
    for firing in &firings {
        let at = firing.i64(0);
        let process_id = firing.text(1);
        match by_process.remove(&process_id).as_deref() {
            Some([execution]) => {
                let started = execution.time(2);
                let late_ms = started.timestamp_micros() / 1000 - at;
                if started.timestamp_micros() < at * 1000 {
                    problems.push(format!("{process_id} started early, at {started}"));
                }
                max_late_ms = max_late_ms.max(late_ms);
                if execution.text(1) != firing.text(4) {
                    problems.push(format!(
                        "{process_id}: the firing names execution {}, the process ran {}",
                        firing.text(4),
                        execution.text(1)
                    ));
                }
                // The worker's call came after the start: on this machine's clock, no
                // estimate of the database's, it too is not before the nominal time.
                match calls.lock().expect("the calls' lock").get(&process_id) {
                    Some(called) if called.timestamp_micros() < at * 1000 => problems.push(
                        format!("{process_id}'s worker was called early, at {called}"),
                    ),
                    Some(_) => {}
                    None => problems.push(format!("{process_id}'s worker was never called")),
                }
                if execution.text(3) != "COMPLETED" {
                    problems.push(format!("{process_id} is {}", execution.text(3)));
                }
            }
            Some(several) if several.len() > 1 => {
                problems.push(format!("{process_id} started {} times", several.len()))
            }
            _ => problems.push(format!("{process_id} never started")),
        }
    }
    for (process_id, rows) in &by_process {
        problems.push(format!(
            "{process_id}: {} executions of no firing",
            rows.len()
        ));
    }
    assert!(
        problems.is_empty(),
        "{} problems over {} firings: {problems:#?}",
        problems.len(),
        firings.len()
    );
    assert!(
        max_late_ms < LATENESS_BOUND.as_millis() as i64,
        "a firing started {max_late_ms} ms late"
    );
    eprintln!(
        "schedule-faults-report db={db:?} firings={} kills={kills} db-restarts=1 \
         max-late-ms={max_late_ms} seconds={}",
        firings.len(),
        run_for.as_secs()
    );
    for instance in instances {
        instance.kill().await;
    }
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_schedule_faults_fire_each_time_once() {
    schedule_fires_each_time_once(Database::Postgres).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_schedule_faults_fire_each_time_once() {
    schedule_fires_each_time_once(Database::MySql).await
}
