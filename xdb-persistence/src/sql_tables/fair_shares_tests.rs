//! MariaDB serves the keyed reads from its index of unleased tasks in order: the probe
//! and each key's oldest without sorting a key's backlog, the keys by a loose index scan.
//! (PostgreSQL's plans are checked in `postgres::task_queue_tests`.)

use super::*;
use crate::sql_tables::lease_sql::{due_params, due_tasks};
use crate::tables::Lane;

/// The `Extra` column of each row of `EXPLAIN sql`.
async fn extras<C: SqlConn>(session: &mut C, sql: &str, params: &[Param<'_>]) -> Vec<String> {
    let rows = session
        .query(&format!("EXPLAIN {sql}"), params)
        .await
        .unwrap();
    rows.iter()
        .map(|row| {
            let mut columns = C::columns(row, 9);
            columns.optional_text().unwrap().unwrap_or_default()
        })
        .collect()
}

#[tokio::test]
async fn on_mysql_keyed_reads_sort_no_backlog() {
    let db = xdb_test_util::TestDatabase::create_mysql().await;
    let store = crate::mysql::MySqlStore::connect(db.url(), 1)
        .await
        .unwrap();
    let mut session = crate::tables::Dialect::session(&store, Lane::Main)
        .await
        .unwrap();
    // One key's backlog, 20 keys of a few tasks, keyless tasks, a third of them leased.
    session
        .execute(
            "INSERT INTO xdb_sys_tasks (task_type, fire_at, process_execution_id, priority, \
               fairness_key, lease_owner) \
             SELECT 'EXECUTE', UTC_TIMESTAMP(6) - INTERVAL 1 MINUTE, UUID(), 3, \
               CASE WHEN seq % 4 = 0 THEN '' WHEN seq % 4 = 1 THEN CONCAT('k-', seq % 20) \
                 ELSE 'backlog' END, \
               IF(seq % 3 = 0, 'other', NULL) \
             FROM seq_1_to_6000",
            &[],
        )
        .await
        .unwrap();
    session
        .execute("ANALYZE TABLE xdb_sys_tasks", &[])
        .await
        .unwrap();
    let ahead = 1_000_000i64;

    let keys_sql = &DUE_KEYS[2];
    let keys_params = [3i32.into(), "".into(), ahead.into(), 64i64.into()];
    let plan = extras(&mut session, keys_sql, &keys_params).await;
    assert!(
        plan.iter()
            .all(|extra| extra.contains("Using index for group-by")),
        "the keys are not read by a loose index scan: {plan:?}"
    );
    let keys = due_keys(&mut session, 3, "", false, 64, ahead)
        .await
        .unwrap();
    // seq % 4 = 1 leaves 5 of the 20 `k-` keys.
    assert_eq!(keys.len(), 6, "{keys:?}");
    assert_eq!(keys[0], "backlog", "in the database's order");

    let tasks = key_tasks(&mut session, 3, &keys[..2], 5, ahead, false)
        .await
        .unwrap();
    assert_eq!(
        tasks.iter().map(|k| k.tasks.len()).collect::<Vec<_>>(),
        [5, 5]
    );
    let part = format!(
        "SELECT {TASK_COLUMNS} FROM xdb_sys_tasks FORCE INDEX ({UNLEASED_BY_PRIORITY}) \
         WHERE lease_owner IS NULL AND priority = 3 AND fairness_key = 'backlog' \
           AND fire_at <= UTC_TIMESTAMP(6) ORDER BY fire_at LIMIT 5"
    );
    let plan = extras(&mut session, &part, &[]).await;
    assert!(
        !plan[0].contains("filesort"),
        "a key's backlog sorted: {plan:?}"
    );
    // The claim's union: the timers' part (the first) sorts its due rows (see
    // `lease_sql::due_tasks`); each priority's keyless part and the keyed probe do not.
    let plan = extras(
        &mut session,
        due_tasks(SqlKind::MySql, false),
        &due_params(ahead, 64, xdb_protocol::priority::LOWEST),
    )
    .await;
    assert_eq!(plan.len(), 7, "7 parts: {plan:?}");
    for extra in &plan[1..] {
        assert!(!extra.contains("filesort"), "a sort: {plan:?}");
    }
}

#[tokio::test]
async fn on_postgres_the_keys_are_walked_through_the_keyed_index() {
    let db = xdb_test_util::TestDatabase::create_postgres().await;
    db.execute_sql(
        "INSERT INTO xdb_sys_tasks (task_type, fire_at, process_execution_id, priority, \
           fairness_key, lease_owner) \
         SELECT 'EXECUTE', now() - interval '1 minute', gen_random_uuid(), 3, \
           CASE WHEN n % 4 = 0 THEN '' WHEN n % 4 = 1 THEN 'k-' || (n % 20) \
             ELSE 'backlog' END, \
           CASE WHEN n % 3 = 0 THEN 'other' END \
         FROM generate_series(1, 20000) n; \
         ANALYZE xdb_sys_tasks",
    )
    .await;
    let store = crate::postgres::PostgresStore::connect(db.url(), 1)
        .await
        .unwrap();
    let mut session = crate::tables::Dialect::session(&store, Lane::Main)
        .await
        .unwrap();
    let ahead = 1_000_000i64;
    let params = [
        3i32.into(),
        "".into(),
        ahead.into(),
        3i32.into(),
        ahead.into(),
        64i64.into(),
    ];
    let rows = session
        .query(&format!("EXPLAIN {}", DUE_KEYS[0]), &params)
        .await
        .unwrap();
    let plan: Vec<String> = rows
        .iter()
        .map(|row| {
            <crate::postgres::PostgresStore as crate::tables::Dialect>::Session::columns(row, 0)
                .text()
                .unwrap()
        })
        .collect();
    let plan = plan.join("\n");
    assert!(plan.contains("xdb_sys_tasks_unleased_keyed"), "{plan}");
    assert!(!plan.contains("Seq Scan"), "{plan}");
    let keys = due_keys(&mut session, 3, "", false, 64, ahead)
        .await
        .unwrap();
    assert_eq!(keys.len(), 6, "{keys:?}");
    assert_eq!(keys[0], "backlog", "in the database's order");
    let after = due_keys(&mut session, 3, "k-13", false, 64, ahead)
        .await
        .unwrap();
    assert_eq!(after, ["k-17", "k-5", "k-9"]);
    let from = due_keys(&mut session, 3, "k-13", true, 2, ahead)
        .await
        .unwrap();
    assert_eq!(from, ["k-13", "k-17"]);
}
