//! [`SqlConn::run_in_order`] on both databases: MariaDB's compound statement and the
//! one-by-one form must tell the same ids and fail the same way.

use chrono::Utc;
use uuid::Uuid;

use crate::columns::ColumnReader;
use crate::sql::{Param, SqlConn};
use crate::steps::{Expect, Step};
use crate::tables::{Dialect, Lane, Transaction};
use crate::StoreError;

on_both_databases!(
    store => store;
    a_group_tells_the_ids_each_insert_was_given,
    a_count_not_met_fails_the_group_as_stale_and_nothing_stays,
    a_failing_statement_fails_the_group_and_nothing_stays,
);

const MOVED: &str = "the rows moved meanwhile";

/// An insert of `timers` timer rows of `execution`.
fn insert_timers(execution: Uuid, timers: i32, expect: Expect) -> Step<'static> {
    let rows = vec!["(?, ?, ?, 'A', 1, ?)"; timers as usize].join(", ");
    let mut params = Vec::new();
    for index in 0..timers {
        params.extend([
            Param::from("TIMER"),
            Param::from(Utc::now()),
            Param::from(execution),
            Param::from(index),
        ]);
    }
    let sql = format!(
        "INSERT INTO xdb_sys_tasks (task_type, fire_at, process_execution_id, state_id, \
         state_execution_number, timer_index) VALUES {rows}"
    );
    Step::expecting(sql, params, expect)
}

/// Leases every task of `execution`, expecting `expect`.
fn lease_all(execution: Uuid, expect: Expect) -> Step<'static> {
    Step::expecting(
        "UPDATE xdb_sys_tasks SET lease_owner = 'me' WHERE process_execution_id = ?".into(),
        vec![execution.into()],
        expect,
    )
}

/// The ids of `execution`'s tasks, with their owners, in id order.
async fn tasks_of<D: Dialect>(store: &D, execution: Uuid) -> Vec<(i64, Option<String>)> {
    let mut session = store.session(Lane::Main).await.unwrap();
    let sql = "SELECT id, lease_owner FROM xdb_sys_tasks WHERE process_execution_id = ? \
               ORDER BY id";
    let rows = session.query(sql, &[execution.into()]).await.unwrap();
    rows.iter()
        .map(|row| {
            let mut columns = <D::Session as SqlConn>::columns(row, 0);
            (columns.bigint().unwrap(), columns.optional_text().unwrap())
        })
        .collect()
}

async fn a_group_tells_the_ids_each_insert_was_given<D: Dialect>(store: D) {
    let execution = Uuid::now_v7();
    let mut tx = store.begin(Lane::Main).await.unwrap();
    let steps = [
        insert_timers(execution, 1, Expect::Ids(1)),
        insert_timers(execution, 3, Expect::Anything),
        lease_all(execution, Expect::Rows(4, MOVED)),
        insert_timers(execution, 2, Expect::Ids(2)),
    ];
    let told = tx.run_in_order(&steps).await.unwrap();
    tx.commit().await.unwrap();
    let rows = tasks_of(&store, execution).await;
    assert_eq!(rows.len(), 6, "{rows:?}");
    // Rows inserted after the lease are not leased: the steps ran in order.
    let owners: Vec<_> = rows.iter().map(|(_, owner)| owner.as_deref()).collect();
    assert_eq!(
        owners,
        [Some("me"); 4]
            .into_iter()
            .chain([None; 2])
            .collect::<Vec<_>>()
    );
    assert_eq!(told.len(), 2);
    assert_eq!(told[0], [rows[0].0]);
    // Every row's id where the connection tells them, else the first's.
    assert_eq!(told[1][0], rows[4].0);
    if told[1].len() == 2 {
        assert_eq!(told[1][1], rows[5].0);
    }
}

async fn a_count_not_met_fails_the_group_as_stale_and_nothing_stays<D: Dialect>(store: D) {
    let execution = Uuid::now_v7();
    let mut tx = store.begin(Lane::Main).await.unwrap();
    let steps = [
        insert_timers(execution, 2, Expect::Anything),
        lease_all(execution, Expect::Rows(3, MOVED)),
        insert_timers(execution, 1, Expect::Ids(1)),
    ];
    match tx.run_in_order(&steps).await {
        Err(StoreError::Stale(message)) => assert_eq!(message, MOVED),
        other => panic!("expected Stale, got {other:?}"),
    }
    drop(tx);
    assert_eq!(tasks_of(&store, execution).await, []);
}

async fn a_failing_statement_fails_the_group_and_nothing_stays<D: Dialect>(store: D) {
    let execution = Uuid::now_v7();
    let mut tx = store.begin(Lane::Main).await.unwrap();
    let steps = [
        insert_timers(execution, 1, Expect::Anything),
        Step::new(
            "UPDATE xdb_sys_tasks SET no_such_column = 1 WHERE process_execution_id = ?".into(),
            vec![execution.into()],
        ),
        insert_timers(execution, 1, Expect::Anything),
    ];
    match tx.run_in_order(&steps).await {
        Err(StoreError::Database(message)) => {
            assert!(message.contains("no_such_column"), "{message}")
        }
        other => panic!("expected the server's error, got {other:?}"),
    }
    drop(tx);
    assert_eq!(tasks_of(&store, execution).await, []);
}
