//! One test per service feature: start, describe, stop, publish, wait, list, history.

use std::time::{Duration, Instant};

use serde_json::json;
use xdb_integration_tests::processes::park::{ParkProcess, LOCAL_TAG, QUEUE_GO};
use xdb_integration_tests::processes::queue::{QueueProcess, QUEUE_A};
use xdb_integration_tests::processes::timer::TimerProcess;
use xdb_integration_tests::{Database, EnvOptions, XdbTestEnv};
use xdb_samples::email::EmailOutbox;
use xdb_samples::sample_router;
use xdb_samples::user_signup::{process_id, start_user_signup, Form};
use xdb_sdk::protocol::*;
use xdb_sdk::{ClientError, Command, CommandRequest, ProcessStartOptions};

use crate::common::*;

fn form(email: &str) -> Form {
    Form {
        email: email.into(),
        name: None,
    }
}

async fn start_upserts_global_attributes_and_writes_local_attributes(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    // An existing row is updated, not replaced: columns not written keep their value.
    env.execute_sql(
        "INSERT INTO \"user\" (user_id, form, status, source) \
             VALUES ('bob', '{\"email\":\"old@example.com\"}', 'verified', 'old-source')",
    )
    .await;
    let worker = env
        .start_worker(sample_router(EmailOutbox::new(), Duration::from_secs(60)))
        .await;
    start_user_signup(&env.client, Some(&worker), "bob", &form("bob@example.com"))
        .await
        .expect("start");
    let bob = env.user_row("bob").await.unwrap();
    assert_eq!(
        bob.form,
        Some(json!({"email": "bob@example.com", "name": null}))
    );
    assert_eq!(bob.status.as_deref(), Some("waiting"));
    assert_eq!(bob.source.as_deref(), Some("old-source"));
    start_user_signup(&env.client, Some(&worker), "cid", &form("cid@example.com"))
        .await
        .expect("start");
    assert_eq!(
        env.user_row("cid").await.unwrap().status.as_deref(),
        Some("waiting")
    );

    // Local attributes written at start are stored and loaded for the state.
    let park = ParkProcess;
    let worker = serve(&mut env, &park).await;
    let exec = start(
        &env,
        &park,
        &worker,
        "park-local",
        ProcessStartOptions::new().initial_local_attribute(LOCAL_TAG, "blue"),
    )
    .await
    .expect("start");
    assert_eq!(
        env.local_attributes(&exec).await,
        vec![(LOCAL_TAG.to_string(), encoded("blue"))]
    );
    env.client
        .publish_to_local_queue("park-local", QUEUE_GO, "go!", None)
        .await
        .unwrap();
    let done = env
        .client
        .wait_for_process_completion("park-local", SOON)
        .await
        .unwrap();
    assert_eq!(
        decode(&done.result),
        json!({"message": "go!", "tag": "blue"})
    );
    env.shutdown().await;
}

async fn describe_reports_the_current_or_a_given_execution(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let worker = env
        .start_worker(sample_router(EmailOutbox::new(), Duration::from_secs(60)))
        .await;
    let before = chrono::Utc::now().timestamp_millis();
    let exec = start_user_signup(&env.client, Some(&worker), "dee", &form("dee@example.com"))
        .await
        .unwrap();
    let pid = process_id("dee");
    let described = env.client.describe_process(&pid).await.unwrap();
    assert_eq!(described.process_execution_id, exec);
    assert_eq!(described.process_id, pid);
    assert_eq!(described.process_type, "UserSignupProcess");
    assert_eq!(described.worker_url, worker);
    assert_eq!(described.status, ProcessStatus::Running);
    assert_eq!(described.running_state_executions, 1);
    assert!(described.start_timestamp_ms >= before - 1000);
    assert_eq!(described.close_timestamp_ms, None);
    let globals = described
        .global_attribute_config
        .expect("global attributes");
    assert_eq!(globals.table_name, "user");
    assert_eq!(globals.primary_key.column, "user_id");
    assert_eq!(globals.primary_key.value, json!("dee"));

    // A second execution (after a stop): the old one stays describable by id.
    wait_state(&env, &exec, "VerifyState", 1, "WAITING_COMMANDS").await;
    env.client
        .stop_process(&pid, ProcessExecutionStopType::Terminate, None)
        .await
        .unwrap();
    let exec2 = start_user_signup(&env.client, Some(&worker), "dee", &form("dee@example.com"))
        .await
        .unwrap();
    assert_ne!(exec, exec2);
    assert_eq!(
        env.client
            .describe_process(&pid)
            .await
            .unwrap()
            .process_execution_id,
        exec2
    );
    let old = env
        .client
        .describe(&ProcessExecutionDescribeRequest {
            process_id: pid.clone(),
            process_execution_id: Some(exec.clone()),
        })
        .await
        .unwrap();
    assert_eq!(old.status, ProcessStatus::Terminated);
    assert!(old.close_timestamp_ms.is_some());
    assert!(old.failure.is_some());
    // An execution id that does not exist.
    expect_api_error(
        env.client
            .describe(&ProcessExecutionDescribeRequest {
                process_id: pid.clone(),
                process_execution_id: Some(uuid::Uuid::nil().to_string()),
            })
            .await,
        404,
        ErrorSubType::ProcessNotFound,
    );
    env.shutdown().await;
}

async fn stop_terminates_or_fails_and_cancels_states_and_timers(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let worker = env
        .start_worker(sample_router(EmailOutbox::new(), Duration::from_secs(60)))
        .await;
    for (user, stop_type, status) in [
        ("eve", ProcessExecutionStopType::Terminate, "TERMINATED"),
        ("fay", ProcessExecutionStopType::Fail, "FAILED"),
    ] {
        let pid = process_id(user);
        let exec = start_user_signup(&env.client, Some(&worker), user, &form("x@example.com"))
            .await
            .unwrap();
        wait_state(&env, &exec, "VerifyState", 1, "WAITING_COMMANDS").await;
        assert_eq!(env.tasks(&exec).await.len(), 1, "the reminder timer");
        env.client
            .stop_process(&pid, stop_type, Some("operator said so".into()))
            .await
            .expect("stop");
        let row = env.process_row(&exec).await.unwrap();
        assert_eq!(row.status, status);
        assert!(row.close_time.is_some());
        assert_eq!(row.running_state_executions, 0);
        let failure = row.failure.expect("a failure is recorded");
        assert_eq!(failure["details"], "operator said so");
        assert!(env.tasks(&exec).await.is_empty(), "tasks are deleted");
        let states = env.state_rows(&exec).await;
        assert_eq!(
            states
                .iter()
                .map(|s| (s.execution_id(), s.status.as_str()))
                .collect::<Vec<_>>(),
            vec![
                ("SubmitState-1".to_string(), "COMPLETED"),
                ("VerifyState-1".to_string(), "ABORTED")
            ]
        );
        assert_eq!(
            env.history_types(&exec).await.last().map(String::as_str),
            Some("PROCESS_CLOSED")
        );
        let waited = env
            .client
            .wait_for_process_completion(&pid, SOON)
            .await
            .unwrap();
        assert!(!waited.timed_out);
        assert_eq!(waited.status.as_str(), status);
        // A closed execution cannot be stopped again or receive messages.
        expect_api_error(
            env.client
                .stop_process(&pid, ProcessExecutionStopType::Terminate, None)
                .await,
            409,
            ErrorSubType::ProcessNotRunning,
        );
        expect_api_error(
            env.client
                .publish_to_local_queue(&pid, "verify", "late", None)
                .await,
            409,
            ErrorSubType::ProcessNotRunning,
        );
        // The user row is left as the process last wrote it.
        assert_eq!(
            env.user_row(user).await.unwrap().status.as_deref(),
            Some("waiting")
        );
    }
    env.shutdown().await;
}

async fn publish_deduplicates_by_dedup_id(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let queue = QueueProcess::new(CommandRequest::all_of(vec![Command::local_queue_count(
        QUEUE_A, 3,
    )]));
    let worker = serve(&mut env, &queue).await;
    let exec = start(&env, &queue, &worker, "dedup", ProcessStartOptions::new())
        .await
        .unwrap();
    wait_state(&env, &exec, "WaitQueuesState", 1, "WAITING_COMMANDS").await;
    for payload in ["first", "second"] {
        env.client
            .publish_to_local_queue("dedup", QUEUE_A, payload, Some("m1".into()))
            .await
            .expect("a duplicate is accepted and dropped");
    }
    // Two messages with one dedup id in one request.
    env.client
        .publish_to_local_queue_raw(&PublishToLocalQueueRequest {
            process_execution_id: None,
            request_id: None,
            process_id: "dedup".into(),
            messages: ["third", "fourth"]
                .map(|p| LocalQueueMessage {
                    queue_name: QUEUE_A.into(),
                    dedup_id: Some("m2".into()),
                    payload: EncodedObject::json(&p).ok(),
                })
                .to_vec(),
        })
        .await
        .unwrap();
    let messages = env.messages(&exec).await;
    assert_eq!(
        messages
            .iter()
            .map(|m| (m.dedup_id.as_str(), m.payload.clone()))
            .collect::<Vec<_>>(),
        vec![
            ("m1", Some(encoded("first"))),
            ("m2", Some(encoded("third")))
        ]
    );
    assert!(messages.iter().all(|m| m.consumed_by.is_none()));
    // Without a dedup id every message counts; the third completes the command.
    env.client
        .publish_to_local_queue("dedup", QUEUE_A, "fifth", None)
        .await
        .unwrap();
    let done = env
        .client
        .wait_for_process_completion("dedup", SOON)
        .await
        .unwrap();
    assert_eq!(
        decode(&done.result),
        json!({"a": ["first", "third", "fifth"], "b": []})
    );
    assert_eq!(env.messages(&exec).await.len(), 3);
    env.shutdown().await;
}

async fn wait_for_completion_long_polls(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    // Not complete: the poll ends after its timeout with timedOut.
    let park = ParkProcess;
    let park_worker = serve(&mut env, &park).await;
    start(
        &env,
        &park,
        &park_worker,
        "parked",
        ProcessStartOptions::new(),
    )
    .await
    .unwrap();
    let began = Instant::now();
    let response = env
        .client
        .wait_for_completion(&ProcessExecutionWaitForCompletionRequest {
            process_id: "parked".into(),
            timeout_seconds: Some(1),
        })
        .await
        .unwrap();
    let waited = began.elapsed();
    assert!(response.timed_out);
    assert_eq!(response.status, ProcessStatus::Running);
    assert!(response.result.is_none());
    assert!(
        waited >= Duration::from_secs(1) && waited < Duration::from_secs(4),
        "{waited:?}"
    );

    // Completes while the poll waits: it returns promptly after the close.
    let timer = TimerProcess::new(Duration::from_secs(2));
    let timer_worker = serve(&mut env, &timer).await;
    let exec = start(
        &env,
        &timer,
        &timer_worker,
        "sleeper",
        ProcessStartOptions::new(),
    )
    .await
    .unwrap();
    let began = Instant::now();
    let response = env
        .client
        .wait_for_completion(&ProcessExecutionWaitForCompletionRequest {
            process_id: "sleeper".into(),
            timeout_seconds: Some(30),
        })
        .await
        .unwrap();
    let answered_at = chrono::Utc::now();
    assert!(!response.timed_out);
    assert_eq!(response.status, ProcessStatus::Completed);
    assert_eq!(response.process_execution_id, exec);
    assert_eq!(decode(&response.result), json!("woke"));
    assert!(began.elapsed() >= Duration::from_secs(2), "it waited");
    let closed_at = env.process_row(&exec).await.unwrap().close_time.unwrap();
    let lag = answered_at - closed_at;
    assert!(
        lag < chrono::Duration::milliseconds(900),
        "answered {lag:?} after the close (the fallback poll is 1 s: the close notification was not used)"
    );
    env.shutdown().await;
}

/// A wait that names no timeout waits the default (30 s) or the operator's lower ceiling;
/// naming more than the ceiling is refused.
async fn a_wait_without_timeout_waits_at_most_the_configured_ceiling(db: Database) {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            max_wait_seconds: 1,
            ..Default::default()
        },
    )
    .await;
    let park = ParkProcess;
    let park_worker = serve(&mut env, &park).await;
    start(
        &env,
        &park,
        &park_worker,
        "ceiling",
        ProcessStartOptions::new(),
    )
    .await
    .unwrap();
    let began = Instant::now();
    let response = env
        .client
        .wait_for_completion(&ProcessExecutionWaitForCompletionRequest {
            process_id: "ceiling".into(),
            timeout_seconds: None,
        })
        .await
        .expect("no timeout named: the ceiling applies");
    let waited = began.elapsed();
    assert!(response.timed_out);
    assert!(
        waited >= Duration::from_secs(1) && waited < Duration::from_secs(4),
        "{waited:?}"
    );
    let refused = env
        .client
        .wait_for_completion(&ProcessExecutionWaitForCompletionRequest {
            process_id: "ceiling".into(),
            timeout_seconds: Some(2),
        })
        .await;
    assert!(
        matches!(refused, Err(ClientError::Api { status: 400, .. })),
        "{refused:?}"
    );
    env.shutdown().await;
}

async fn list_filters_and_pages(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let park = ParkProcess;
    let timer = TimerProcess::new(Duration::from_secs(60));
    let park_worker = serve(&mut env, &park).await;
    let timer_worker = serve(&mut env, &timer).await;
    let mut execs = Vec::new();
    for i in 1..=4 {
        let id = format!("list-park-{i}");
        execs.push(
            start(&env, &park, &park_worker, &id, ProcessStartOptions::new())
                .await
                .unwrap(),
        );
    }
    execs.push(
        start(
            &env,
            &timer,
            &timer_worker,
            "list-timer",
            ProcessStartOptions::new(),
        )
        .await
        .unwrap(),
    );
    env.client
        .publish_to_local_queue("list-park-2", QUEUE_GO, (), None)
        .await
        .unwrap();
    env.client
        .wait_for_process_completion("list-park-2", SOON)
        .await
        .unwrap();

    let list = |filter: ProcessExecutionListFilter, page_size, token| {
        let client = env.client.clone();
        async move {
            client
                .list(&ProcessExecutionListRequest {
                    filter,
                    page_size,
                    next_page_token: token,
                    ..Default::default()
                })
                .await
                .expect("list")
        }
    };
    // Paging through everything, newest first, without repeats.
    let mut seen = Vec::new();
    let mut token = None;
    let mut pages = 0;
    loop {
        let page = list(Default::default(), Some(2), token).await;
        pages += 1;
        assert!(page.executions.len() <= 2);
        seen.extend(page.executions);
        token = page.next_page_token;
        if token.is_none() {
            break;
        }
        assert!(pages < 10, "paging does not end");
    }
    assert_eq!(pages, 3);
    let ids: Vec<&str> = seen
        .iter()
        .map(|e| e.process_execution_id.as_str())
        .collect();
    let mut expected: Vec<&str> = execs.iter().map(String::as_str).collect();
    expected.reverse();
    assert_eq!(ids, expected, "newest first, each once");
    assert!(seen
        .windows(2)
        .all(|w| w[0].start_timestamp_ms >= w[1].start_timestamp_ms));

    let by_status = list(
        ProcessExecutionListFilter {
            status: Some(ProcessStatus::Completed),
            ..Default::default()
        },
        None,
        None,
    )
    .await;
    assert_eq!(by_status.executions.len(), 1);
    assert_eq!(by_status.executions[0].process_id, "list-park-2");
    assert!(by_status.executions[0].close_timestamp_ms.is_some());
    assert_eq!(by_status.next_page_token, None);

    let by_type = list(
        ProcessExecutionListFilter {
            process_type: Some("TimerProcess".into()),
            ..Default::default()
        },
        None,
        None,
    )
    .await;
    assert_eq!(by_type.executions.len(), 1);
    assert_eq!(by_type.executions[0].process_execution_id, execs[4]);

    let by_id_and_status = list(
        ProcessExecutionListFilter {
            process_id: Some("list-park-3".into()),
            status: Some(ProcessStatus::Running),
            ..Default::default()
        },
        None,
        None,
    )
    .await;
    assert_eq!(by_id_and_status.executions.len(), 1);
    assert_eq!(
        by_id_and_status.executions[0].process_execution_id,
        execs[2]
    );

    // Start-time window: [third start, fifth start) holds the third and fourth.
    let third = &seen[2];
    let fifth = &seen[0];
    assert_eq!(third.process_execution_id, execs[2]);
    let window = list(
        ProcessExecutionListFilter {
            start_time_min_ms: Some(third.start_timestamp_ms),
            start_time_max_ms: Some(fifth.start_timestamp_ms),
            ..Default::default()
        },
        None,
        None,
    )
    .await;
    let window_ids: Vec<&str> = window
        .executions
        .iter()
        .map(|e| e.process_id.as_str())
        .collect();
    assert!(window_ids.contains(&"list-park-3") && window_ids.contains(&"list-park-4"));
    assert!(!window_ids.contains(&"list-timer") && !window_ids.contains(&"list-park-1"));

    expect_api_error(
        env.client
            .list(&ProcessExecutionListRequest {
                next_page_token: Some("not-a-token".into()),
                ..Default::default()
            })
            .await,
        400,
        ErrorSubType::InvalidRequest,
    );
    expect_api_error(
        env.client
            .list(&ProcessExecutionListRequest {
                page_size: Some(0),
                ..Default::default()
            })
            .await,
        400,
        ErrorSubType::InvalidRequest,
    );
    env.shutdown().await;
}

async fn history_lists_events_oldest_first(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let park = ParkProcess;
    let worker = serve(&mut env, &park).await;
    let exec = start(&env, &park, &worker, "hist", ProcessStartOptions::new())
        .await
        .unwrap();
    env.client
        .publish_to_local_queue("hist", QUEUE_GO, "x", None)
        .await
        .unwrap();
    env.client
        .wait_for_process_completion("hist", SOON)
        .await
        .unwrap();
    let history = env
        .client
        .history(&ProcessExecutionHistoryRequest {
            process_id: "hist".into(),
            process_execution_id: None,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(history.process_execution_id, exec);
    let types: Vec<&str> = history
        .events
        .iter()
        .map(|e| e.event_type.as_str())
        .collect();
    assert_eq!(types.first(), Some(&"PROCESS_STARTED"));
    assert_eq!(types.last(), Some(&"PROCESS_CLOSED"));
    for event in [
        "WAIT_UNTIL_COMPLETED",
        "LOCAL_QUEUE_MESSAGES_PUBLISHED",
        "EXECUTE_COMPLETED",
    ] {
        assert!(types.contains(&event), "{event} in {types:?}");
    }
    assert!(history.events.windows(2).all(
        |w| w[0].event_id < w[1].event_id && w[0].event_timestamp_ms <= w[1].event_timestamp_ms
    ));
    assert_eq!(history.events[0].details["processType"], "ParkProcess");
    assert_eq!(
        types,
        env.history_types(&exec)
            .await
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
    );
    assert_eq!(history.next_after_event_id, None);

    // A page at a time: each page's cursor leads to the next, and together they are the
    // whole history.
    let mut paged = Vec::new();
    let mut after = None;
    for _ in 0..history.events.len() {
        let page = env
            .client
            .history(&ProcessExecutionHistoryRequest {
                process_id: "hist".into(),
                after_event_id: after,
                page_size: Some(1),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(page.events.len(), 1);
        paged.extend(page.events);
        after = page.next_after_event_id;
        if after.is_none() {
            break;
        }
    }
    assert_eq!(paged, history.events);
    // Only the types asked for.
    let published = env
        .client
        .history(&ProcessExecutionHistoryRequest {
            process_id: "hist".into(),
            event_types: vec![HistoryEventType::LocalQueueMessagesPublished],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(published.events.len(), 1, "{:?}", published.events);
    assert_eq!(
        published.events[0].event_type,
        "LOCAL_QUEUE_MESSAGES_PUBLISHED"
    );
    // Bad page sizes and unknown types are refused with a 400 naming the field.
    let json_type = Some("application/json");
    for (body, field) in [
        (json!({"processId": "hist", "pageSize": 0}), "pageSize"),
        (json!({"processId": "hist", "pageSize": 1001}), "pageSize"),
        (
            json!({"processId": "hist", "eventTypes": ["NOT_A_TYPE"]}),
            "eventTypes",
        ),
    ] {
        let (status, error) = post_raw(&env, paths::HISTORY, body.to_string(), json_type).await;
        assert_eq!(status, 400, "{body}: {error}");
        assert_eq!(error["subType"], "INVALID_REQUEST", "{body}: {error}");
        let message = error["message"].as_str().unwrap_or_default();
        assert!(message.contains(field), "{body}: {error}");
    }
    env.shutdown().await;
}

both_databases!(
    start_upserts_global_attributes_and_writes_local_attributes,
    describe_reports_the_current_or_a_given_execution,
    stop_terminates_or_fails_and_cancels_states_and_timers,
    publish_deduplicates_by_dedup_id,
    wait_for_completion_long_polls,
    a_wait_without_timeout_waits_at_most_the_configured_ceiling,
    list_filters_and_pages,
    history_lists_events_oldest_first,
);
