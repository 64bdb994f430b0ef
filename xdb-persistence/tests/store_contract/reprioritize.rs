//! Reprioritize: an operator's change of a running execution's priority or fairness key
//! reorders its waiting tasks at once and those it writes later, is recorded in its
//! history with the order before and after, and a bad or inapplicable change is refused
//! and changes nothing.

use std::time::Duration;

use xdb_persistence::StoreError;
use xdb_protocol::{
    ClaimOrder, ProcessExecutionControlRequest, ProcessExecutionHistoryRequest,
    ProcessExecutionStartRequest, ProcessExecutionStopRequest, ProcessExecutionStopType,
    ProcessStartConfig, Reprioritization, ReprioritizedDetails,
};
use xdb_test_util::Dialect;

use crate::common::*;

both!(
    a_reprioritized_execution_is_claimed_in_its_new_order,
    reprioritize_refuses_what_is_wrong_or_does_not_apply
);

const LEASE: Duration = Duration::from_secs(30);

fn start_at(process_id: &str, priority: u8, key: Option<&str>) -> ProcessExecutionStartRequest {
    ProcessExecutionStartRequest {
        process_start_config: Some(ProcessStartConfig {
            priority: Some(priority),
            fairness_key: key.map(str::to_string),
            ..Default::default()
        }),
        ..start_request(process_id, "A")
    }
}

fn reprioritize(
    process_id: &str,
    priority: Option<u8>,
    key: Option<&str>,
    weight: Option<u32>,
) -> ProcessExecutionControlRequest {
    ProcessExecutionControlRequest {
        process_id: process_id.into(),
        reason: Some("the customer escalated".into()),
        identity: Some("on-call".into()),
        reprioritize: Some(Reprioritization {
            priority,
            fairness_key: key.map(str::to_string),
            fairness_weight: weight,
        }),
        ..Default::default()
    }
}

/// The type, priority, key and weight of the execution's task, words apart (PostgreSQL
/// pads a `CHAR`; no key is no word).
async fn task_orders(h: &Harness, process_id: &str) -> String {
    let sql = format!(
        "SELECT CONCAT(t.task_type, ' ', CAST(t.priority AS CHAR(2)), ' ', t.fairness_key, ' ', \
           CAST(t.fairness_weight AS CHAR(5))) FROM xdb_sys_tasks t \
         JOIN xdb_sys_process_executions p ON p.id = t.process_execution_id \
         WHERE p.process_id = '{process_id}' ORDER BY t.id"
    );
    let text = sql_text(&h.db, &sql).await.unwrap_or_default();
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

async fn reprioritized_events(
    store: &dyn xdb_persistence::ProcessStore,
    process_id: &str,
) -> Vec<ReprioritizedDetails> {
    store
        .process_history(&ProcessExecutionHistoryRequest {
            process_id: process_id.into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .events
        .into_iter()
        .filter(|e| e.event_type == "REPRIORITIZED")
        .map(|e| serde_json::from_value(e.details).unwrap())
        .collect()
}

async fn a_reprioritized_execution_is_claimed_in_its_new_order(dialect: Dialect) {
    let h = harness(dialect).await;
    let store = &*h.store;
    for n in 0..5 {
        store
            .start_process(&start_at(&format!("low-{n}"), 5, None))
            .await
            .unwrap();
    }
    store
        .start_process(&start_at("late", 5, None))
        .await
        .unwrap();
    let answer = store
        .reprioritize(&reprioritize("late", Some(1), Some("acme"), Some(2)))
        .await
        .unwrap();
    assert_eq!(answer.state_execution_ids, ["A-1"], "its waiting call");
    let late = describe(store, "late").await;
    assert_eq!(
        (
            late.priority,
            late.fairness_key.as_deref(),
            late.fairness_weight
        ),
        (1, Some("acme"), Some(2))
    );
    assert_eq!(task_orders(&h, "late").await, "WAIT_UNTIL 1 acme 2");
    assert_eq!(
        reprioritized_events(store, "late").await,
        [ReprioritizedDetails {
            before: ClaimOrder {
                priority: 5,
                fairness_key: None,
                fairness_weight: None,
            },
            after: ClaimOrder {
                priority: 1,
                fairness_key: Some("acme".into()),
                fairness_weight: Some(2),
            },
            reason: Some("the customer escalated".into()),
            identity: Some("on-call".into()),
            state_execution_ids: vec!["A-1".into()],
        }]
    );

    // Started last at priority 5, claimed first at priority 1.
    let claimed = store.claim_due_tasks("w", 1, LEASE).await.unwrap();
    assert_eq!(
        claimed[0].process_execution_id.to_string(),
        late.process_execution_id
    );
    // The task its waitUntil's completion writes takes the new order too.
    let call = store
        .load_state_call(&claimed[0], "w")
        .await
        .unwrap()
        .expect("the claimed task is current");
    store
        .complete_wait_until(&claimed[0], "w", &call, &Default::default())
        .await
        .unwrap();
    assert_eq!(task_orders(&h, "late").await, "EXECUTE 1 acme 2");

    // Only the priority: the key and weight stay.
    store
        .reprioritize(&reprioritize("late", Some(4), None, None))
        .await
        .unwrap();
    assert_eq!(task_orders(&h, "late").await, "EXECUTE 4 acme 2");
    // A key of "" removes the key and its weight.
    store
        .reprioritize(&reprioritize("late", None, Some(""), None))
        .await
        .unwrap();
    let late = describe(store, "late").await;
    assert_eq!((late.fairness_key, late.fairness_weight), (None, None));
    assert_eq!(task_orders(&h, "late").await, "EXECUTE 4 1");
    assert_eq!(reprioritized_events(store, "late").await.len(), 3);
}

async fn reprioritize_refuses_what_is_wrong_or_does_not_apply(dialect: Dialect) {
    let h = harness(dialect).await;
    let store = &*h.store;
    store
        .start_process(&start_at("plain", 3, None))
        .await
        .unwrap();
    let invalid_field = |refused: StoreError| match refused {
        StoreError::Decide(error) => error.to_string(),
        other => panic!("{other:?}"),
    };
    let mut nothing = reprioritize("plain", None, None, None);
    for (request, field) in [
        (
            reprioritize("plain", Some(9), None, None),
            "reprioritize.priority",
        ),
        (
            reprioritize("plain", None, Some("t"), Some(0)),
            "reprioritize.fairnessWeight",
        ),
        (
            reprioritize("plain", None, Some(""), Some(2)),
            "reprioritize.fairnessWeight",
        ),
        (nothing.clone(), "reprioritize"),
    ] {
        let refused = store.reprioritize(&request).await.unwrap_err();
        let text = invalid_field(refused);
        assert!(text.contains(&format!("{field}: ")), "{field}: {text}");
    }
    nothing.reprioritize = None;
    let text = invalid_field(store.reprioritize(&nothing).await.unwrap_err());
    assert!(text.contains("reprioritize: "), "{text}");
    // Another control does not take it.
    let refused = store
        .pause(&reprioritize("plain", Some(1), None, None))
        .await
        .unwrap_err();
    assert!(invalid_field(refused).contains("reprioritize: only"));
    // A weight for an execution without a key does not apply.
    match store
        .reprioritize(&reprioritize("plain", None, None, Some(2)))
        .await
    {
        Err(StoreError::NotApplicable(why)) => assert!(why.contains("fairnessKey"), "{why}"),
        other => panic!("{other:?}"),
    }
    let plain = describe(store, "plain").await;
    assert_eq!((plain.priority, plain.fairness_key), (3, None), "unchanged");
    assert!(reprioritized_events(store, "plain").await.is_empty());
    assert_eq!(task_orders(&h, "plain").await, "WAIT_UNTIL 3 1");

    // A closed execution is not reordered.
    store
        .stop_process(&ProcessExecutionStopRequest {
            process_id: "plain".into(),
            process_execution_id: None,
            request_id: None,
            stop_type: ProcessExecutionStopType::Terminate,
            reason: None,
        })
        .await
        .unwrap();
    let closed = store
        .reprioritize(&reprioritize("plain", Some(1), None, None))
        .await
        .unwrap_err();
    assert!(
        matches!(
            closed,
            StoreError::Decide(xdb_engine::decide::DecideError::NotRunning)
        ),
        "{closed:?}"
    );
}
