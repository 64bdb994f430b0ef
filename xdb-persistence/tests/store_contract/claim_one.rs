//! Claiming one task by id and claiming only long-overdue tasks: what an event-driven
//! task source (Pulsar CDC mode) and its safety net use.

use std::time::Duration;

use xdb_persistence::TaskClaim;
use xdb_test_util::Dialect;

use crate::common::*;

both!(claim_tasks_take_a_due_free_task_once_and_say_why_not_otherwise);

const LEASE: Duration = Duration::from_secs(30);

async fn claim_tasks_take_a_due_free_task_once_and_say_why_not_otherwise(dialect: Dialect) {
    let h = harness(dialect).await;
    let store = &*h.store;
    store
        .start_process(&start_request("p-one", "A"))
        .await
        .unwrap();
    // Learn the task's id, then give the lease back.
    let id = store.claim_due_tasks("probe", 10, LEASE).await.unwrap()[0].id;
    store.release_leases("probe").await.unwrap();

    // Just due: not overdue by an hour, but due now.
    let overdue = store
        .claim_overdue_tasks("sweeper", 10, LEASE, Duration::from_secs(3600))
        .await
        .unwrap();
    assert!(overdue.is_empty(), "{overdue:?}");

    let TaskClaim::Claimed(task) = claim_one(store, id, "a").await else {
        panic!("a due, unleased task is claimed");
    };
    assert_eq!(task.id, id);
    match claim_one(store, id, "b").await {
        TaskClaim::Leased(left) => assert!(left > Duration::from_secs(25), "{left:?}"),
        other => panic!("leased to a: {other:?}"),
    }
    assert!(store
        .claim_overdue_tasks("sweeper", 10, LEASE, Duration::ZERO)
        .await
        .unwrap()
        .is_empty());

    store.release_leases("a").await.unwrap();
    let later = match dialect {
        Dialect::Postgres => "UPDATE xdb_sys_tasks SET fire_at = fire_at + INTERVAL '1 hour'",
        Dialect::MySql => "UPDATE xdb_sys_tasks SET fire_at = fire_at + INTERVAL 1 HOUR",
    };
    h.db.execute_sql(later).await;
    match claim_one(store, id, "b").await {
        TaskClaim::NotDue(wait) => {
            assert!(
                wait > Duration::from_secs(3500) && wait <= Duration::from_secs(3600),
                "{wait:?}"
            )
        }
        other => panic!("due in an hour: {other:?}"),
    }
    let earlier = match dialect {
        Dialect::Postgres => "UPDATE xdb_sys_tasks SET fire_at = fire_at - INTERVAL '2 hour'",
        Dialect::MySql => "UPDATE xdb_sys_tasks SET fire_at = fire_at - INTERVAL 2 HOUR",
    };
    h.db.execute_sql(earlier).await;
    let overdue = store
        .claim_overdue_tasks("sweeper", 10, LEASE, Duration::from_secs(1800))
        .await
        .unwrap();
    assert_eq!(overdue.iter().map(|t| t.id).collect::<Vec<_>>(), vec![id]);

    assert_eq!(claim_one(store, id + 1000, "b").await, TaskClaim::Gone);

    // Several at once, as events that came together: one answer per id, in order.
    store
        .start_process(&start_request("p-two", "A"))
        .await
        .unwrap();
    let two = store.claim_due_tasks("probe", 10, LEASE).await.unwrap()[0].id;
    store.release_leases("probe").await.unwrap();
    let answers = store
        .claim_tasks(&[two, id + 1000, two, id], "c", LEASE)
        .await
        .unwrap();
    let [TaskClaim::Claimed(task), TaskClaim::Gone, TaskClaim::Leased(again), TaskClaim::Leased(swept)] =
        &answers[..]
    else {
        panic!("claimed, gone, claimed already, the sweeper's: {answers:?}");
    };
    assert_eq!((task.id, *again), (two, LEASE));
    assert!(*swept > Duration::from_secs(25), "{swept:?}");
}

/// [`xdb_persistence::TaskSource::claim_tasks`] of one task.
async fn claim_one(store: &dyn xdb_persistence::ProcessStore, id: i64, owner: &str) -> TaskClaim {
    let mut answers = store.claim_tasks(&[id], owner, LEASE).await.unwrap();
    assert_eq!(answers.len(), 1, "{answers:?}");
    answers.remove(0)
}
