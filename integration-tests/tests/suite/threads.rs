//! Decisions over parallel threads, with a real worker: several next states run as
//! threads, a state re-enters itself with a new execution number each time, a dead end
//! ends one thread, graceful completion waits for the running threads, and force
//! complete / force fail end every thread at once.

use std::time::Duration;

use xdb_integration_tests::processes::threads::{
    Ending, ThreadsProcess, QUEUE_FINISH, QUEUE_RELEASE,
};
use xdb_integration_tests::{eventually, Database, XdbTestEnv};
use xdb_sdk::protocol::*;
use xdb_sdk::ProcessStartOptions;

use crate::common::*;

const REPEATS: u32 = 3;

/// Starts a `ThreadsProcess` and waits until `Repeat` ran all its executions and the
/// other two threads wait on their queues.
async fn forked(env: &mut XdbTestEnv, ending: Ending, id: &str) -> String {
    let process = ThreadsProcess {
        ending,
        repeats: REPEATS,
    };
    let worker = serve(env, &process).await;
    let exec = start(env, &process, &worker, id, ProcessStartOptions::new())
        .await
        .unwrap();
    for number in 1..=REPEATS as i32 {
        wait_state(env, &exec, "Repeat", number, "COMPLETED").await;
    }
    wait_state(env, &exec, "Hold", 1, "WAITING_COMMANDS").await;
    wait_state(env, &exec, "Finish", 1, "WAITING_COMMANDS").await;
    exec
}

async fn finish(env: &XdbTestEnv, id: &str) {
    env.client
        .publish_to_local_queue(id, QUEUE_FINISH, (), None)
        .await
        .unwrap();
}

async fn wait_closed(env: &XdbTestEnv, id: &str) -> ProcessExecutionWaitForCompletionResponse {
    let done = env
        .client
        .wait_for_process_completion(id, SOON)
        .await
        .unwrap();
    assert!(!done.timed_out, "{id} did not close");
    done
}

async fn states_of(env: &XdbTestEnv, exec: &str) -> Vec<(String, i32, String)> {
    env.state_rows(exec)
        .await
        .into_iter()
        .map(|s| (s.state_id, s.number, s.status))
        .collect()
}

async fn parallel_threads_and_re_entered_states_get_their_own_numbers(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let exec = forked(&mut env, Ending::ForceComplete, "forked").await;
    let mut states = states_of(&env, &exec).await;
    states.sort();
    let expected: Vec<(String, i32, String)> = vec![
        ("Finish".into(), 1, "WAITING_COMMANDS".into()),
        ("Fork".into(), 1, "COMPLETED".into()),
        ("Hold".into(), 1, "WAITING_COMMANDS".into()),
        ("Repeat".into(), 1, "COMPLETED".into()),
        ("Repeat".into(), 2, "COMPLETED".into()),
        ("Repeat".into(), 3, "COMPLETED".into()),
    ];
    assert_eq!(states, expected);
    // Repeat's thread dead-ended; the other two still run, so the process does.
    let row = env.process_row(&exec).await.unwrap();
    assert_eq!(row.status, "RUNNING");
    assert_eq!(row.running_state_executions, 2);
    env.shutdown().await;
}

async fn graceful_completion_waits_for_the_running_threads(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let exec = forked(&mut env, Ending::GracefulComplete, "graceful").await;
    finish(&env, "graceful").await;
    wait_state(&env, &exec, "Finish", 1, "COMPLETED").await;
    // Hold still runs: the completion waits for it.
    let row = env.process_row(&exec).await.unwrap();
    assert_eq!(row.status, "RUNNING", "completed with a thread running");
    assert_eq!(row.running_state_executions, 1);

    env.client
        .publish_to_local_queue("graceful", QUEUE_RELEASE, (), None)
        .await
        .unwrap();
    let done = wait_closed(&env, "graceful").await;
    assert_eq!(done.status, ProcessStatus::Completed);
    assert_eq!(
        done.result.map(|r| r.data),
        Some("\"graceful\"".to_string())
    );
    let states = states_of(&env, &exec).await;
    assert!(
        states.iter().all(|(_, _, status)| status == "COMPLETED"),
        "{states:?}"
    );
    assert!(env.tasks(&exec).await.is_empty());
    env.shutdown().await;
}

async fn force_endings_close_every_thread(db: Database) {
    for (ending, id, status) in [
        (Ending::ForceComplete, "forced", ProcessStatus::Completed),
        (Ending::ForceFail, "failed", ProcessStatus::Failed),
    ] {
        let mut env = XdbTestEnv::start(db).await;
        let exec = forked(&mut env, ending, id).await;
        finish(&env, id).await;
        let done = wait_closed(&env, id).await;
        assert_eq!(done.status, status, "{ending:?}");
        // Hold never got its message: its thread was ended with the process.
        let hold = env.state_row(&exec, "Hold", 1).await.unwrap();
        assert_eq!(hold.status, "ABORTED", "{ending:?}");
        let row = env.process_row(&exec).await.unwrap();
        assert_eq!(row.running_state_executions, 0, "{ending:?}");
        assert!(env.tasks(&exec).await.is_empty(), "{ending:?}: tasks left");
        match ending {
            Ending::ForceComplete => {
                assert_eq!(done.result.map(|r| r.data), Some("\"forced\"".to_string()))
            }
            _ => assert!(done.failure.is_some(), "a forced failure has its details"),
        }
        // A closed process takes no more messages into its states.
        let late = env
            .client
            .publish_to_local_queue(id, QUEUE_RELEASE, (), None)
            .await;
        let hold_after = env.state_row(&exec, "Hold", 1).await.unwrap();
        assert_eq!(hold_after.status, "ABORTED", "{late:?}");
        eventually(
            "no task for the closed process",
            Duration::from_secs(1),
            || async { env.tasks(&exec).await.is_empty() },
        )
        .await;
        env.shutdown().await;
    }
}

both_databases!(
    parallel_threads_and_re_entered_states_get_their_own_numbers,
    graceful_completion_waits_for_the_running_threads,
    force_endings_close_every_thread,
);
