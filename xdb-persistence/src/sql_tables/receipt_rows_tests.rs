use std::time::Duration;

use xdb_protocol::{
    LocalQueueMessage, ProcessExecutionStartRequest, ProcessExecutionStartResponse,
    PublishToLocalQueueRequest,
};

use crate::columns::ColumnReader;
use crate::receipts::{ClientRequest, Receipt};
use crate::sql::SqlConn;
use crate::tables::{Dialect, Lane};
use crate::{ProcessApi, StoreError};

const KEPT: Duration = Duration::from_secs(3600);

// Starts take each dialect's faster form here (PostgreSQL's one statement, MySQL's
// batches): the receipt must travel with it as with the generic start.
on_both_databases!(
    store => store;
    a_start_sent_again_answers_the_first_and_a_taken_id_starts_nothing,
    a_receipt_past_its_retention_lets_the_request_run_again,
);

fn start(request_id: &str, process_id: &str) -> ProcessExecutionStartRequest {
    ProcessExecutionStartRequest {
        request_id: Some(request_id.into()),
        process_id: process_id.into(),
        process_type: "T".into(),
        worker_url: "http://127.0.0.1:9".into(),
        start_state_id: Some("A".into()),
        start_state_input: None,
        start_state_config: None,
        process_start_config: None,
    }
}

async fn count<D: Dialect<Session: SqlConn>>(store: &D, sql: &str) -> i64 {
    let mut session = store.session(Lane::Main).await.unwrap();
    let rows = session.query(sql, &[]).await.unwrap();
    let count = <D::Session as SqlConn>::columns(&rows[0], 0)
        .bigint()
        .unwrap();
    count
}

async fn a_start_sent_again_answers_the_first_and_a_taken_id_starts_nothing<D>(store: D)
where
    D: Dialect<Session: SqlConn> + ProcessApi,
{
    let first = start("s-1", "p");
    let request = ClientRequest::Start(&first);
    let receipt = Receipt::of_client(&request, KEPT).unwrap();
    let started = store.apply(request, receipt.as_ref()).await.unwrap();
    assert!(!started.replayed);
    let again = store.apply(request, receipt.as_ref()).await.unwrap();
    assert!(again.replayed, "answered from the receipt");
    assert_eq!(again.answer, started.answer, "the same execution");
    let answer: ProcessExecutionStartResponse = serde_json::from_value(started.answer).unwrap();
    assert!(!answer.process_execution_id.is_empty());

    // The same id for a start of another process id: refused, and nothing of it kept.
    let other = start("s-1", "q");
    let request = ClientRequest::Start(&other);
    let receipt = Receipt::of_client(&request, KEPT).unwrap();
    let refused = store.apply(request, receipt.as_ref()).await;
    assert!(
        matches!(refused, Err(StoreError::RequestIdConflict(_))),
        "{refused:?}"
    );
    let executions = "SELECT COUNT(*) FROM xdb_sys_process_executions";
    assert_eq!(count(&store, executions).await, 1, "no execution of q");
    let receipts = "SELECT COUNT(*) FROM xdb_sys_request_receipts";
    assert_eq!(count(&store, receipts).await, 1);
}

async fn a_receipt_past_its_retention_lets_the_request_run_again<D>(store: D)
where
    D: Dialect<Session: SqlConn> + ProcessApi,
{
    let mut begun = start("s-2", "p");
    begun.request_id = None;
    store
        .apply(ClientRequest::Start(&begun), None)
        .await
        .unwrap();
    let publish = PublishToLocalQueueRequest {
        request_id: Some("publish-1".into()),
        process_id: "p".into(),
        process_execution_id: None,
        messages: vec![LocalQueueMessage {
            queue_name: "go".into(),
            dedup_id: None,
            payload: None,
        }],
    };
    let request = ClientRequest::Publish(&publish);
    let kept = Receipt::of_client(&request, KEPT).unwrap();
    assert!(!store.apply(request, kept.as_ref()).await.unwrap().replayed);
    assert!(store.apply(request, kept.as_ref()).await.unwrap().replayed);
    let messages = "SELECT COUNT(*) FROM xdb_sys_local_queue_messages";
    assert_eq!(count(&store, messages).await, 1, "published once");

    let expired = Receipt {
        retention: Duration::ZERO,
        ..kept.unwrap()
    };
    let rerun = store.apply(request, Some(&expired)).await.unwrap();
    assert!(!rerun.replayed, "the expired receipt answers no more");
    assert_eq!(count(&store, messages).await, 2, "published again");
    let receipts = "SELECT COUNT(*) FROM xdb_sys_request_receipts";
    assert_eq!(count(&store, receipts).await, 1, "the new receipt only");
}
