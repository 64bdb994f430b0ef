//! Running-execution limits through the API, the async service and a real worker: 500
//! starts against at most 5 running per key over 10 keys, on two async instances (OS
//! processes), each SIGKILLed in turn (after a quarter and after half of the executions
//! completed) and replaced. At no sampled moment do more than 5 executions of a key run,
//! neither as the worker sees them nor as the database says (every 50 ms); waiting ones
//! are PENDING; all complete; no slot is left behind.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use xdb_integration_tests::{Database, EnvOptions, XdbTestEnv};
use xdb_protocol::paths;
use xdb_sdk::*;

use crate::common::*;

both_databases!(a_running_limit_per_key_holds_while_an_instance_is_killed);

// An admitted execution's tasks come back as row changes, through the CDC pipeline.
pulsar_mode_too!(a_running_limit_per_key_holds_while_an_instance_is_killed);

const LIMIT: usize = 5;
const KEYS: usize = 10;
const EXECUTIONS: usize = 500;
/// How long each execution runs: its waitUntil's timer.
const RUNS_FOR: Duration = Duration::from_millis(300);

/// The executions running as the worker sees them: from their first call (waitUntil)
/// to their last (execute), by key; a repeated call of one changes nothing.
#[derive(Debug, Clone, Default)]
struct KeyedProcess {
    seen: Arc<Mutex<Seen>>,
}

#[derive(Debug, Default)]
struct Seen {
    running: BTreeMap<String, BTreeSet<String>>,
    most: usize,
    done: BTreeSet<String>,
}

/// `run-<key>-<n>` → `<key>`.
fn key_of(process_id: &str) -> String {
    process_id.split('-').nth(1).unwrap_or_default().to_string()
}

impl Process for KeyedProcess {
    fn state_schema(&self) -> StateSchema {
        StateSchema::with_starting_state(KeyedState(self.clone()))
    }
}

struct KeyedState(KeyedProcess);

#[async_trait]
impl AsyncState for KeyedState {
    type Input = ();
    const HAS_WAIT_UNTIL: bool = true;

    async fn wait_until(
        &self,
        ctx: &Context,
        _input: (),
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<CommandRequest> {
        let mut seen = self.0.seen.lock().unwrap();
        let running = seen.running.entry(key_of(&ctx.process_id)).or_default();
        running.insert(ctx.process_execution_id.clone());
        let now = running.len();
        seen.most = seen.most.max(now);
        Ok(CommandRequest::all_of(vec![Command::timer(RUNS_FOR)]))
    }

    async fn execute(
        &self,
        ctx: &Context,
        _input: (),
        _results: &CommandResults,
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        let mut seen = self.0.seen.lock().unwrap();
        if let Some(running) = seen.running.get_mut(&key_of(&ctx.process_id)) {
            running.remove(&ctx.process_execution_id);
        }
        seen.done.insert(ctx.process_id.clone());
        Ok(StateDecision::graceful_complete_process(json!(null)))
    }
}

/// Running executions by key as the database has them, PENDING ones (held by a pause
/// of the limit's own) left out; no operator pauses anything here.
async fn running_in_database(env: &XdbTestEnv) -> BTreeMap<String, usize> {
    let rows = env
        .sql()
        .query(
            "SELECT process_id FROM xdb_sys_process_executions \
             WHERE process_type = 'KeyedProcess' AND status = 'RUNNING' AND paused IS NULL",
            &[],
        )
        .await;
    let mut by_key = BTreeMap::new();
    for row in rows {
        *by_key.entry(key_of(&row.text(0))).or_insert(0) += 1;
    }
    by_key
}

async fn a_running_limit_per_key_holds_while_an_instance_is_killed(db: Database) {
    let process = KeyedProcess::default();
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            async_instances: 0,
            ..Default::default()
        },
    )
    .await;
    let worker = serve(&mut env, &process).await;
    let (status, entry) = call(
        &env,
        paths::FLOW_LIMITS_SET,
        json!({"processType": "KeyedProcess", "override": {"maxRunningExecutions": LIMIT}}),
    )
    .await;
    assert_eq!(status, 200, "{entry}");
    assert_eq!(entry["effective"]["maxRunningExecutions"], json!(LIMIT));
    // A state cannot limit running executions.
    let (status, refused) = call(
        &env,
        paths::FLOW_LIMITS_SET,
        json!({"processType": "KeyedProcess", "stateId": "KeyedState",
               "override": {"maxRunningExecutions": 1}}),
    )
    .await;
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused
            .to_string()
            .contains("override.maxRunningExecutions"),
        "{refused}"
    );

    // Every start is in before any instance runs: most of them wait.
    for i in 0..EXECUTIONS {
        let id = format!("run-k{}-{i}", i % KEYS);
        let options = ProcessStartOptions::new().concurrency_key(format!("k{}", i % KEYS));
        start(&env, &process, &worker, &id, options).await.unwrap();
    }
    let (status, listed) = call(&env, paths::LIST, json!({"pageSize": 1000})).await;
    assert_eq!(status, 200, "{listed}");
    let pending = listed["executions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["pending"] == json!(true))
        .count();
    assert_eq!(pending, EXECUTIONS - LIMIT * KEYS, "{listed}");
    let (_, waiting) = call(
        &env,
        paths::DESCRIBE,
        json!({"processId": format!("run-k0-{}", KEYS * LIMIT)}),
    )
    .await;
    assert_eq!(waiting["paused"]["pendingOnKey"], json!("k0"), "{waiting}");

    let mut instances = vec![
        env.spawn_async_process(ASYNC_INSTANCE_BIN, "runs-1").await,
        env.spawn_async_process(ASYNC_INSTANCE_BIN, "runs-2").await,
    ];
    // After a quarter, then half, of the executions completed, the oldest instance is
    // SIGKILLed and another takes its place.
    let mut kills_at = vec![EXECUTIONS / 2, EXECUTIONS / 4];
    let mut kills = 0;
    let mut most_in_database = 0;
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let done = process.seen.lock().unwrap().done.len();
        if done == EXECUTIONS {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{done} of {EXECUTIONS} done after 180 s"
        );
        let running = running_in_database(&env).await;
        most_in_database = most_in_database.max(running.values().copied().max().unwrap_or(0));
        if kills_at.last().is_some_and(|at| done >= *at) {
            kills_at.pop();
            instances.remove(0).kill().await;
            kills += 1;
            let id = format!("runs-{}", kills + 2);
            instances.push(env.spawn_async_process(ASYNC_INSTANCE_BIN, &id).await);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let most_at_worker = process.seen.lock().unwrap().most;
    println!(
        "run-limit-report db={db:?} executions={EXECUTIONS} keys={KEYS} limit={LIMIT} \
         kills={kills} most_at_worker={most_at_worker} most_in_database={most_in_database}"
    );
    assert_eq!(kills, 2, "both instances were killed");
    assert!(most_at_worker <= LIMIT, "{most_at_worker} running at once");
    assert_eq!(most_at_worker, LIMIT, "the key's slots were all used");
    assert!(
        most_in_database <= LIMIT,
        "{most_in_database} running at once"
    );
    // Every execution completed; no slot is held by anything.
    eventually_closed(&env).await;
    env.shutdown().await;
}

/// Waits until no execution of the type is RUNNING and every slot's execution is closed.
async fn eventually_closed(env: &XdbTestEnv) {
    xdb_integration_tests::eventually("every execution closed", SOON, || async {
        let rows = env
            .sql()
            .query(
                "SELECT COUNT(*) FROM xdb_sys_run_slots s \
                 JOIN xdb_sys_process_executions p ON p.id = s.process_execution_id \
                 WHERE p.status = 'RUNNING'",
                &[],
            )
            .await;
        rows[0].i64(0) == 0
    })
    .await;
    let rows = env
        .sql()
        .query(
            "SELECT COUNT(*) FROM xdb_sys_process_executions \
             WHERE process_type = 'KeyedProcess' AND status = 'COMPLETED'",
            &[],
        )
        .await;
    assert_eq!(rows[0].i64(0), EXECUTIONS as i64);
}
