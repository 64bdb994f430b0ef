//! The async service's side: leases, a two-state flow driven by hand-made worker
//! answers, and timers that fire only when due.

use std::time::Duration;

use chrono::Utc;
use xdb_engine::TaskType;
use xdb_persistence::StoreError;
use xdb_protocol::*;
use xdb_test_util::Dialect;

use crate::common::*;

both!(
    claims_lease_renew_release_and_take_over,
    concurrent_claims_get_disjoint_tasks,
    two_states_run_to_graceful_completion,
    timers_fire_only_when_due,
    due_timers_are_claimed_before_a_backlog,
    a_claimed_call_is_the_call_loading_reads,
    a_decision_on_rows_a_parallel_thread_moved_is_taken_again,
);

async fn claims_lease_renew_release_and_take_over(dialect: Dialect) {
    let h = harness(dialect).await;
    let store = &*h.store;
    assert_eq!(store.next_task_due_in().await.unwrap(), None);
    store
        .start_process(&start_request("p-lease", "A"))
        .await
        .unwrap();
    assert_eq!(
        store.next_task_due_in().await.unwrap(),
        Some(Duration::ZERO)
    );

    let tasks = store
        .claim_due_tasks("a", 10, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    let task = &tasks[0];
    assert_eq!(task.task_type, TaskType::WaitUntil);
    assert_eq!(task.attempt, 1);
    assert_eq!(task.state.as_ref().unwrap().state_id, "A");
    let first_attempt = task.first_attempt_at.expect("set when first claimed");
    // Leased: nobody else gets it, and it is not waiting any more.
    assert_nothing_due(store, "b").await;
    assert_eq!(store.next_task_due_in().await.unwrap(), None);

    assert_eq!(
        store
            .renew_leases("a", &[task.id], Duration::from_secs(30))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .renew_leases("nobody", &[task.id], Duration::from_secs(30))
            .await
            .unwrap(),
        0
    );
    // Only the tasks named are renewed: a task whose handling failed is left to expire.
    assert_eq!(
        store
            .renew_leases("a", &[], Duration::from_secs(30))
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        store
            .renew_leases("a", &[task.id + 1_000_000], Duration::from_secs(30))
            .await
            .unwrap(),
        0
    );
    assert_eq!(store.release_leases("a").await.unwrap(), 1);
    assert_eq!(store.release_leases("a").await.unwrap(), 0);

    // Released: claimable again, first attempt time kept.
    let again = store
        .claim_due_tasks("b", 10, Duration::from_millis(300))
        .await
        .unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].id, task.id);
    assert_eq!(again[0].first_attempt_at, Some(first_attempt));

    // An expired lease is taken over (claims look for them once a second); the old
    // owner's work is then stale.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let taken = store
        .claim_due_tasks("c", 10, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(taken.len(), 1);
    let call = store
        .load_state_call(&taken[0], "c")
        .await
        .unwrap()
        .unwrap();
    let stale = store
        .complete_wait_until(&again[0], "b", &call, &Default::default())
        .await
        .unwrap_err();
    assert!(matches!(stale, StoreError::Stale(_)), "{stale:?}");
    let applied = store
        .complete_wait_until(&taken[0], "c", &call, &Default::default())
        .await
        .unwrap();
    assert!(applied.created_tasks);
    // The same task delivered twice is applied once.
    let twice = store
        .complete_wait_until(&taken[0], "c", &call, &Default::default())
        .await
        .unwrap_err();
    assert!(matches!(twice, StoreError::Stale(_)), "{twice:?}");
}

async fn concurrent_claims_get_disjoint_tasks(dialect: Dialect) {
    let h = harness(dialect).await;
    for i in 0..20 {
        h.store
            .start_process(&start_request(&format!("p-claim-{i}"), "A"))
            .await
            .unwrap();
    }
    let claims = (0..4).map(|i| {
        let store = h.store.clone();
        tokio::spawn(async move {
            let owner = format!("owner-{i}");
            let mut ids = Vec::new();
            loop {
                let tasks = store
                    .claim_due_tasks(&owner, 3, Duration::from_secs(30))
                    .await
                    .unwrap();
                if tasks.is_empty() {
                    return ids;
                }
                ids.extend(tasks.iter().map(|t| t.id));
            }
        })
    });
    let mut all: Vec<i64> = futures::future::join_all(claims)
        .await
        .into_iter()
        .flat_map(|r| r.unwrap())
        .collect();
    all.sort();
    let before = all.len();
    all.dedup();
    assert_eq!(before, all.len(), "a task was leased twice");
    assert_eq!(all.len(), 20);
}

async fn two_states_run_to_graceful_completion(dialect: Dialect) {
    let h = harness(dialect).await;
    let store = &*h.store;
    store
        .start_process(&start_request("p-flow", "A"))
        .await
        .unwrap();

    let (task, call) = claim_call(store, "w", TaskType::WaitUntil).await;
    assert_eq!(call.state.input, Some(encoded("{\"n\":1}")));
    assert_eq!(call.process.process_id, "p-flow");
    store
        .complete_wait_until(&task, "w", &call, &Default::default())
        .await
        .unwrap();

    let (task, call) = claim_call(store, "w", TaskType::Execute).await;
    let to_b = AsyncStateExecuteResponse {
        state_decision: StateDecision {
            next_states: vec![StateMovement {
                state_id: "B".into(),
                state_input: Some(encoded("\"to b\"")),
                state_config: Some(AsyncStateConfig {
                    skip_wait_until: true,
                    local_attribute_loading: Some(LocalAttributeLoading {
                        keys: vec!["from_a".into(), "missing".into()],
                        lock_type: LockType::NoLock,
                    }),
                    ..Default::default()
                }),
            }],
            thread_close_decision: None,
        },
        writes: AttributeWrites {
            global_attributes: vec![],
            local_attributes: vec![LocalAttributeValue {
                key: "from_a".into(),
                value: encoded("42"),
            }],
        },
        publish_to_local_queue: vec![],
    };
    let applied = store
        .complete_execute(&task, "w", &call, &to_b)
        .await
        .unwrap();
    assert!(applied.created_tasks && !applied.closed_process);

    let (task, call) = claim_call(store, "w", TaskType::Execute).await;
    assert_eq!(call.state.id.state_id, "B");
    assert_eq!(call.state.input, Some(encoded("\"to b\"")));
    assert_eq!(
        call.attributes.local_attributes,
        vec![LocalAttributeValue {
            key: "from_a".into(),
            value: encoded("42"),
        }]
    );
    let done = AsyncStateExecuteResponse {
        state_decision: StateDecision {
            next_states: vec![],
            thread_close_decision: Some(ThreadCloseDecision {
                close_type: ThreadCloseType::GracefulCompleteProcess,
                output: Some(encoded("\"done\"")),
            }),
        },
        ..Default::default()
    };
    let applied = store
        .complete_execute(&task, "w", &call, &done)
        .await
        .unwrap();
    assert!(applied.closed_process);

    let described = describe(store, "p-flow").await;
    assert_eq!(described.status, ProcessStatus::Completed);
    assert_eq!(described.result, Some(encoded("\"done\"")));
    assert_eq!(described.running_state_executions, 0);
    assert!(described.close_timestamp_ms.unwrap() >= described.start_timestamp_ms);
    assert_nothing_due(store, "w").await;

    let history = store
        .process_history(&ProcessExecutionHistoryRequest {
            process_id: "p-flow".into(),
            process_execution_id: Some(described.process_execution_id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    let types: Vec<&str> = history
        .events
        .iter()
        .map(|e| e.event_type.as_str())
        .collect();
    assert_eq!(
        types,
        [
            "PROCESS_STARTED",
            "WAIT_UNTIL_COMPLETED",
            "EXECUTE_COMPLETED",
            "EXECUTE_COMPLETED",
            "PROCESS_CLOSED"
        ]
    );
    assert!(history
        .events
        .windows(2)
        .all(|w| w[0].event_id < w[1].event_id));
    assert!(history.events.iter().all(|e| e.details.is_object()));
    assert_eq!(history.next_after_event_id, None, "one page holds it all");
    // Pages of two, followed by their cursor, give the same events in order.
    let page = |after: Option<i64>| ProcessExecutionHistoryRequest {
        process_id: "p-flow".into(),
        after_event_id: after,
        page_size: Some(2),
        ..Default::default()
    };
    let mut paged = Vec::new();
    let mut after = None;
    for _ in 0..3 {
        let answer = store.process_history(&page(after)).await.unwrap();
        assert!(answer.events.len() <= 2);
        paged.extend(answer.events);
        after = answer.next_after_event_id;
        if after.is_none() {
            break;
        }
    }
    assert_eq!(after, None, "three pages of two hold five events");
    assert_eq!(paged, history.events);
    // Filtered by type.
    let executes = store
        .process_history(&ProcessExecutionHistoryRequest {
            process_id: "p-flow".into(),
            event_types: vec![
                HistoryEventType::ExecuteCompleted,
                HistoryEventType::ProcessClosed,
            ],
            ..Default::default()
        })
        .await
        .unwrap();
    let types: Vec<&str> = executes
        .events
        .iter()
        .map(|e| e.event_type.as_str())
        .collect();
    assert_eq!(
        types,
        ["EXECUTE_COMPLETED", "EXECUTE_COMPLETED", "PROCESS_CLOSED"]
    );
    // A page size out of range changes nothing and says why.
    let zero = ProcessExecutionHistoryRequest {
        page_size: Some(0),
        ..page(None)
    };
    assert!(matches!(
        store.process_history(&zero).await,
        Err(StoreError::Decide(_))
    ));
    // Unknown executions have no history.
    assert!(matches!(
        store
            .process_history(&ProcessExecutionHistoryRequest {
                process_id: "nope".into(),
                process_execution_id: None,
                ..Default::default()
            })
            .await,
        Err(StoreError::NotFound(_))
    ));
}

async fn timers_fire_only_when_due(dialect: Dialect) {
    let h = harness(dialect).await;
    let store = &*h.store;
    start_waiting_on_a_timer(store, "p-timer", 2).await;

    let due_in = store.next_task_due_in().await.unwrap().expect("a timer");
    assert!(
        due_in > Duration::from_millis(1500) && due_in <= Duration::from_secs(2),
        "{due_in:?}"
    );
    assert_nothing_due(store, "w").await;
    let timer = claim(store, "w", TaskType::Timer).await;
    // Claimed by the database clock, never before fire_at (same machine, same clock).
    assert!(
        Utc::now() >= timer.fire_at,
        "{} < {}",
        Utc::now(),
        timer.fire_at
    );
    assert_eq!(timer.timer_index, Some(0));
    store.fire_timer(&timer, "w").await.unwrap();

    let (_, call) = claim_call(store, "w", TaskType::Execute).await;
    let progress = call.state.command_progress.expect("the timer's progress");
    assert_eq!(progress.timers_fired, vec![true]);
    assert!(history_types(store, "p-timer")
        .await
        .contains(&"TIMER_FIRED".to_string()));
}

/// A backlog of state tasks (all created before the timer came due, so all older by
/// fire_at) must not hold back a due timer: claiming takes it first.
async fn due_timers_are_claimed_before_a_backlog(dialect: Dialect) {
    let h = harness(dialect).await;
    let store = &*h.store;
    start_waiting_on_a_timer(store, "p-due-timer", 1).await;
    for i in 0..5 {
        store
            .start_process(&start_request(&format!("p-backlog-{i}"), "A"))
            .await
            .unwrap();
    }
    // The timer was set for one second after its waitUntil completed, before this.
    tokio::time::sleep(Duration::from_millis(1200)).await;

    let first = store
        .claim_due_tasks("w", 1, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(first[0].task_type, TaskType::Timer, "{first:?}");
    let rest = store
        .claim_due_tasks("w", 10, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(rest.len(), 5, "{rest:?}");
    assert!(rest.iter().all(|t| t.task_type == TaskType::WaitUntil));
    assert!(
        rest.iter().all(|t| t.fire_at < first[0].fire_at),
        "the backlog is older than the timer"
    );
}

/// The call read along with the claim is exactly what loading it separately returns.
async fn a_claimed_call_is_the_call_loading_reads(dialect: Dialect) {
    let h = harness(dialect).await;
    let store = &*h.store;
    store
        .start_process(&start_request("p-claimed-call", "A"))
        .await
        .unwrap();
    let claimed = store
        .claim_tasks_with_calls("w", 10, Duration::from_secs(30), Duration::ZERO, 5)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1, "{claimed:?}");
    let xdb_persistence::Claimed {
        task,
        call,
        priority,
    } = &claimed[0];
    assert_eq!(task.task_type, TaskType::WaitUntil);
    let loaded = store.load_state_call(task, "w").await.unwrap().unwrap();
    assert_eq!(call.as_ref(), Some(&loaded), "{dialect:?}");
    assert_eq!(
        *priority,
        Some(xdb_protocol::priority::DEFAULT),
        "read along"
    );
}

/// Two parallel threads, both read while both ran: the second to finish decides from a
/// process row the first changed since (two running threads, not one). Its transition
/// must see the change (PostgreSQL applies a decision on unlocked rows only if they did
/// not move), or the process would keep waiting for a thread that already ended.
async fn a_decision_on_rows_a_parallel_thread_moved_is_taken_again(dialect: Dialect) {
    let h = harness(dialect).await;
    let store = &*h.store;
    store
        .start_process(&start_request("p-par", "A"))
        .await
        .unwrap();
    let (task, call) = claim_call(store, "w", TaskType::WaitUntil).await;
    store
        .complete_wait_until(&task, "w", &call, &Default::default())
        .await
        .unwrap();
    let (task, call) = claim_call(store, "w", TaskType::Execute).await;
    let to_b_and_c = execute_then(&["B", "C"]);
    store
        .complete_execute(&task, "w", &call, &to_b_and_c)
        .await
        .unwrap();
    // One claim takes both.
    let tasks = store
        .claim_due_tasks("w", 10, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(tasks.len(), 2, "{tasks:?}");
    let mut calls = Vec::new();
    for task in tasks {
        let call = store.load_state_call(&task, "w").await.unwrap().unwrap();
        calls.push((task, call));
    }
    let (first, second) = (calls.remove(0), calls.remove(0));
    assert_eq!(first.1.process.running_state_executions, 2);
    assert_eq!(second.1.process.running_state_executions, 2);
    let close = |close_type| AsyncStateExecuteResponse {
        state_decision: StateDecision {
            next_states: vec![],
            thread_close_decision: Some(ThreadCloseDecision {
                close_type,
                output: Some(encoded("\"done\"")),
            }),
        },
        ..Default::default()
    };

    let applied = store
        .complete_execute(&first.0, "w", &first.1, &close(ThreadCloseType::DeadEnd))
        .await
        .unwrap();
    assert!(!applied.closed_process);
    assert_eq!(describe(store, "p-par").await.running_state_executions, 1);
    // Read when two threads ran; one does now, and this one ends it.
    let applied = store
        .complete_execute(
            &second.0,
            "w",
            &second.1,
            &close(ThreadCloseType::GracefulCompleteProcess),
        )
        .await
        .unwrap();
    assert!(applied.closed_process);
    let described = describe(store, "p-par").await;
    assert_eq!(described.status, ProcessStatus::Completed);
    assert_eq!(described.running_state_executions, 0);
    assert_nothing_due(store, "w").await;
}
