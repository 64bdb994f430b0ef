//! PostgreSQL's one-statement claim reads each priority through the partial index that
//! holds it (schema v014), never through the index of all tasks by due time, which walks
//! the tasks in flight and, for a priority with no task due, every other one. Its release
//! of dead instances' leases reads no task while no instance is dead.

use super::task_queue::{CLAIM, RELEASE_DEAD};
use tokio_postgres::types::ToSql;

use crate::postgres::PostgresStore;

/// The lines of `explain`'s answer, on a connection of the store's own (its sessions'
/// settings, sequential scans off, are the planner's).
async fn plan_of(
    db: &xdb_test_util::TestDatabase,
    explain: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Vec<String> {
    let store = PostgresStore::connect(db.url(), 1).await.unwrap();
    let client = store.timekeeping_pool().get().await.unwrap();
    let rows = client.query(explain, params).await.unwrap();
    rows.iter().map(|row| row.get(0)).collect()
}

#[tokio::test]
async fn each_priority_of_the_claim_reads_its_own_partial_index() {
    let db = xdb_test_util::TestDatabase::create_postgres().await;
    // Tasks of the default priority waiting and in flight, a backlog of priority 5,
    // and timers an hour out; statistics as autovacuum would leave them.
    db.execute_sql(
        "INSERT INTO xdb_sys_tasks (task_type, fire_at, process_execution_id, priority, \
           lease_owner) \
         SELECT CASE WHEN n % 10 = 0 THEN 'TIMER' ELSE 'EXECUTE' END, \
           now() + CASE WHEN n % 10 = 0 THEN interval '1 hour' ELSE interval '-1 minute' END, \
           gen_random_uuid(), CASE WHEN n % 3 = 0 THEN 5 ELSE 3 END, \
           CASE WHEN n % 7 = 0 THEN 'elsewhere' END \
         FROM generate_series(1, 20000) n; \
         ANALYZE xdb_sys_tasks",
    )
    .await;
    let plan = plan_of(
        &db,
        &format!("EXPLAIN {}", *CLAIM),
        &[&64i64, &"owner", &30.0f64, &0.0f64, &true, &5i32],
    )
    .await;
    let plan = plan.join("\n");
    for index in [
        "xdb_sys_tasks_unleased_timers_by_fire_at",
        "xdb_sys_tasks_unleased_keyless_default_by_fire_at",
        "xdb_sys_tasks_unleased_keyless_by_priority",
        "xdb_sys_tasks_unleased_keyed",
        "xdb_sys_tasks_leased_by_expiry",
    ] {
        assert!(plan.contains(index), "{index} unused:\n{plan}");
    }
    assert!(!plan.contains("xdb_sys_tasks_by_fire_at"), "{plan}");
    assert!(!plan.contains("Seq Scan on xdb_sys_tasks"), "{plan}");
}

/// The release runs about once a second on every instance, nearly always with nobody
/// dead. It read the first task by primary key even so, and in a busy queue the low end
/// of that index is entries of deleted tasks (38-52 ms a call in bench runs).
#[tokio::test]
async fn with_no_instance_dead_the_release_of_dead_leases_reads_no_task() {
    let db = xdb_test_util::TestDatabase::create_postgres().await;
    db.execute_sql(
        "INSERT INTO xdb_sys_service_instances \
           (instance_id, service, notify_url, heartbeat_at, liveness_timeout_ms) \
         VALUES ('alive', 'ASYNC', 'http://127.0.0.1:9', now(), 1000), \
                ('me', 'ASYNC', 'http://127.0.0.1:9', now(), 1000); \
         INSERT INTO xdb_sys_tasks (task_type, fire_at, process_execution_id, lease_owner, \
           lease_expires_at) \
         SELECT 'TIMER', now() + interval '1 hour', gen_random_uuid(), \
           CASE WHEN n % 2 = 0 THEN 'alive' END, \
           CASE WHEN n % 2 = 0 THEN now() + interval '30 seconds' END \
         FROM generate_series(1, 2000) n; \
         ANALYZE xdb_sys_tasks",
    )
    .await;
    let explain = format!("EXPLAIN (ANALYZE, COSTS OFF) {RELEASE_DEAD}");
    let plan = plan_of(&db, &explain, &[&"me", &5.0f64]).await;
    let task_nodes: Vec<&String> = plan
        .iter()
        .filter(|line| line.contains("Scan") && line.contains(" on xdb_sys_tasks"))
        .collect();
    assert!(!task_nodes.is_empty(), "{}", plan.join("\n"));
    for node in task_nodes {
        assert!(
            node.contains("never executed"),
            "the task table was read: {node}\n{}",
            plan.join("\n")
        );
    }
}
