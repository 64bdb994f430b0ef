//! Fairness keys: claims share a priority between keys, each key in turn taking up to
//! its weight of tasks, so one key's backlog never starves another's next task; tasks
//! without a key are a key of their own; every state task of an execution carries its
//! key.

use std::collections::HashMap;
use std::time::Duration;

use xdb_protocol::{
    FlowLimits, FlowLimitsSetRequest, ProcessExecutionStartRequest, ProcessStartConfig,
};
use xdb_test_util::Dialect;

use crate::common::*;

both!(
    a_key_s_backlog_does_not_starve_another_key_s_next_task,
    a_key_takes_its_weight_in_each_turn,
    the_key_and_weight_are_kept_and_bad_ones_refused,
    a_type_s_fairness_attribute_and_weight_key_its_starts
);

const LEASE: Duration = Duration::from_secs(30);

fn start_keyed(
    process_id: &str,
    key: Option<&str>,
    weight: Option<u32>,
) -> ProcessExecutionStartRequest {
    ProcessExecutionStartRequest {
        process_start_config: Some(ProcessStartConfig {
            fairness_key: key.map(str::to_string),
            fairness_weight: weight,
            ..Default::default()
        }),
        ..start_request(process_id, "A")
    }
}

/// Each execution's process id by its execution id.
async fn process_ids(
    store: &dyn xdb_persistence::ProcessStore,
    ids: &[&str],
) -> HashMap<String, String> {
    let mut by_execution = HashMap::new();
    for id in ids {
        by_execution.insert(
            describe(store, id).await.process_execution_id,
            id.to_string(),
        );
    }
    by_execution
}

async fn a_key_s_backlog_does_not_starve_another_key_s_next_task(dialect: Dialect) {
    let h = harness(dialect).await;
    let store = &*h.store;
    let mut ids = Vec::new();
    for n in 0..40 {
        let id = format!("a-{n}");
        store
            .start_process(&start_keyed(&id, Some("tenant-a"), None))
            .await
            .unwrap();
        ids.push(id);
    }
    for n in 0..3 {
        let id = format!("b-{n}");
        store
            .start_process(&start_keyed(&id, Some("tenant-b"), None))
            .await
            .unwrap();
        ids.push(id);
    }
    for n in 0..2 {
        let id = format!("keyless-{n}");
        store
            .start_process(&start_keyed(&id, None, None))
            .await
            .unwrap();
        ids.push(id);
    }
    let names = process_ids(store, &ids.iter().map(String::as_str).collect::<Vec<_>>()).await;

    // One task a claim, as an instance under a backlog claims: the keys take turns.
    let mut order = Vec::new();
    for _ in 0..9 {
        let claimed = store.claim_due_tasks("w", 1, LEASE).await.unwrap();
        assert_eq!(claimed.len(), 1);
        order.push(names[&claimed[0].process_execution_id.to_string()].clone());
    }
    let first_of = |prefix: &str| order.iter().filter(|id| id.starts_with(prefix)).count();
    assert_eq!(first_of("b-"), 3, "tenant-b's 3 within 9 claims: {order:?}");
    assert_eq!(first_of("keyless-"), 2, "the keyless ones too: {order:?}");
    assert_eq!(first_of("a-"), 4, "tenant-a its share: {order:?}");
    // Each key's own in start order.
    let of_a: Vec<&String> = order.iter().filter(|id| id.starts_with("a-")).collect();
    assert_eq!(of_a, ["a-0", "a-1", "a-2", "a-3"]);

    // The rest of the backlog, then nothing.
    let rest = store.claim_due_tasks("w", 100, LEASE).await.unwrap();
    assert_eq!(rest.len(), 36);
    assert_nothing_due(store, "w").await;
}

async fn a_key_takes_its_weight_in_each_turn(dialect: Dialect) {
    let h = harness(dialect).await;
    let store = &*h.store;
    let mut ids = Vec::new();
    for n in 0..20 {
        for (key, weight) in [("heavy", 3), ("light", 1)] {
            let id = format!("{key}-{n}");
            store
                .start_process(&start_keyed(&id, Some(key), Some(weight)))
                .await
                .unwrap();
            ids.push(id);
        }
    }
    let names = process_ids(store, &ids.iter().map(String::as_str).collect::<Vec<_>>()).await;
    let claimed = store.claim_due_tasks("w", 8, LEASE).await.unwrap();
    let heavy = claimed
        .iter()
        .filter(|task| names[&task.process_execution_id.to_string()].starts_with("heavy"))
        .count();
    assert_eq!((heavy, claimed.len() - heavy), (6, 2), "3 to 1");
}

async fn the_key_and_weight_are_kept_and_bad_ones_refused(dialect: Dialect) {
    let h = harness(dialect).await;
    let store = &*h.store;
    store
        .start_process(&start_keyed("keyed", Some("tenant-ä"), Some(7)))
        .await
        .unwrap();
    let keyed = describe(store, "keyed").await;
    assert_eq!(keyed.fairness_key.as_deref(), Some("tenant-ä"));
    assert_eq!(keyed.fairness_weight, Some(7));

    // The start's task, then the one its waitUntil's completion writes: keyed both.
    let keyed_count = || {
        let sql = "SELECT CAST(COUNT(*) AS CHAR(8)) FROM xdb_sys_tasks t \
             JOIN xdb_sys_process_executions p ON p.id = t.process_execution_id \
             WHERE p.process_id = 'keyed' AND t.fairness_key = 'tenant-ä' \
               AND t.fairness_weight = 7";
        let db = &h.db;
        async move {
            sql_text(db, sql)
                .await
                .unwrap_or_default()
                .trim()
                .parse::<u32>()
                .unwrap()
        }
    };
    assert_eq!(keyed_count().await, 1, "the waitUntil task");
    let (task, call) = claim_call(store, "w", xdb_engine::TaskType::WaitUntil).await;
    store
        .complete_wait_until(&task, "w", &call, &Default::default())
        .await
        .unwrap();
    assert_eq!(keyed_count().await, 1, "the execute task");

    store
        .start_process(&start_keyed("plain", None, None))
        .await
        .unwrap();
    let plain = describe(store, "plain").await;
    assert_eq!((plain.fairness_key, plain.fairness_weight), (None, None));

    for (key, weight, field) in [
        (Some(""), None, "processStartConfig.fairnessKey"),
        (Some("t"), Some(0), "processStartConfig.fairnessWeight"),
        (Some("t"), Some(1001), "processStartConfig.fairnessWeight"),
        (None, Some(2), "processStartConfig.fairnessWeight"),
    ] {
        let refused = store
            .start_process(&start_keyed("refused", key, weight))
            .await
            .unwrap_err();
        assert!(refused.to_string().contains(field), "{refused}");
    }
    let nothing = store
        .describe_process(&xdb_protocol::ProcessExecutionDescribeRequest {
            process_id: "refused".into(),
            process_execution_id: None,
        })
        .await;
    assert!(nothing.is_err(), "nothing started");
}

async fn a_type_s_fairness_attribute_and_weight_key_its_starts(dialect: Dialect) {
    let h = harness(dialect).await;
    h.db.execute_sql(users_table(dialect)).await;
    let store = &*h.store;
    let set_type_fairness = |limits: Option<FlowLimits>| async move {
        store
            .set_flow_limit_override(
                &FlowLimitsSetRequest {
                    process_type: "ContractTest".into(),
                    state_id: None,
                    override_limits: limits,
                    reason: Some("share claims by tenant".into()),
                },
                "test",
            )
            .await
            .unwrap()
    };
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
    let entry = set_type_fairness(Some(FlowLimits {
        fairness_key_attribute: Some("score".into()),
        fairness_weight: Some(4),
        ..Default::default()
    }))
    .await;
    assert_eq!(entry.effective.fairness_weight, Some(4));
    // The store that made the change applies it at once.
    store
        .start_process(&scored("by-attribute", "u1", Some(7)))
        .await
        .unwrap();
    let keyed = describe(store, "by-attribute").await;
    assert_eq!(
        (keyed.fairness_key.as_deref(), keyed.fairness_weight),
        (Some("7"), Some(4))
    );
    let task_key = sql_text(
        &h.db,
        "SELECT t.fairness_key FROM xdb_sys_tasks t \
         JOIN xdb_sys_process_executions p ON p.id = t.process_execution_id \
         WHERE p.process_id = 'by-attribute'",
    )
    .await;
    assert_eq!(task_key.as_deref(), Some("7"), "the task carries it");

    // A start that names its own key and weight keeps them; one that names a key only
    // takes the type's weight; one writing no value for the attribute has no key.
    let mut named = scored("named", "u2", Some(7));
    let config = named.process_start_config.as_mut().unwrap();
    config.fairness_key = Some("tenant-x".into());
    config.fairness_weight = Some(9);
    store.start_process(&named).await.unwrap();
    let named = describe(store, "named").await;
    assert_eq!(
        (named.fairness_key.as_deref(), named.fairness_weight),
        (Some("tenant-x"), Some(9))
    );
    let mut key_only = scored("key-only", "u3", Some(7));
    key_only.process_start_config.as_mut().unwrap().fairness_key = Some("tenant-y".into());
    store.start_process(&key_only).await.unwrap();
    assert_eq!(describe(store, "key-only").await.fairness_weight, Some(4));
    store
        .start_process(&scored("unkeyed", "u4", None))
        .await
        .unwrap();
    let unkeyed = describe(store, "unkeyed").await;
    assert_eq!(
        (unkeyed.fairness_key, unkeyed.fairness_weight),
        (None, None)
    );

    // Cleared: starts are keyless again.
    set_type_fairness(None).await;
    store
        .start_process(&scored("after", "u5", Some(7)))
        .await
        .unwrap();
    assert_eq!(describe(store, "after").await.fairness_key, None);
}
