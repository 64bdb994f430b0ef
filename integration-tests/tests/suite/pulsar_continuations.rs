//! Pulsar CDC mode: a continuation (a task the transition created leased to its
//! instance, whose change event is passed over) has no message behind it. When the
//! database keeps refusing its transition, it still reaches the dead-letter path, as a
//! `TaskTimer` naming it, and is parked there until an operator's retry-now.

use std::time::Duration;

use futures::StreamExt;
use prost::Message as _;
use pulsar::SubType;
use serde_json::json;
use xdb_async_service::{AsyncService, TaskTimer};
use xdb_integration_tests::processes::hang::HangProcess;
use xdb_integration_tests::pulsar::{broker_url, dead_letter_topic};
use xdb_integration_tests::{eventually, Database, EnvOptions, XdbTestEnv};
use xdb_protocol::paths;
use xdb_sdk::protocol::ProcessStatus;
use xdb_sdk::ProcessStartOptions;

use crate::common::*;

/// A state whose `waitUntil` waits for nothing: that transition creates the execute
/// task leased to the instance, which runs it at once. Its completion is refused until
/// allowed again. Were the execute task claimed from its change event instead, its dead
/// letter would be that event, not a `TaskTimer`.
async fn a_refused_continuation_is_dead_lettered_and_parked_until_retry_now(db: Database) {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            async_instances: 0,
            queue_mode: xdb_config::QueueMode::Pulsar,
            ..Default::default()
        },
    )
    .await;
    refuse_state_completion(&env, Some("HangAfterWaitUntilState"), Refusal::ForNow).await;
    let mut config = env.async_config("continuations");
    config.pulsar.max_deliveries = 2;
    config.pulsar.nack_delay_ms = 300;
    let mut dead_letters = subscribe(
        &broker_url(),
        &dead_letter_topic(env.db()),
        "test-dead-letters",
        SubType::Exclusive,
    )
    .await;
    let service = AsyncService::start(config)
        .await
        .expect("the async service starts");
    let process = HangProcess::after_wait_until();
    // No call is held: every one answers at once.
    process.release();
    let worker = serve(&mut env, &process).await;
    let exec = start(
        &env,
        &process,
        &worker,
        "refused-continuation",
        ProcessStartOptions::new().global_attribute_pk_value("c1"),
    )
    .await
    .unwrap();

    let dead_letter = tokio::time::timeout(Duration::from_secs(30), dead_letters.next())
        .await
        .expect("a dead letter within 30 s")
        .expect("the consumer runs")
        .expect("a message");
    // Not a change event (no message carried the task): XDB's own TaskTimer.
    let timer = TaskTimer::decode(dead_letter.payload.data.as_slice())
        .expect("the dead letter is a TaskTimer");
    assert_eq!(timer.process_execution_id, exec, "{timer:?}");
    eventually(
        "the dead-lettered continuation to be parked",
        Duration::from_secs(30),
        || async {
            states(&env, "refused-continuation").await["states"][0]["pendingCall"]["phase"]
                == "PARKED"
        },
    )
    .await;
    let history = env.history_types(&exec).await;
    assert!(history.iter().any(|t| t == "TASK_PARKED"), "{history:?}");
    // The execute was called once per handling: two in-process tries and the last run.
    assert!(
        process.calls_of(&exec).len() >= 3,
        "{:?}",
        process.calls_of(&exec).len()
    );

    allow_state_completion(&env).await;
    let (status, answer) = call(
        &env,
        paths::RETRY_NOW,
        json!({ "processId": "refused-continuation", "reason": "trigger dropped" }),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let done = env
        .client
        .wait_for_process_completion("refused-continuation", Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");
    let note = env.entity_row("c1").await.and_then(|row| row.note);
    assert_eq!(note.as_deref(), Some("done"));
    service.shutdown().await.expect("a clean shutdown");
    env.shutdown().await;
}

both_databases!(a_refused_continuation_is_dead_lettered_and_parked_until_retry_now);
