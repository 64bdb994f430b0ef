//! The sign-up sample, step by step, checking the `user` row and the system rows.

use std::time::Duration;

use serde_json::json;
use xdb_integration_tests::rows::HistoryRow;
use xdb_integration_tests::worker_faults::{CallMatch, StateApiKind, WorkerFaults};
use xdb_integration_tests::{eventually, Database, EnvOptions, XdbTestEnv};
use xdb_samples::email::{EmailKind, EmailOutbox};
use xdb_samples::sample_router;
use xdb_samples::user_signup::{process_id, publish_verification, start_user_signup, Form};

use crate::common::*;

const REMINDER: Duration = Duration::from_secs(2);

async fn signup_walk_through_by_local_queue(db: Database) {
    // No async instance yet: the state right after the start transaction is observable.
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            async_instances: 0,
            ..Default::default()
        },
    )
    .await;
    let outbox = EmailOutbox::new();
    let faults = WorkerFaults::new();
    let worker = env
        .start_worker(faults.wrap(sample_router(outbox.clone(), REMINDER)))
        .await;
    let form = Form {
        email: "ann@example.com".into(),
        name: Some("Ann".into()),
    };
    let pid = process_id("ann");

    // 1. Started: one transaction wrote the execution, its first state and task, and
    //    upserted the user row.
    let exec = start_user_signup(&env.client, Some(&worker), "ann", &form)
        .await
        .expect("start");
    let process = env.process_row(&exec).await.expect("execution row");
    assert_eq!(process.status, "RUNNING");
    assert_eq!(process.process_id, pid);
    assert_eq!(process.process_type, "UserSignupProcess");
    assert_eq!(process.running_state_executions, 1);
    assert_eq!(env.latest_execution(&pid).await.as_deref(), Some(&*exec));
    let user = env.user_row("ann").await.expect("user row");
    assert_eq!(
        user.form,
        Some(json!({"email": "ann@example.com", "name": "Ann"}))
    );
    assert_eq!(user.status.as_deref(), Some("waiting"));
    assert_eq!(user.source, None);
    let states = env.state_rows(&exec).await;
    assert_eq!(states.len(), 1, "{states:?}");
    assert_eq!(
        (states[0].execution_id().as_str(), states[0].status.as_str()),
        ("SubmitState-1", "EXECUTE_RUNNING")
    );
    let tasks = env.tasks(&exec).await;
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert_eq!(tasks[0].task_type, "EXECUTE");
    assert_eq!(tasks[0].state_id.as_deref(), Some("SubmitState"));
    assert_eq!(tasks[0].lease_owner, None);
    assert!(outbox.sent().is_empty());

    // 2. SubmitState executed: verification email, VerifyState-1 waits with a timer.
    env.add_async_instance().await;
    wait_state(&env, &exec, "VerifyState", 1, "WAITING_COMMANDS").await;
    assert_eq!(
        outbox.kinds_sent_to("ann@example.com"),
        vec![EmailKind::Verification]
    );
    let submit = env.state_row(&exec, "SubmitState", 1).await.unwrap();
    assert_eq!(submit.status, "COMPLETED");
    let verify1 = env.state_row(&exec, "VerifyState", 1).await.unwrap();
    let request = verify1.command_request.clone().expect("command request");
    assert_eq!(request["timerCommands"], json!([{"delayInSeconds": 2}]));
    assert_eq!(request["localQueueCommands"][0]["queueName"], "verify");
    assert_eq!(request["waitingType"], "ANY_OF_COMPLETION");
    let tasks = env.tasks(&exec).await;
    assert_eq!(tasks.len(), 1, "only the timer is left: {tasks:?}");
    assert_eq!(tasks[0].task_type, "TIMER");
    assert_eq!(tasks[0].state_id.as_deref(), Some("VerifyState"));
    assert_eq!(tasks[0].number, Some(1));
    assert!(
        tasks[0].fire_at >= verify1.created_at + chrono::Duration::milliseconds(1900),
        "the timer is due 2 s after the state began: {:?} vs {:?}",
        tasks[0].fire_at,
        verify1.created_at
    );
    assert_eq!(
        env.user_row("ann").await.unwrap().status.as_deref(),
        Some("waiting")
    );

    // 3. The reminder timer fired: reminder email, VerifyState-2 begins its wait. Its
    //    waitUntil's answer is held, so that the message below is queued before the wait
    //    begins (deterministically: the state has no timer yet that could end it first).
    faults.hold(CallMatch::state("VerifyState", StateApiKind::WaitUntil));
    eventually("VerifyState-2's waitUntil to be held", SOON, || async {
        faults.held() == 1
    })
    .await;
    assert_eq!(
        outbox.kinds_sent_to("ann@example.com"),
        vec![EmailKind::Verification, EmailKind::Reminder]
    );
    assert_eq!(
        env.state_row(&exec, "VerifyState", 1).await.unwrap().status,
        "COMPLETED"
    );
    assert_eq!(
        env.state_row(&exec, "VerifyState", 2).await.unwrap().status,
        "WAIT_UNTIL_RUNNING"
    );
    assert!(env
        .history_types(&exec)
        .await
        .contains(&"TIMER_FIRED".to_string()));

    // 4. Verified by publishing to local queue `verify` before the wait began: the
    //    message waits in the queue, and the wait takes it when it begins.
    publish_verification(&env.client, "ann", "email-link")
        .await
        .expect("publish");
    let queued = env.messages(&exec).await;
    assert_eq!(queued.len(), 1, "{queued:?}");
    assert_eq!(queued[0].consumed_by, None, "queued, not consumed yet");
    faults.release();
    let done = env
        .client
        .wait_for_process_completion(&pid, Duration::from_secs(10))
        .await
        .expect("wait for completion");
    assert!(!done.timed_out);
    assert_eq!(done.process_execution_id, exec);
    assert_eq!(decode(&done.result), json!("done"));
    let user = env.user_row("ann").await.unwrap();
    assert_eq!(user.status.as_deref(), Some("verified"));
    assert_eq!(user.source.as_deref(), Some("email-link"));
    let messages = env.messages(&exec).await;
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(messages[0].queue_name, "verify");
    assert_eq!(messages[0].consumed_by.as_deref(), Some("VerifyState-2"));

    // 5. Completed: nothing left to do, every state completed, history closed.
    let process = env.process_row(&exec).await.unwrap();
    assert_eq!(process.status, "COMPLETED");
    assert_eq!(process.running_state_executions, 0);
    assert!(process.close_time.is_some());
    assert_eq!(process.result, Some(encoded("done")));
    assert!(env.tasks(&exec).await.is_empty());
    let states: Vec<(String, String)> = env
        .state_rows(&exec)
        .await
        .iter()
        .map(|s| (s.execution_id(), s.status.clone()))
        .collect();
    assert_eq!(
        states,
        [
            ("SubmitState-1", "COMPLETED"),
            ("VerifyState-1", "COMPLETED"),
            ("VerifyState-2", "COMPLETED"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    let history = env.history_types(&exec).await;
    assert_eq!(history.first().map(String::as_str), Some("PROCESS_STARTED"));
    assert_eq!(history.last().map(String::as_str), Some("PROCESS_CLOSED"));
    for event in [
        "EXECUTE_COMPLETED",
        "WAIT_UNTIL_COMPLETED",
        "TIMER_FIRED",
        "LOCAL_QUEUE_MESSAGES_PUBLISHED",
        "LOCAL_QUEUE_MESSAGES_CONSUMED",
    ] {
        assert!(history.iter().any(|e| e == event), "{event} in {history:?}");
    }
    assert_eq!(
        history.iter().filter(|e| *e == "EXECUTE_COMPLETED").count(),
        3,
        "one execute per state execution: {history:?}"
    );
    // The wait that found the message queued recorded taking it, as a wait the message
    // reaches does (signup_message_after_the_wait_began).
    let events = env.history(&exec).await;
    let consumed = only_consumption(&events);
    assert_eq!(
        consumed.details,
        json!({
            "stateExecutionId": "VerifyState-2",
            "queueName": "verify",
            "messages": [{ "sequenceId": queued[0].sequence_id, "dedupId": queued[0].dedup_id }],
        })
    );
    let second_wait = events
        .iter()
        .rposition(|e| e.event_type == "WAIT_UNTIL_COMPLETED")
        .unwrap();
    let position = events.iter().position(|e| e.id == consumed.id).unwrap();
    assert_eq!(position, second_wait + 1, "{history:?}");
    assert_eq!(
        outbox.kinds_sent_to("ann@example.com"),
        vec![
            EmailKind::Verification,
            EmailKind::Reminder,
            EmailKind::Welcome
        ]
    );
    eventually("the outbox to stay as it is", SOON, || async {
        outbox.sent().len() == 3
    })
    .await;
    env.shutdown().await;
}

/// The execution's one `LOCAL_QUEUE_MESSAGES_CONSUMED` event.
fn only_consumption(events: &[HistoryRow]) -> &HistoryRow {
    let consumed: Vec<&HistoryRow> = events
        .iter()
        .filter(|e| e.event_type == "LOCAL_QUEUE_MESSAGES_CONSUMED")
        .collect();
    assert_eq!(consumed.len(), 1, "{events:?}");
    consumed[0]
}

/// The other order: the message arrives while the state waits. The reminder is an hour
/// away, so only the message can end the wait.
async fn signup_message_after_the_wait_began(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let outbox = EmailOutbox::new();
    let worker = env
        .start_worker(sample_router(outbox.clone(), Duration::from_secs(3600)))
        .await;
    let form = Form {
        email: "bo@example.com".into(),
        name: None,
    };
    let exec = start_user_signup(&env.client, Some(&worker), "bo", &form)
        .await
        .expect("start");
    wait_state(&env, &exec, "VerifyState", 1, "WAITING_COMMANDS").await;
    publish_verification(&env.client, "bo", "email-link")
        .await
        .expect("publish");
    let done = env
        .client
        .wait_for_process_completion(&process_id("bo"), Duration::from_secs(10))
        .await
        .expect("wait for completion");
    assert!(!done.timed_out);
    let messages = env.messages(&exec).await;
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(messages[0].consumed_by.as_deref(), Some("VerifyState-1"));

    let events = env.history(&exec).await;
    let consumed = only_consumption(&events);
    assert_eq!(
        consumed.details,
        json!({
            "stateExecutionId": "VerifyState-1",
            "queueName": "verify",
            "messages": [{ "sequenceId": messages[0].sequence_id, "dedupId": messages[0].dedup_id }],
        })
    );
    let types: Vec<&str> = events.iter().map(|e| e.event_type.as_str()).collect();
    assert_eq!(
        types,
        [
            "PROCESS_STARTED",
            "EXECUTE_COMPLETED",
            "WAIT_UNTIL_COMPLETED",
            "LOCAL_QUEUE_MESSAGES_CONSUMED",
            "LOCAL_QUEUE_MESSAGES_PUBLISHED",
            "EXECUTE_COMPLETED",
            "PROCESS_CLOSED",
        ]
    );
    env.shutdown().await;
}

both_databases!(
    signup_walk_through_by_local_queue,
    signup_message_after_the_wait_began,
);

pulsar_mode_too!(signup_walk_through_by_local_queue,);
