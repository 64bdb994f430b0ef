//! A wait for completion woken by its execution's close answers from what the close
//! announced, without reading the execution back, when the outcome is small enough to
//! travel with it: in PostgreSQL's NOTIFY payload (up to 7,900 bytes of JSON), in the
//! async service's internal notify request on MySQL (up to 4 KiB). Larger outcomes are
//! announced by id, and the woken wait reads them.

use std::time::Duration;

use serde_json::json;
use xdb_integration_tests::metrics::{sample_sum, scrape};
use xdb_integration_tests::processes::park::{ParkProcess, QUEUE_GO};
use xdb_integration_tests::{eventually, Database, XdbTestEnv};
use xdb_sdk::protocol::*;
use xdb_sdk::ProcessStartOptions;

use crate::common::*;

const DEADLINE: Duration = Duration::from_secs(30);

/// How the woken waits were answered: (from the notification, by a read).
async fn wait_answers(env: &XdbTestEnv) -> (f64, f64) {
    let text = scrape(env.api_url()).await;
    let count = |from| {
        sample_sum(
            &text,
            "xdb_api_wait_closes_total",
            &[("answered_from", from)],
        )
        .unwrap_or(0.0)
    };
    (count("notification"), count("read"))
}

/// How the parked execution is closed while its wait is registered.
enum Close {
    /// A message of this many characters completes it, with the message as its result.
    Message(usize),
    /// A client terminates it.
    Stop,
}

/// Starts a parked execution `process_id`, waits for its completion while `close`
/// closes it, and returns the answer with how the wait was answered (see
/// [`wait_answers`]).
async fn wait_through_close(
    env: &XdbTestEnv,
    worker: &str,
    process_id: &str,
    close: Close,
) -> (ProcessExecutionWaitForCompletionResponse, (f64, f64)) {
    start(
        env,
        &ParkProcess,
        worker,
        process_id,
        ProcessStartOptions::new(),
    )
    .await
    .unwrap();
    let before = wait_answers(env).await;
    let client = env.client.clone();
    let request = ProcessExecutionWaitForCompletionRequest {
        process_id: process_id.into(),
        timeout_seconds: Some(DEADLINE.as_secs() as u32),
    };
    let wait = tokio::spawn(async move { client.wait_for_completion(&request).await });
    // The close must come while the wait is registered, so that the close wakes it.
    eventually("the wait to register", DEADLINE, || async {
        let text = scrape(env.api_url()).await;
        sample_sum(&text, "xdb_api_waits_registered", &[]).unwrap_or(0.0) >= 1.0
    })
    .await;
    let expected = match close {
        Close::Message(chars) => {
            let message = "m".repeat(chars);
            env.client
                .publish_to_local_queue(process_id, QUEUE_GO, &message, None)
                .await
                .unwrap();
            (
                ProcessStatus::Completed,
                Some(json!({ "message": message, "tag": null })),
            )
        }
        Close::Stop => {
            env.client
                .stop_process(process_id, ProcessExecutionStopType::Terminate, None)
                .await
                .unwrap();
            (ProcessStatus::Terminated, None)
        }
    };
    let response = tokio::time::timeout(DEADLINE, wait)
        .await
        .expect("the wait answers")
        .unwrap()
        .unwrap();
    assert!(!response.timed_out, "{process_id}");
    assert_eq!(
        (
            response.status,
            response.result.is_some().then(|| decode(&response.result))
        ),
        expected,
        "{process_id}"
    );
    let after = wait_answers(env).await;
    (response, (after.0 - before.0, after.1 - before.1))
}

/// Checks how a woken wait was answered: (from a notification, by a read after a wake).
/// `from_close`: the close's outcome came along, so no read may follow the wake; else
/// none came along. A close that commits just as the wait's 1 s fallback re-read runs
/// (possible when the close takes a second, as through Pulsar) is answered by that
/// read, which counts as neither: both are allowed to be zero, never the wrong one.
fn assert_answered(answered: (f64, f64), from_close: bool, what: &str) {
    let (notification, read) = answered;
    assert!(
        notification + read <= 1.0,
        "{what}: one wait, one answer: {answered:?}"
    );
    if from_close {
        assert_eq!(read, 0.0, "{what}: read back though its outcome came along");
    } else {
        assert_eq!(notification, 0.0, "{what}: answered from a notification");
    }
}

async fn a_woken_wait_answers_from_the_close(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let worker = serve(&mut env, &ParkProcess).await;

    let (small, answered) = wait_through_close(&env, &worker, "small", Close::Message(10)).await;
    let row = env
        .process_row(&small.process_execution_id)
        .await
        .expect("the execution's row");
    assert_eq!(row.status, "COMPLETED", "the answer is the row's");
    assert_answered(answered, true, "a small outcome");

    // Over the 4 KiB MySQL sends along, under PostgreSQL's 7,900-byte payload.
    let (_, answered) = wait_through_close(&env, &worker, "medium", Close::Message(6000)).await;
    assert_answered(answered, db == Database::Postgres, "a 6 KB outcome");

    let (_, answered) = wait_through_close(&env, &worker, "large", Close::Message(9000)).await;
    assert_answered(answered, false, "a 9 KB outcome, announced by id");

    // A stop through the API: on MySQL the instance that stopped it tells its waiters.
    let (_, answered) = wait_through_close(&env, &worker, "stopped", Close::Stop).await;
    assert_answered(answered, true, "a stop");
    env.shutdown().await;
}

both_databases!(a_woken_wait_answers_from_the_close);
pulsar_mode_too!(a_woken_wait_answers_from_the_close);
