//! RPC: synchronous worker calls in the transaction that holds the requested locks.

use std::time::Duration;

use serde_json::json;
use xdb_integration_tests::processes::entity::*;
use xdb_integration_tests::{Database, XdbTestEnv};
use xdb_samples::email::{EmailKind, EmailOutbox};
use xdb_samples::sample_router;
use xdb_samples::user_signup::{process_id, start_user_signup, verify_by_rpc, Form};
use xdb_sdk::protocol::*;
use xdb_sdk::{ProcessDefinition, ProcessStartOptions};

use crate::common::*;

async fn signup_verified_by_rpc(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let outbox = EmailOutbox::new();
    let worker = env
        .start_worker(sample_router(outbox.clone(), Duration::from_secs(60)))
        .await;
    let form = Form {
        email: "gus@example.com".into(),
        name: None,
    };
    let exec = start_user_signup(&env.client, Some(&worker), "gus", &form)
        .await
        .unwrap();
    wait_state(&env, &exec, "VerifyState", 1, "WAITING_COMMANDS").await;
    let answer = verify_by_rpc(&env.client, "gus", "email")
        .await
        .expect("rpc");
    assert_eq!(answer, "done");
    // The RPC's writes committed with its answer.
    let user = env.user_row("gus").await.unwrap();
    assert_eq!(user.status.as_deref(), Some("verified"));
    assert_eq!(user.source.as_deref(), Some("email"));
    let pid = process_id("gus");
    let done = env
        .client
        .wait_for_process_completion(&pid, SOON)
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed);
    assert_eq!(decode(&done.result), json!("done"));
    assert_eq!(
        outbox.kinds_sent_to("gus@example.com"),
        vec![EmailKind::Verification, EmailKind::Welcome]
    );
    let messages = env.messages(&exec).await;
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].consumed_by.as_deref(), Some("VerifyState-1"));
    assert!(env
        .history_types(&exec)
        .await
        .contains(&"RPC_COMPLETED".into()));
    // The execution is closed: no more RPCs.
    expect_api_error(
        verify_by_rpc(&env.client, "gus", "email").await,
        409,
        ErrorSubType::ProcessNotRunning,
    );
    env.shutdown().await;
}

async fn start_entity(
    env: &mut XdbTestEnv,
    process: &EntityProcess,
    pid: &str,
    id: &str,
) -> String {
    let worker = serve(env, process).await;
    let exec = start(
        env,
        process,
        &worker,
        pid,
        ProcessStartOptions::new().global_attribute_pk_value(id),
    )
    .await
    .unwrap();
    wait_state(env, &exec, "AwaitEventState", 1, "WAITING_COMMANDS").await;
    exec
}

async fn rpc_with_exclusive_lock_serializes_read_modify_write(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let process = EntityProcess::default();
    start_entity(&mut env, &process, "counter", "c1").await;
    let calls = (0..6).map(|_| {
        let client = env.client.clone();
        let process = process.clone();
        tokio::spawn(async move {
            client
                .invoke_rpc_with::<_, i32>(
                    &ProcessDefinition::new(process),
                    "counter",
                    RPC_INCREMENT,
                    &(),
                )
                .await
        })
    });
    let mut answers: Vec<i32> = futures::future::join_all(calls)
        .await
        .into_iter()
        .map(|r| r.expect("task").expect("rpc"))
        .collect();
    answers.sort();
    assert_eq!(answers, vec![1, 2, 3, 4, 5, 6], "no lost update");
    assert_eq!(env.entity_row("c1").await.unwrap().counter, 6);
    let contexts = process.rpc_calls.all();
    assert_eq!(contexts.len(), 6);
    assert!(contexts.iter().all(|c| c.state_execution_id.is_none()));
    let mut keys: Vec<&str> = contexts
        .iter()
        .map(|c| c.idempotency_key.as_str())
        .collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 6, "each RPC call has its own idempotency key");
    env.shutdown().await;
}

async fn rpc_writes_attributes_and_publishes_to_a_waiting_state(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let process = EntityProcess::default();
    let exec = start_entity(&mut env, &process, "noter", "n1").await;
    let answer: String = env
        .client
        .invoke_rpc_with(
            &ProcessDefinition::new(process.clone()),
            "noter",
            RPC_NOTE,
            "hello",
        )
        .await
        .expect("rpc");
    assert_eq!(answer, "noted");
    assert_eq!(
        env.entity_row("n1").await.unwrap().note.as_deref(),
        Some("hello")
    );
    assert_eq!(
        env.local_attributes(&exec).await,
        vec![(LOCAL_LAST_NOTE.to_string(), encoded("hello"))]
    );
    let done = env
        .client
        .wait_for_process_completion("noter", SOON)
        .await
        .unwrap();
    assert_eq!(
        decode(&done.result),
        json!({"event": "hello", "note": "hello", "lastNote": "hello"}),
        "the state saw the RPC's message and writes"
    );
    let messages = env.messages(&exec).await;
    assert_eq!(messages.len(), 1);
    assert_eq!(
        messages[0].consumed_by.as_deref(),
        Some("AwaitEventState-1")
    );
    env.shutdown().await;
}

async fn rpc_worker_failure_is_424_and_changes_nothing(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let process = EntityProcess::default();
    let exec = start_entity(&mut env, &process, "failing", "f1").await;
    let definition = ProcessDefinition::new(process.clone());
    let error = expect_api_error(
        env.client
            .invoke_rpc_with::<_, String>(&definition, "failing", RPC_FAIL, &())
            .await,
        424,
        ErrorSubType::WorkerApiError,
    );
    assert!(
        error
            .worker_error
            .as_deref()
            .is_some_and(|e| e.contains(FAIL_MESSAGE)),
        "{error:?}"
    );
    // An RPC the worker does not know is a worker error too.
    expect_api_error(
        env.client
            .rpc(&ProcessExecutionRpcRequest {
                process_id: "failing".into(),
                rpc_name: "no-such-rpc".into(),
                input: None,
                timeout_seconds: None,
                global_attribute_loading: None,
                local_attribute_loading: None,
            })
            .await,
        424,
        ErrorSubType::WorkerApiError,
    );
    let row = env.entity_row("f1").await.unwrap();
    assert_eq!(
        (row.counter, row.note),
        (0, None),
        "the failed RPC wrote nothing"
    );
    assert!(env.messages(&exec).await.is_empty());
    assert!(env.local_attributes(&exec).await.is_empty());
    assert_eq!(env.process_row(&exec).await.unwrap().status, "RUNNING");
    assert_eq!(
        env.state_row(&exec, "AwaitEventState", 1)
            .await
            .unwrap()
            .status,
        "WAITING_COMMANDS"
    );
    assert!(!env
        .history_types(&exec)
        .await
        .contains(&"RPC_COMPLETED".into()));
    env.shutdown().await;
}

both_databases!(
    signup_verified_by_rpc,
    rpc_with_exclusive_lock_serializes_read_modify_write,
    rpc_writes_attributes_and_publishes_to_a_waiting_state,
    rpc_worker_failure_is_424_and_changes_nothing,
);

pulsar_mode_too!(
    signup_verified_by_rpc,
    rpc_writes_attributes_and_publishes_to_a_waiting_state,
);
