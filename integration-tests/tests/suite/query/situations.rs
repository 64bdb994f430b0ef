//! The situation fields (`parked`, `backingOff`, `waitingOnTimer`, `waitingOnQueue`,
//! `deploymentName`, `deploymentVersion`, and `priority`, listed and grouped too) over executions that real workers put in each
//! situation: a call parked after a non-retryable answer, a call waiting out an hour's
//! backoff, a state waiting on an hour's timer and two queues (one of them received), a
//! paused execution (its timer set aside by the pause, which is not parked), and
//! executions on two registered deployments and on none. Each filter is checked for the
//! exact set of process ids it lists and counts.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{json, Value};
use xdb_integration_tests::processes::flaky::{FlakyConfig, FlakyProcess};
use xdb_integration_tests::processes::queue::{QueueProcess, QUEUE_A, QUEUE_B};
use xdb_integration_tests::worker_faults::{CallMatch, StateApiKind, WorkerFaults};
use xdb_integration_tests::{eventually, Database, XdbTestEnv};
use xdb_sdk::protocol::{
    paths, ProcessExecutionCountResponse, ProcessExecutionListResponse, WorkerDeployment,
};
use xdb_sdk::{Command, CommandRequest, ProcessStartOptions, WorkerService};

use super::{call, list_all};
use crate::common::*;

both_databases!(situation_fields_find_executions_by_what_their_tasks_and_states_hold);

/// Far enough ahead that nothing fires or retries while the test runs.
const LATER: Duration = Duration::from_secs(3600);

/// The process ids `tree` lists, and checks that `count` counts as many.
async fn matching(env: &XdbTestEnv, tree: Value) -> BTreeSet<String> {
    let listed = list_all(env, &json!({ "where": tree }), 2)
        .await
        .unwrap_or_else(|e| panic!("{tree}: {e:?}"));
    let counted: ProcessExecutionCountResponse = call(env, paths::COUNT, &json!({ "where": tree }))
        .await
        .unwrap();
    assert_eq!(counted.count, listed.len() as u64, "{tree}");
    listed.into_iter().collect()
}

fn ids(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| n.to_string()).collect()
}

async fn situation_fields_find_executions_by_what_their_tasks_and_states_hold(db: Database) {
    let mut env = XdbTestEnv::start(db).await;

    // Execute fails every attempt; the next one is an hour later. One execution's call
    // is answered as never able to succeed, which parks it.
    let flaky = FlakyProcess::new(FlakyConfig {
        failing_attempts: u32::MAX,
        maximum_attempts: 0,
        initial_interval: LATER,
        recover: false,
        after_timer: None,
    });
    let faults = WorkerFaults::new();
    let flaky_url = env
        .start_worker(faults.wrap(WorkerService::new().register(flaky.clone()).router()))
        .await;
    faults.refuse(
        CallMatch::state("FlakyState", StateApiKind::Execute).in_process("parked-1"),
        400,
        "UNKNOWN_STATE",
    );
    for id in ["parked-1", "retrying-1"] {
        let options = ProcessStartOptions::new().global_attribute_pk_value(id);
        start(&env, &flaky, &flaky_url, id, options).await.unwrap();
    }

    // One state waiting for an hour's timer and a message on each of two queues.
    let queues = QueueProcess::new(CommandRequest::all_of(vec![
        Command::timer(LATER),
        Command::local_queue(QUEUE_A),
        Command::local_queue(QUEUE_B),
    ]));
    let first = WorkerService::new().register(queues.clone());
    let first_url = env.start_worker(first.router()).await;
    let second = WorkerService::new().register(queues.clone());
    let second_url = env.start_worker(second.router()).await;
    let start_waiting = |id: &'static str, url: String, priority: u8| {
        let env = &env;
        let queues = &queues;
        async move {
            let options = ProcessStartOptions::new().priority(priority);
            let execution = start(env, queues, &url, id, options).await.unwrap();
            wait_state(env, &execution, "WaitQueuesState", 1, "WAITING_COMMANDS").await;
        }
    };
    start_waiting("waiting-1", first_url.clone(), 3).await;
    start_waiting("paused-1", first_url.clone(), 3).await;
    let deployment = |version: &str, worker_url: &str| WorkerDeployment {
        name: "shop".into(),
        version: version.into(),
        worker_url: worker_url.into(),
    };
    first
        .register_with(&env.client, deployment("v1", &first_url), false)
        .await
        .expect("v1 registered");
    start_waiting("v1-1", first_url.clone(), 1).await;
    second
        .register_with(&env.client, deployment("v2", &second_url), false)
        .await
        .expect("v2 registered");
    start_waiting("v2-1", second_url.clone(), 5).await;

    // waiting-1 receives its message on `a`; it still waits on `b` and the timer.
    env.client
        .publish_to_local_queue("waiting-1", QUEUE_A, json!("hello"), None)
        .await
        .expect("publish");
    eventually("waiting-1 to receive its message on a", SOON, || async {
        let view = states(&env, "waiting-1").await;
        view["states"][0]["waitingFor"]["localQueues"][0]["status"] == "RECEIVED"
    })
    .await;
    let (status, body) = post_raw(
        &env,
        paths::PAUSE,
        json!({ "processId": "paused-1" }).to_string(),
        Some("application/json"),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    eventually("parked-1's call to be parked", SOON, || async {
        states(&env, "parked-1").await["states"][0]["pendingCall"]["phase"] == "PARKED"
    })
    .await;
    eventually(
        "retrying-1's second attempt to be scheduled",
        SOON,
        || async {
            let call = &states(&env, "retrying-1").await["states"][0]["pendingCall"];
            call["attempt"] == 2 && call["phase"] == "SCHEDULED"
        },
    )
    .await;

    let queue_waiters = ["waiting-1", "paused-1", "v1-1", "v2-1"];
    let all = [
        "parked-1",
        "retrying-1",
        "waiting-1",
        "paused-1",
        "v1-1",
        "v2-1",
    ];
    let but = |left_out: &[&str]| -> BTreeSet<String> {
        ids(&all)
            .into_iter()
            .filter(|id| !left_out.contains(&id.as_str()))
            .collect()
    };
    let field =
        |name: &str, op: &str, value: Value| json!({"field": name, "op": op, "value": value});
    let cases = [
        (field("parked", "=", json!(true)), ids(&["parked-1"])),
        (field("parked", "!=", json!(true)), but(&["parked-1"])),
        (field("paused", "=", json!(true)), ids(&["paused-1"])),
        (field("backingOff", "=", json!(true)), ids(&["retrying-1"])),
        (field("backingOff", "=", json!(false)), but(&["retrying-1"])),
        // The paused execution's timer is set aside, not fired.
        (
            field("waitingOnTimer", "=", json!(true)),
            ids(&queue_waiters),
        ),
        (
            field("waitingOnTimer", "!=", json!(true)),
            ids(&["parked-1", "retrying-1"]),
        ),
        // waiting-1 received its message on `a`.
        (
            field("waitingOnQueue", "=", json!(QUEUE_A)),
            ids(&["paused-1", "v1-1", "v2-1"]),
        ),
        (
            field("waitingOnQueue", "=", json!(QUEUE_B)),
            ids(&queue_waiters),
        ),
        (
            json!({"field": "waitingOnQueue", "op": "IN", "values": ["A", "c"]}),
            ids(&[]),
        ),
        (
            json!({"not": {"field": "waitingOnQueue", "op": "IN", "values": [QUEUE_A]}}),
            ids(&["parked-1", "retrying-1", "waiting-1"]),
        ),
        // Executions run on the deployment whose registration names their worker URL,
        // whenever they started; the flaky worker's URL was never registered.
        (
            field("deploymentVersion", "=", json!("v1")),
            ids(&["waiting-1", "paused-1", "v1-1"]),
        ),
        (
            field("deploymentVersion", "!=", json!("v1")),
            ids(&["v2-1"]),
        ),
        (
            json!({"field": "deploymentVersion", "op": "IN", "values": ["v2", "v3"]}),
            ids(&["v2-1"]),
        ),
        (
            field("deploymentName", "=", json!("shop")),
            ids(&queue_waiters),
        ),
        (
            json!({"field": "deploymentName", "op": "IS NULL"}),
            ids(&["parked-1", "retrying-1"]),
        ),
        (
            json!({"and": [
                {"field": "deploymentVersion", "op": "IS NOT NULL"},
                {"field": "paused", "op": "=", "value": false},
                {"field": "waitingOnQueue", "op": "=", "value": QUEUE_A}
            ]}),
            ids(&["v1-1", "v2-1"]),
        ),
        (
            json!({"and": [
                {"field": "startTime", "op": ">=", "value": "-1h"},
                {"field": "startTime", "op": "<", "value": "+1m"},
                {"field": "processId", "op": "SUFFIX", "value": "-1"},
                {"field": "processId", "op": "CONTAINS", "value": "ing"}
            ]}),
            ids(&["retrying-1", "waiting-1"]),
        ),
        (field("startTime", "<", json!("-1h")), ids(&[])),
        // v1-1 started at priority 1, v2-1 at 5, the others at the default 3.
        (field("priority", "=", json!(1)), ids(&["v1-1"])),
        (field("priority", ">", json!(3)), ids(&["v2-1"])),
        (field("priority", "!=", json!(3)), ids(&["v1-1", "v2-1"])),
        (
            json!({"field": "priority", "op": "IN", "values": [3, 5]}),
            but(&["v1-1"]),
        ),
    ];
    for (tree, expected) in cases {
        assert_eq!(
            matching(&env, tree.clone()).await,
            expected,
            "{db:?}: {tree}"
        );
    }

    // Counted per state: each execution once, under the state it runs.
    let by_state = json!({"groupBy": {"field": "currentStateId"}});
    let counted: ProcessExecutionCountResponse = call(&env, paths::COUNT, &by_state).await.unwrap();
    let groups: BTreeSet<(String, u64)> = counted
        .groups
        .iter()
        .map(|g| (g.value.to_string(), g.count))
        .collect();
    let expected = BTreeSet::from([
        (json!("FlakyState").to_string(), 2),
        (json!("WaitQueuesState").to_string(), 4),
    ]);
    assert_eq!((counted.count, groups), (6, expected), "{db:?}");
    let by_priority = json!({"groupBy": {"field": "priority"}});
    let counted: ProcessExecutionCountResponse =
        call(&env, paths::COUNT, &by_priority).await.unwrap();
    let groups: BTreeSet<(String, u64)> = counted
        .groups
        .iter()
        .map(|g| (g.value.to_string(), g.count))
        .collect();
    let expected = BTreeSet::from([("1".into(), 1), ("3".into(), 4), ("5".into(), 1)]);
    assert_eq!(groups, expected, "{db:?}: groups are numbers");

    // Both lists mark the execution backing off, and only it: the plain one and the
    // filtered one.
    for body in [
        json!({}),
        json!({"where": {"field": "status", "op": "=", "value": "RUNNING"}}),
    ] {
        let listed: ProcessExecutionListResponse = call(&env, paths::LIST, &body).await.unwrap();
        let marked: Vec<(&str, i32)> = listed
            .executions
            .iter()
            .filter_map(|e| Some((e.process_id.as_str(), e.backing_off.as_ref()?.attempt)))
            .collect();
        assert_eq!(listed.executions.len(), all.len(), "{body}");
        let priorities: BTreeSet<(&str, u8)> = listed
            .executions
            .iter()
            .filter(|e| e.priority != 3)
            .map(|e| (e.process_id.as_str(), e.priority))
            .collect();
        assert_eq!(
            priorities,
            BTreeSet::from([("v1-1", 1), ("v2-1", 5)]),
            "{db:?} {body}"
        );
        assert!(
            matches!(marked.as_slice(), [("retrying-1", attempt)] if *attempt >= 2),
            "{db:?} {body}: {marked:?}"
        );
    }
    env.shutdown().await;
}
