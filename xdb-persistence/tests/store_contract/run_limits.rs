//! Running-execution limits: starts over a key's `maxRunningExecutions` wait PENDING in
//! start order, their tasks held; closing a running one lets the next in; a type whose
//! limit is cleared lets every waiting one in.

use std::collections::BTreeSet;
use std::time::Duration;

use xdb_persistence::{ProcessStore, StoreError};
use xdb_protocol::*;
use xdb_test_util::Dialect;

use crate::common::*;

both!(
    starts_over_a_keys_limit_wait_in_order_and_run_as_slots_free,
    a_global_attribute_keys_the_limit_and_a_start_without_it_is_refused,
    an_admitting_store_acts_on_a_limit_another_store_has_just_set,
);

fn limited_start(process_id: &str, key: &str) -> ProcessExecutionStartRequest {
    ProcessExecutionStartRequest {
        process_start_config: Some(ProcessStartConfig {
            concurrency_key: Some(key.into()),
            ..Default::default()
        }),
        ..start_request(process_id, "A")
    }
}

async fn set_limit(store: &dyn ProcessStore, limit: Option<u32>) {
    store
        .set_flow_limit_override(
            &FlowLimitsSetRequest {
                process_type: "ContractTest".into(),
                state_id: None,
                override_limits: limit.map(|n| FlowLimits {
                    max_running_executions: Some(n),
                    ..Default::default()
                }),
                reason: None,
            },
            "test",
        )
        .await
        .unwrap();
}

/// The key an execution waits on, if it is PENDING.
async fn pending_on(store: &dyn ProcessStore, process_id: &str) -> Option<String> {
    describe(store, process_id)
        .await
        .paused
        .and_then(|pause| pause.pending_on_key)
}

/// The process ids of every task due now (left leased to the test).
async fn due_process_ids(store: &dyn ProcessStore, owner: &str) -> BTreeSet<String> {
    let tasks = store
        .claim_due_tasks(owner, 100, Duration::from_secs(60))
        .await
        .unwrap();
    let mut ids = BTreeSet::new();
    for task in tasks {
        let call = store.load_state_call(&task, owner).await.unwrap();
        ids.insert(call.expect("a current task").process.process_id.clone());
    }
    ids
}

async fn stop(store: &dyn ProcessStore, process_id: &str) {
    store
        .stop_process(&ProcessExecutionStopRequest {
            process_execution_id: None,
            request_id: None,
            process_id: process_id.into(),
            stop_type: ProcessExecutionStopType::Terminate,
            reason: None,
        })
        .await
        .unwrap();
}

async fn starts_over_a_keys_limit_wait_in_order_and_run_as_slots_free(dialect: Dialect) {
    let h = harness(dialect).await;
    let store = &*h.store;
    set_limit(store, Some(2)).await;
    for (id, key) in [
        ("a1", "a"),
        ("a2", "a"),
        ("a3", "a"),
        ("a4", "a"),
        ("b1", "b"),
    ] {
        store.start_process(&limited_start(id, key)).await.unwrap();
    }
    for running in ["a1", "a2", "b1"] {
        assert_eq!(pending_on(store, running).await, None, "{running}");
    }
    for waiting in ["a3", "a4"] {
        assert_eq!(
            pending_on(store, waiting).await.as_deref(),
            Some("a"),
            "{waiting}"
        );
    }
    // Lists say which wait.
    let listed = store
        .list_processes(&ProcessExecutionListRequest::default())
        .await
        .unwrap();
    let pending: BTreeSet<&str> = listed
        .executions
        .iter()
        .filter(|e| e.pending)
        .map(|e| e.process_id.as_str())
        .collect();
    assert_eq!(pending, BTreeSet::from(["a3", "a4"]));
    // The gauges count them as pending, not as an operator's pauses.
    let gauges = store.operator_gauges(5, 100).await.unwrap();
    assert_eq!(
        (gauges.paused_executions, gauges.pending_executions),
        (0, 2)
    );
    // Only the running ones' tasks are due; nothing is admitted while the key is full.
    assert_eq!(
        due_process_ids(store, "w").await,
        BTreeSet::from(["a1".to_string(), "a2".into(), "b1".into()])
    );
    assert_eq!(store.admit_pending_executions().await.unwrap(), 0);
    // An operator cannot resume a held execution past the limit.
    let resumed = store
        .resume(&ProcessExecutionControlRequest {
            process_id: "a3".into(),
            ..Default::default()
        })
        .await;
    assert!(
        matches!(resumed, Err(StoreError::NotApplicable(_))),
        "{resumed:?}"
    );

    // Closing a running one frees its slot: the first waiting one runs, the next waits.
    stop(store, "a1").await;
    assert_eq!(store.admit_pending_executions().await.unwrap(), 1);
    assert_eq!(pending_on(store, "a3").await, None);
    assert_eq!(pending_on(store, "a4").await.as_deref(), Some("a"));
    assert_eq!(
        due_process_ids(store, "w").await,
        BTreeSet::from(["a3".to_string()])
    );
    assert!(history_types(store, "a3")
        .await
        .contains(&HistoryEventType::Resumed.as_str().to_string()));
    // A new start of the full key waits too, behind a4.
    store
        .start_process(&limited_start("a5", "a"))
        .await
        .unwrap();
    assert_eq!(pending_on(store, "a5").await.as_deref(), Some("a"));

    // Without the limit every waiting execution runs: the store that made the change
    // reads it at once (another store within about a second).
    set_limit(store, None).await;
    assert_eq!(store.admit_pending_executions().await.unwrap(), 2);
    assert_eq!(pending_on(store, "a4").await, None);
    assert_eq!(pending_on(store, "a5").await, None);
    assert_eq!(
        due_process_ids(store, "w").await,
        BTreeSet::from(["a4".to_string(), "a5".into()])
    );
    // A limit set again holds the very next start.
    set_limit(store, Some(1)).await;
    store
        .start_process(&limited_start("a6", "a"))
        .await
        .unwrap();
    assert_eq!(pending_on(store, "a6").await.as_deref(), Some("a"));

    // Closed executions hold nothing: their rows go, a batch at a time.
    for id in ["a2", "a3", "a4", "a5", "a6", "b1"] {
        stop(store, id).await;
    }
    assert_eq!(store.forget_closed_run_slots().await.unwrap(), 6);
    assert_eq!(store.forget_closed_run_slots().await.unwrap(), 0);
    // Neither key has an execution holding or waiting for a slot: their rows go too.
    let key_rows = || {
        sql_text(
            &h.db,
            "SELECT CAST(COUNT(*) AS CHAR(8)) FROM xdb_sys_run_slot_keys",
        )
    };
    assert_eq!(key_rows().await.as_deref().map(str::trim), Some("0"));
    assert_eq!(
        sql_text(
            &h.db,
            "SELECT CASE WHEN COUNT(*) = 0 THEN 'none' ELSE 'some' END FROM xdb_sys_run_slots \
             WHERE admitted <> 2"
        )
        .await
        .as_deref(),
        Some("none")
    );

    // A reset of a closed execution starts a new one, counted under the key its
    // predecessor was: the first takes the free slot of "a", the next waits.
    for (closed, waits) in [("a2", None), ("a3", Some("a"))] {
        let reset = store
            .reset(&ProcessExecutionResetRequest {
                process_id: closed.into(),
                state_id: "A".into(),
                ..Default::default()
            })
            .await
            .unwrap();
        assert!(reset.new_execution, "{closed}");
        assert_eq!(
            pending_on(store, closed).await.as_deref(),
            waits,
            "{closed}"
        );
    }
    assert_eq!(store.admit_pending_executions().await.unwrap(), 0);
    // The limit held with the key's row made again by the first reset.
    assert_eq!(key_rows().await.as_deref().map(str::trim), Some("1"));
    stop(store, "a2").await;
    assert_eq!(store.admit_pending_executions().await.unwrap(), 1);
    assert_eq!(pending_on(store, "a3").await, None);
    // a3 runs, holding a slot of the key: its row stays.
    store.forget_closed_run_slots().await.unwrap();
    assert_eq!(key_rows().await.as_deref().map(str::trim), Some("1"));
    stop(store, "a3").await;
    assert_eq!(store.forget_closed_run_slots().await.unwrap(), 1);
    assert_eq!(key_rows().await.as_deref().map(str::trim), Some("0"));
}

async fn a_global_attribute_keys_the_limit_and_a_start_without_it_is_refused(dialect: Dialect) {
    let h = harness(dialect).await;
    h.db.execute_sql(users_table(dialect)).await;
    let store = &*h.store;
    store
        .set_flow_limit_override(
            &FlowLimitsSetRequest {
                process_type: "ContractTest".into(),
                state_id: None,
                override_limits: Some(FlowLimits {
                    max_running_executions: Some(1),
                    concurrency_key_attribute: Some("score".into()),
                    ..Default::default()
                }),
                reason: None,
            },
            "test",
        )
        .await
        .unwrap();
    let scored = |process_id: &str, user: &str, score: Option<i64>| {
        let initial = score.map(|s| vec![value("score", s)]).unwrap_or_default();
        ProcessExecutionStartRequest {
            process_start_config: Some(ProcessStartConfig {
                global_attribute_config: Some(users_config(user, initial)),
                ..Default::default()
            }),
            ..start_request(process_id, "A")
        }
    };
    for (id, user, score) in [("s1", "u1", 7), ("s2", "u2", 7), ("s3", "u3", 8)] {
        store
            .start_process(&scored(id, user, Some(score)))
            .await
            .unwrap();
    }
    assert_eq!(pending_on(store, "s1").await, None);
    assert_eq!(pending_on(store, "s2").await.as_deref(), Some("7"));
    assert_eq!(pending_on(store, "s3").await, None);
    // Neither a key nor the attribute: refused, nothing written.
    let refused = store.start_process(&scored("s4", "u4", None)).await;
    match refused {
        Err(StoreError::Decide(error)) => {
            let text = error.to_string();
            assert!(text.contains("processStartConfig.concurrencyKey"), "{text}");
            assert!(text.contains("'score'"), "{text}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        sql_text(
            &h.db,
            "SELECT CASE WHEN COUNT(*) = 0 THEN 'none' ELSE 'some' END FROM users WHERE id = 'u4'"
        )
        .await
        .as_deref(),
        Some("none")
    );
    // A named key still wins over the attribute.
    let mut named = scored("s5", "u5", Some(7));
    if let Some(config) = named.process_start_config.as_mut() {
        config.concurrency_key = Some("other".into());
    }
    store.start_process(&named).await.unwrap();
    assert_eq!(pending_on(store, "s5").await, None);
}

/// The API sets a limit and queues starts through its store; the async service admits
/// through another, which read the limits (none) a moment before. It must not take its
/// stale "unlimited" for a cleared limit and run every waiting execution.
async fn an_admitting_store_acts_on_a_limit_another_store_has_just_set(dialect: Dialect) {
    let h = harness(dialect).await;
    let api = &*h.store;
    let admitting = connect(&h.db, Default::default()).await;
    // The admitting store knows the limits now: there are none.
    admitting
        .start_process(&limited_start("before", "k"))
        .await
        .unwrap();
    assert_eq!(pending_on(&*admitting, "before").await, None);
    stop(api, "before").await;

    set_limit(api, Some(1)).await;
    for id in ["k1", "k2"] {
        api.start_process(&limited_start(id, "k")).await.unwrap();
    }
    assert_eq!(pending_on(api, "k2").await.as_deref(), Some("k"));
    assert_eq!(admitting.admit_pending_executions().await.unwrap(), 0);
    assert_eq!(pending_on(api, "k2").await.as_deref(), Some("k"));
    stop(api, "k1").await;
    assert_eq!(admitting.admit_pending_executions().await.unwrap(), 1);
    assert_eq!(pending_on(api, "k2").await, None);
}
