//! Priorities: a claim takes the tasks of higher-priority executions first, however
//! long the backlog of lower ones, and every task of an execution carries its priority:
//! those its transitions write, one put back by a resume, and a reset's.

use std::time::Duration;

use xdb_protocol::{
    FlowLimits, FlowLimitsSetRequest, ProcessExecutionControlRequest, ProcessExecutionResetRequest,
    ProcessExecutionStartRequest, ProcessExecutionStopRequest, ProcessExecutionStopType,
    ProcessStartConfig,
};
use xdb_test_util::Dialect;

use crate::common::*;

both!(
    a_higher_priority_is_claimed_ahead_of_a_backlog,
    every_task_of_an_execution_carries_its_priority,
    a_type_s_priority_applies_to_its_starts_that_name_none,
    a_claim_bounded_by_priority_leaves_the_lower_ones_waiting
);

const LEASE: Duration = Duration::from_secs(30);

fn start_at(process_id: &str, priority: Option<u8>) -> ProcessExecutionStartRequest {
    ProcessExecutionStartRequest {
        process_start_config: Some(ProcessStartConfig {
            priority,
            ..Default::default()
        }),
        ..start_request(process_id, "A")
    }
}

async fn a_higher_priority_is_claimed_ahead_of_a_backlog(dialect: Dialect) {
    let h = harness(dialect).await;
    let store = &*h.store;
    for n in 0..20 {
        store
            .start_process(&start_at(&format!("low-{n}"), Some(5)))
            .await
            .unwrap();
    }
    store.start_process(&start_at("usual", None)).await.unwrap();
    store
        .start_process(&start_at("urgent", Some(1)))
        .await
        .unwrap();
    let urgent = describe(store, "urgent").await;
    let usual = describe(store, "usual").await;
    assert_eq!((urgent.priority, usual.priority), (1, 3));
    assert_eq!(describe(store, "low-0").await.priority, 5);

    // The newest starts, yet first: priority 1, then 3, then the backlog of 5.
    let claimed = store.claim_due_tasks("w", 2, LEASE).await.unwrap();
    let executions: Vec<String> = claimed
        .iter()
        .map(|task| task.process_execution_id.to_string())
        .collect();
    assert_eq!(
        executions,
        [urgent.process_execution_id, usual.process_execution_id]
    );
    let backlog = store.claim_due_tasks("w", 100, LEASE).await.unwrap();
    assert_eq!(backlog.len(), 20, "the backlog follows");
    assert_nothing_due(store, "w").await;

    // Out of bounds: refused, and nothing started.
    for priority in [0, 6, 9] {
        let refused = store
            .start_process(&start_at("refused", Some(priority)))
            .await
            .unwrap_err();
        assert!(
            refused.to_string().contains("processStartConfig.priority"),
            "{refused}"
        );
    }
    assert_nothing_due(store, "w").await;
}

async fn every_task_of_an_execution_carries_its_priority(dialect: Dialect) {
    let h = harness(dialect).await;
    let store = &*h.store;
    store
        .start_process(&start_at("urgent", Some(1)))
        .await
        .unwrap();
    // The start's task, then the one its waitUntil's completion writes (leased to the
    // same instance or not, as the dialect's form does).
    let (task, call) = claim_call(store, "w", xdb_engine::TaskType::WaitUntil).await;
    store
        .complete_wait_until(&task, "w", &call, &Default::default())
        .await
        .unwrap();
    let count = |priority: &str| {
        let sql = format!(
            "SELECT CAST(COUNT(*) AS CHAR(8)) FROM xdb_sys_tasks t \
             JOIN xdb_sys_process_executions p ON p.id = t.process_execution_id \
             WHERE p.process_id = 'urgent' AND t.priority {priority}"
        );
        let db = &h.db;
        async move {
            sql_text(db, &sql)
                .await
                .unwrap_or_default()
                .trim()
                .parse::<u32>()
                .unwrap()
        }
    };
    assert_eq!(count("= 1").await, 1, "the execute task");
    assert_eq!(count("<> 1").await, 0);

    // Set aside by a pause and put back by the resume: the task is written again, with
    // the execution's priority.
    store.release_leases("w").await.unwrap();
    let control = ProcessExecutionControlRequest {
        process_id: "urgent".into(),
        ..Default::default()
    };
    store.pause(&control).await.unwrap();
    assert_eq!(count("IS NOT NULL").await, 0, "set aside by the pause");
    store.resume(&control).await.unwrap();
    assert_eq!(count("= 1").await, 1, "put back by the resume");
    assert_eq!(count("<> 1").await, 0);

    // A reset of the closed execution starts a new one at the same priority.
    store
        .stop_process(&ProcessExecutionStopRequest {
            process_id: "urgent".into(),
            process_execution_id: None,
            request_id: None,
            stop_type: ProcessExecutionStopType::Terminate,
            reason: None,
        })
        .await
        .unwrap();
    assert_eq!(count("IS NOT NULL").await, 0, "stopped");
    let reset = store
        .reset(&ProcessExecutionResetRequest {
            process_id: "urgent".into(),
            state_id: "A".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(reset.new_execution);
    assert_eq!(describe(store, "urgent").await.priority, 1);
    assert_eq!(count("= 1").await, 1, "the new execution's first task");
    assert_eq!(count("<> 1").await, 0);
}

async fn a_type_s_priority_applies_to_its_starts_that_name_none(dialect: Dialect) {
    let h = harness(dialect).await;
    let store = &*h.store;
    let set_type_priority = |priority: Option<u8>| async move {
        store
            .set_flow_limit_override(
                &FlowLimitsSetRequest {
                    process_type: "ContractTest".into(),
                    state_id: None,
                    override_limits: priority.map(|priority| FlowLimits {
                        priority: Some(priority),
                        ..Default::default()
                    }),
                    reason: Some("urgent work".into()),
                },
                "test",
            )
            .await
            .unwrap()
    };
    let entry = set_type_priority(Some(2)).await;
    assert_eq!(entry.effective.priority, Some(2));
    // The store that made the change applies it at once.
    store.start_process(&start_at("typed", None)).await.unwrap();
    store
        .start_process(&start_at("named", Some(4)))
        .await
        .unwrap();
    assert_eq!(describe(store, "typed").await.priority, 2);
    assert_eq!(
        describe(store, "named").await.priority,
        4,
        "the start's own wins"
    );
    let claimed = store.claim_due_tasks("w", 1, LEASE).await.unwrap();
    assert_eq!(
        claimed[0].process_execution_id.to_string(),
        describe(store, "typed").await.process_execution_id
    );
    // Cleared: the default again.
    set_type_priority(None).await;
    store.start_process(&start_at("after", None)).await.unwrap();
    assert_eq!(describe(store, "after").await.priority, 3);
}

/// The claims of an instance that keeps room for higher priorities: past the bound,
/// nothing is claimed, keyless or keyed (the generic claim's keyed probe).
async fn a_claim_bounded_by_priority_leaves_the_lower_ones_waiting(dialect: Dialect) {
    let h = harness(dialect).await;
    let store = &*h.store;
    for n in 0..3 {
        store
            .start_process(&start_at(&format!("low-{n}"), Some(5)))
            .await
            .unwrap();
    }
    let keyed = ProcessExecutionStartRequest {
        process_start_config: Some(ProcessStartConfig {
            priority: Some(4),
            fairness_key: Some("tenant".into()),
            ..Default::default()
        }),
        ..start_request("keyed", "A")
    };
    store.start_process(&keyed).await.unwrap();
    store.start_process(&start_at("usual", None)).await.unwrap();
    store
        .start_process(&start_at("urgent", Some(1)))
        .await
        .unwrap();
    let claim = |lowest: u8| async move {
        let claimed = store
            .claim_tasks_with_calls("w", 10, LEASE, Duration::ZERO, lowest)
            .await
            .unwrap();
        let mut ids = Vec::new();
        for claimed in claimed {
            let execution = claimed.task.process_execution_id.to_string();
            ids.push(describe_by_execution(store, &execution).await);
        }
        ids
    };
    assert_eq!(claim(1).await, ["urgent"]);
    assert!(claim(2).await.is_empty(), "nothing of priority 2 waits");
    assert_eq!(claim(3).await, ["usual"]);
    assert_eq!(claim(4).await, ["keyed"], "the keyed task of priority 4");
    assert_eq!(claim(5).await.len(), 3, "then the backlog of priority 5");
    assert_nothing_due(store, "w").await;
}

/// The process id of execution `execution`.
async fn describe_by_execution(
    store: &dyn xdb_persistence::ProcessStore,
    execution: &str,
) -> String {
    for id in ["urgent", "usual", "keyed", "low-0", "low-1", "low-2"] {
        if describe(store, id).await.process_execution_id == execution {
            return id.to_string();
        }
    }
    panic!("no process of execution {execution}")
}
