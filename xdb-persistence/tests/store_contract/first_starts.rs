//! First starts ready at once: each dialect commits them together, and a start its
//! faster form cannot take (an id that had an execution, a business row to write) gets
//! exactly the generic start's answer.
//!
//! A state row's `created_at` is the database's now of the statement that inserted it
//! (MariaDB/MySQL) or of its transaction (PostgreSQL), so fewer distinct values than
//! starts shows that starts shared statements and transactions.

use std::time::Duration;

use futures::future::join_all;
use serde_json::json;
use uuid::Uuid;
use xdb_engine::decide::DecideError;
use xdb_engine::TaskType;
use xdb_persistence::{ProcessStore, StoreError};
use xdb_protocol::*;
use xdb_test_util::{Dialect, TestDatabase};

use crate::common::*;

both!(
    concurrent_first_starts_all_start_and_share_transactions,
    new_and_started_ids_together_get_the_generic_answers,
    starts_with_attributes_to_write_still_start_beside_batched_ones,
);

/// `sql`'s single number (written to work in both dialects: `CONCAT(…, '')`).
async fn number(db: &TestDatabase, sql: &str) -> i64 {
    sql_text(db, sql)
        .await
        .unwrap_or_else(|| panic!("{sql}: no value"))
        .parse()
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// How many distinct `created_at` the state rows of the processes `like` matches have.
async fn state_timestamps(db: &TestDatabase, like: &str) -> i64 {
    number(
        db,
        &format!(
            "SELECT CONCAT(COUNT(DISTINCT s.created_at), '') \
             FROM xdb_sys_async_state_executions s \
             JOIN xdb_sys_process_executions p ON p.id = s.process_execution_id \
             WHERE p.process_id LIKE '{like}'"
        ),
    )
    .await
}

/// `request` with `config`.
fn with_config(
    mut request: ProcessExecutionStartRequest,
    config: ProcessStartConfig,
) -> ProcessExecutionStartRequest {
    request.process_start_config = Some(config);
    request
}

async fn concurrent_first_starts_all_start_and_share_transactions(dialect: Dialect) {
    let h = harness(dialect).await;
    let store = &*h.store;
    // Every other start has a timeout: its start writes two tasks.
    let requests: Vec<_> = (0..40)
        .map(|i| {
            let request = start_request(&format!("many-{i:02}"), "A");
            let timeout_seconds = (i % 2 == 0).then_some(600);
            with_config(
                request,
                ProcessStartConfig {
                    timeout_seconds,
                    ..Default::default()
                },
            )
        })
        .collect();
    let started = join_all(requests.iter().map(|r| store.start_process(r))).await;
    let started: Vec<Uuid> = started
        .into_iter()
        .map(|s| s.expect("a first start succeeds"))
        .collect();

    for (request, id) in requests.iter().zip(&started) {
        let described = describe(store, &request.process_id).await;
        assert_eq!(described.process_execution_id, id.to_string());
        assert_eq!(described.status, ProcessStatus::Running);
        assert_eq!(described.process_type, "ContractTest");
        assert_eq!(described.running_state_executions, 1);
        assert_eq!(
            history_types(store, &request.process_id).await,
            vec!["PROCESS_STARTED"]
        );
    }
    let rows = |table: &str| format!("SELECT CONCAT(COUNT(*), '') FROM {table}");
    assert_eq!(number(&h.db, &rows("xdb_sys_process_executions")).await, 40);
    assert_eq!(
        number(&h.db, &rows("xdb_sys_async_state_executions")).await,
        40
    );
    assert_eq!(number(&h.db, &rows("xdb_sys_tasks")).await, 60);
    let timeouts = "SELECT CONCAT(COUNT(*), '') FROM xdb_sys_tasks t \
        JOIN xdb_sys_process_executions p ON p.id = t.process_execution_id \
        WHERE t.task_type = 'PROCESS_TIMEOUT' AND p.timeout_seconds = 600";
    assert_eq!(number(&h.db, timeouts).await, 20);

    // Each start's first task is due, names its execution and loads its state's input.
    let mut claimed = store
        .claim_due_tasks("w", 100, Duration::from_secs(30))
        .await
        .unwrap();
    assert!(claimed.iter().all(|t| t.task_type == TaskType::WaitUntil));
    let mut owners: Vec<Uuid> = claimed.iter().map(|t| t.process_execution_id).collect();
    owners.sort();
    let mut expected = started.clone();
    expected.sort();
    assert_eq!(owners, expected);
    let task = claimed.pop().unwrap();
    let call = store.load_state_call(&task, "w").await.unwrap().unwrap();
    assert_eq!(call.state.input, Some(encoded("{\"n\":1}")));

    let transactions = state_timestamps(&h.db, "many-%").await;
    assert!(
        transactions < 40,
        "40 starts ready at once wrote their states in {transactions} transactions"
    );
}

async fn new_and_started_ids_together_get_the_generic_answers(dialect: Dialect) {
    let h = harness(dialect).await;
    let store = &*h.store;
    let mut old = Vec::new();
    for i in 0..4 {
        let request = start_request(&format!("old-{i}"), "A");
        old.push(store.start_process(&request).await.unwrap());
    }
    // What a second start of each running process is answered when it comes alone.
    let mut refused = Vec::new();
    for i in 0..3 {
        let request = start_request(&format!("old-{i}"), "A");
        refused.push(store.start_process(&request).await.unwrap_err().to_string());
    }

    let terminate = with_config(
        start_request("old-3", "A"),
        ProcessStartConfig {
            id_reuse_policy: Some(ProcessIdReusePolicy::TerminateIfRunning),
            ..Default::default()
        },
    );
    let mut requests: Vec<_> = (0..12)
        .map(|i| start_request(&format!("new-{i:02}"), "A"))
        .collect();
    requests.extend((0..3).map(|i| start_request(&format!("old-{i}"), "A")));
    requests.push(terminate);
    requests.push(start_request("twin", "A"));
    requests.push(start_request("twin", "A"));
    let answers = join_all(requests.iter().map(|r| store.start_process(r))).await;

    for answer in &answers[..12] {
        assert!(answer.is_ok(), "{answer:?}");
    }
    for (answer, refused) in answers[12..15].iter().zip(&refused) {
        match answer {
            Err(error @ StoreError::Decide(DecideError::AlreadyStarted(_))) => {
                assert_eq!(&error.to_string(), refused)
            }
            other => panic!("a running process started again: {other:?}"),
        }
    }
    let replacement = answers[15].as_ref().expect("TERMINATE_IF_RUNNING starts");
    let twins: Vec<_> = answers[16..].iter().filter(|a| a.is_ok()).collect();
    assert_eq!(twins.len(), 1, "{:?}", &answers[16..]);
    assert!(answers[16..]
        .iter()
        .any(|a| matches!(a, Err(StoreError::Decide(DecideError::AlreadyStarted(_))))));

    // The refused starts wrote nothing; the replaced execution was terminated.
    let executions = |process_id: &str| {
        format!(
            "SELECT CONCAT(COUNT(*), '') FROM xdb_sys_process_executions \
             WHERE process_id = '{process_id}'"
        )
    };
    for (i, id) in old.iter().take(3).enumerate() {
        let process_id = format!("old-{i}");
        assert_eq!(number(&h.db, &executions(&process_id)).await, 1);
        let described = describe(store, &process_id).await;
        assert_eq!(described.process_execution_id, id.to_string());
        assert_eq!(described.status, ProcessStatus::Running);
    }
    assert_eq!(number(&h.db, &executions("old-3")).await, 2);
    assert_eq!(number(&h.db, &executions("twin")).await, 1);
    let latest = describe(store, "old-3").await;
    assert_eq!(latest.process_execution_id, replacement.to_string());
    let previous = store
        .describe_process(&ProcessExecutionDescribeRequest {
            process_id: "old-3".into(),
            process_execution_id: Some(old[3].to_string()),
        })
        .await
        .unwrap();
    assert_eq!(previous.status, ProcessStatus::Terminated);
    for i in 0..12 {
        let described = describe(store, &format!("new-{i:02}")).await;
        assert_eq!(described.status, ProcessStatus::Running);
    }
    // PostgreSQL runs every statement of a batch alone again when one fails (here the
    // claims of the old ids); MySQL/MariaDB keeps the new ones together.
    if dialect == Dialect::MySql {
        let transactions = state_timestamps(&h.db, "new-%").await;
        assert!(
            transactions < 12,
            "12 new starts in {transactions} transactions"
        );
    }
}

async fn starts_with_attributes_to_write_still_start_beside_batched_ones(dialect: Dialect) {
    let h = harness(dialect).await;
    h.db.execute_sql(users_table(dialect)).await;
    let store: &dyn ProcessStore = &*h.store;
    let global = with_config(
        start_request("with-row", "A"),
        ProcessStartConfig {
            global_attribute_config: Some(users_config("u1", vec![value("email", "a@x")])),
            ..Default::default()
        },
    );
    let local = with_config(
        start_request("with-local", "A"),
        ProcessStartConfig {
            local_attribute_initial_write: vec![LocalAttributeValue {
                key: "k".into(),
                value: encoded("1"),
            }],
            ..Default::default()
        },
    );
    let mut requests: Vec<_> = (0..10)
        .map(|i| start_request(&format!("plain-{i}"), "A"))
        .collect();
    requests.insert(3, global);
    requests.insert(7, local);
    let answers = join_all(requests.iter().map(|r| store.start_process(r))).await;
    for answer in &answers {
        assert!(answer.is_ok(), "{answer:?}");
    }
    for request in &requests {
        let described = describe(store, &request.process_id).await;
        assert_eq!(described.status, ProcessStatus::Running);
    }
    assert_eq!(
        sql_text(&h.db, "SELECT email FROM users WHERE id = 'u1'").await,
        Some("a@x".into())
    );
    assert_eq!(
        describe(store, "with-row")
            .await
            .global_attribute_config
            .map(|c| c.primary_key.value),
        Some(json!("u1"))
    );
    let local_rows = "SELECT CONCAT(COUNT(*), '') FROM xdb_sys_local_attributes a \
        JOIN xdb_sys_process_executions p ON p.id = a.process_execution_id \
        WHERE p.process_id = 'with-local' AND a.`key` = 'k'";
    let local_rows = match dialect {
        Dialect::Postgres => local_rows.replace('`', "\""),
        Dialect::MySql => local_rows.to_string(),
    };
    assert_eq!(number(&h.db, &local_rows).await, 1);
}
