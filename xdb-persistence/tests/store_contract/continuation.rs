//! Continuations: a store that leases them hands the next state's task to the owner that
//! recorded the transition, leased in the same transaction, so no other owner claims it.

use std::time::Duration;

use xdb_engine::TaskType;
use xdb_persistence::StoreOptions;
use xdb_protocol::*;
use xdb_test_util::Dialect;

use crate::common::*;

both!(
    a_transition_leases_its_next_task_to_the_owner,
    parallel_next_states_leave_all_but_one_for_any_owner,
    a_continuation_comes_with_its_state_call_as_loading_reads_it,
);

async fn leasing_harness(dialect: Dialect) -> Harness {
    let h = harness(dialect).await;
    let store = connect(
        &h.db,
        StoreOptions {
            pool_size: 4,
            continuation_lease: Some(Duration::from_secs(30)),
            ..StoreOptions::default()
        },
    )
    .await;
    Harness { db: h.db, store }
}

async fn a_transition_leases_its_next_task_to_the_owner(dialect: Dialect) {
    let h = leasing_harness(dialect).await;
    let store = &*h.store;
    store
        .start_process(&start_request("p-cont", "A"))
        .await
        .unwrap();
    let (task, call) = claim_call(store, "w", TaskType::WaitUntil).await;
    let applied = store
        .complete_wait_until(&task, "w", &call, &Default::default())
        .await
        .unwrap();
    // waitUntil with no commands: A's execute is the continuation.
    let task = applied.continuation.expect("A's execute is leased to w");
    assert_eq!(task.task_type, TaskType::Execute);
    assert_eq!(task.attempt, 1);
    assert!(task.first_attempt_at.is_some());
    assert!(!applied.created_tasks, "nothing else to claim");
    // Leased: another owner finds nothing due.
    assert_nothing_due(store, "other").await;

    let call = store
        .load_state_call(&task, "w")
        .await
        .unwrap()
        .expect("the continuation is current");
    assert_eq!(call.state.id.state_id, "A");
    let applied = store
        .complete_execute(&task, "w", &call, &execute_then(&["B"]))
        .await
        .unwrap();
    let next = applied.continuation.expect("B's execute is leased to w");
    assert_eq!(next.state.as_ref().unwrap().state_id, "B");
    assert_nothing_due(store, "other").await;
    // Only its owner may record it: the lease is checked like a claimed task's.
    let call = store.load_state_call(&next, "w").await.unwrap().unwrap();
    let stolen = store
        .complete_execute(&next, "other", &call, &execute_then(&[]))
        .await;
    assert!(stolen.is_err(), "another owner recorded a leased task");
    store
        .release_leases("w")
        .await
        .expect("release the continuation");
    let task = claim(store, "other", TaskType::Execute).await;
    assert_eq!(task.id, next.id, "a released continuation is claimable");
}

async fn parallel_next_states_leave_all_but_one_for_any_owner(dialect: Dialect) {
    let h = leasing_harness(dialect).await;
    let store = &*h.store;
    store
        .start_process(&start_request("p-fork", "A"))
        .await
        .unwrap();
    let (task, call) = claim_call(store, "w", TaskType::WaitUntil).await;
    let applied = store
        .complete_wait_until(&task, "w", &call, &Default::default())
        .await
        .unwrap();
    let task = applied.continuation.unwrap();
    let call = store.load_state_call(&task, "w").await.unwrap().unwrap();
    let applied = store
        .complete_execute(&task, "w", &call, &execute_then(&["B", "C", "D"]))
        .await
        .unwrap();
    let kept = applied.continuation.expect("one thread continues here");
    assert!(applied.created_tasks, "the other threads are left to claim");
    let claimed = store
        .claim_due_tasks("other", 10, Duration::from_secs(30))
        .await
        .unwrap();
    let mut states: Vec<String> = claimed
        .iter()
        .map(|t| t.state.as_ref().unwrap().state_id.clone())
        .collect();
    states.sort();
    assert_eq!(claimed.len(), 2);
    assert!(!states.contains(&kept.state.as_ref().unwrap().state_id));
}

/// What the transaction that leased a continuation read for its worker call equals what
/// loading it afterwards reads (the new state's creation time aside: the database's
/// clock against the service's).
async fn a_continuation_comes_with_its_state_call_as_loading_reads_it(dialect: Dialect) {
    let h = leasing_harness(dialect).await;
    let store = &*h.store;
    store
        .start_process(&start_request("p-preload", "A"))
        .await
        .unwrap();
    let (task, call) = claim_call(store, "w", TaskType::WaitUntil).await;
    let applied = store
        .complete_wait_until(&task, "w", &call, &Default::default())
        .await
        .unwrap();
    // The same state moving from waitUntil to execute: an updated row.
    let task = applied.continuation.clone().unwrap();
    let preloaded = *applied.continuation_call.expect("A's execute call is read");
    let loaded = store.load_state_call(&task, "w").await.unwrap().unwrap();
    assert_eq!(preloaded, loaded);

    // A new state B loading a local attribute that A's execute writes.
    let value = EncodedObject {
        encoding: "json".into(),
        data: "42".into(),
    };
    let mut response = execute_then(&["B"]);
    response.state_decision.next_states[0]
        .state_config
        .as_mut()
        .unwrap()
        .local_attribute_loading = Some(LocalAttributeLoading {
        keys: vec!["k".into()],
        lock_type: LockType::NoLock,
    });
    response.writes.local_attributes = vec![LocalAttributeValue {
        key: "k".into(),
        value: value.clone(),
    }];
    let applied = store
        .complete_execute(&task, "w", &loaded, &response)
        .await
        .unwrap();
    let next = applied.continuation.clone().unwrap();
    let mut preloaded = *applied.continuation_call.expect("B's execute call is read");
    let loaded = store.load_state_call(&next, "w").await.unwrap().unwrap();
    assert_eq!(preloaded.attributes.local_attributes[0].value, value);
    preloaded.state.created_at = loaded.state.created_at;
    assert_eq!(preloaded, loaded);
}
