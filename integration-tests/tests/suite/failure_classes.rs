//! Failures judged by their class, the same by both task sources (see
//! `xdb_persistence::FailureClass` and docs/reliability.md, "How failures are judged"):
//! - a deadlock on the business row, or the connection cut while the business row is
//!   written, is the database's failure for now: handled again without consuming an
//!   attempt, so a state with a 2-attempt retry policy whose worker fails once still
//!   completes;
//! - a transition the database rejects with an error of its own would be rejected the
//!   same every time: parked at once (one refusal, one worker call), in the database
//!   queue and in Pulsar mode alike, until an operator's retry-now.

use std::time::Duration;

use serde_json::{json, Value};
use xdb_async_service::AsyncService;
use xdb_config::QueueMode;
use xdb_integration_tests::processes::flaky::{FlakyConfig, FlakyProcess};
use xdb_integration_tests::tcp_proxy::TcpProxy;
use xdb_integration_tests::{eventually, Database, EnvOptions, XdbTestEnv};
use xdb_protocol::paths;
use xdb_sdk::protocol::ProcessStatus;
use xdb_sdk::ProcessStartOptions;

use crate::common::*;

/// The business-row writes refused (or slowed) before one is let through.
const REFUSED_WRITES: i64 = 3;

/// Fails its first attempt (the worker's own failure); two attempts at most.
fn fails_once() -> FlakyProcess {
    FlakyProcess::new(FlakyConfig {
        failing_attempts: 1,
        maximum_attempts: 2,
        initial_interval: Duration::from_millis(100),
        recover: false,
        after_timer: None,
    })
}

/// Makes the business table refuse (`slow`: hold for 3 s) the first writes of
/// `note = 'flaky done'`, counted where a rollback does not undo the count: a sequence;
/// on MariaDB a MyISAM table when refusing, because Pulsar mode's Debezium 1.9 cannot
/// parse `CREATE SEQUENCE` (the slow form is used by the database queue only, and its
/// count is read while a write holds the MyISAM table). Refused as a deadlock would
/// be: PostgreSQL 40P01, MariaDB 1213.
async fn trouble_the_business_row(env: &XdbTestEnv, slow: bool) {
    let db = env.db();
    match env.database() {
        Database::Postgres => {
            let act = if slow {
                "PERFORM pg_sleep(3)"
            } else {
                "RAISE EXCEPTION 'provoked deadlock' USING ERRCODE = '40P01'"
            };
            db.execute_sql(&format!(
                "CREATE SEQUENCE troubled_writes; \
                 CREATE FUNCTION trouble_note() RETURNS trigger LANGUAGE plpgsql AS $$ \
                 BEGIN IF NEW.note = 'flaky done' THEN \
                 IF nextval('troubled_writes') <= {REFUSED_WRITES} THEN {act}; END IF; \
                 END IF; RETURN NEW; END $$; \
                 CREATE TRIGGER trouble_note BEFORE INSERT OR UPDATE ON test_entity \
                 FOR EACH ROW EXECUTE FUNCTION trouble_note();"
            ))
            .await;
        }
        Database::MySql => {
            let act = if slow {
                "DO SLEEP(3)"
            } else {
                "SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213, \
                 MESSAGE_TEXT = 'provoked deadlock'"
            };
            let (counter, counted) = if slow {
                (
                    "CREATE SEQUENCE troubled_writes NOCACHE",
                    format!("NEXTVAL(troubled_writes) <= {REFUSED_WRITES}"),
                )
            } else {
                (
                    "CREATE TABLE troubled_writes (id INT AUTO_INCREMENT PRIMARY KEY) \
                     ENGINE=MyISAM",
                    format!("(SELECT COUNT(*) FROM troubled_writes) < {REFUSED_WRITES}"),
                )
            };
            db.execute_sql(counter).await;
            for event in ["INSERT", "UPDATE"] {
                let count = if slow {
                    ""
                } else {
                    "INSERT INTO troubled_writes VALUES ();"
                };
                db.execute_sql(&format!(
                    "CREATE TRIGGER trouble_note_{event} BEFORE {event} ON test_entity \
                     FOR EACH ROW BEGIN IF NEW.note = 'flaky done' THEN \
                     IF {counted} THEN {count} {act}; END IF; \
                     END IF; END"
                ))
                .await;
            }
        }
    }
}

/// How many writes of the note the trigger troubled so far (of a sequence: with
/// those let through).
async fn troubled_writes(env: &XdbTestEnv, slow: bool) -> i64 {
    let sql = match (env.database(), slow) {
        (Database::Postgres, _) => {
            "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM troubled_writes"
        }
        (Database::MySql, true) => "SELECT next_not_cached_value - 1 FROM troubled_writes",
        (Database::MySql, false) => "SELECT COUNT(*) FROM troubled_writes",
    };
    env.count(sql, &[]).await
}

/// The process completed, and the worker never saw an attempt past the second: only
/// its own failure was counted.
async fn completed_on_its_own_attempts(env: &XdbTestEnv, process: &FlakyProcess, id: &str) {
    let done = env
        .client
        .wait_for_process_completion(id, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed, "{id}: {done:?}");
    let attempts: Vec<u32> = process
        .attempts
        .all()
        .iter()
        .filter(|call| call.process_id == id)
        .map(|call| call.attempt)
        .collect();
    assert_eq!(attempts.iter().max(), Some(&2), "{id}: {attempts:?}");
    assert!(
        attempts.len() > 2,
        "{id}: the refused writes made the second attempt again: {attempts:?}"
    );
    assert_eq!(
        env.entity_row(id).await.and_then(|row| row.note).as_deref(),
        Some("flaky done")
    );
}

/// What one task source did with the two failures, to compare between sources.
#[derive(Debug, PartialEq)]
struct Judged {
    /// The deadlocked business row's process: completed within its two attempts.
    deadlocked_completed: bool,
    /// The rejected transition: refusals recorded when parked, worker calls made.
    rejected_refusals: Value,
    rejected_calls: usize,
}

async fn judge(db: Database, mode: QueueMode) -> Judged {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            queue_mode: mode,
            park_after_refusals: 5,
            ..Default::default()
        },
    )
    .await;
    let process = fails_once();
    let worker = serve(&mut env, &process).await;

    trouble_the_business_row(&env, false).await;
    let options = ProcessStartOptions::new().global_attribute_pk_value("deadlocked");
    start(&env, &process, &worker, "deadlocked", options)
        .await
        .unwrap();
    completed_on_its_own_attempts(&env, &process, "deadlocked").await;
    let let_through = i64::from(env.database() == Database::Postgres);
    assert_eq!(
        troubled_writes(&env, false).await,
        REFUSED_WRITES + let_through
    );

    refuse_state_completion(&env, Some("FlakyState"), Refusal::Always).await;
    let options = ProcessStartOptions::new().global_attribute_pk_value("rejected");
    let exec = start(&env, &process, &worker, "rejected", options)
        .await
        .unwrap();
    eventually("the rejected transition to be parked", SOON, || async {
        states(&env, "rejected").await["states"][0]["pendingCall"]["phase"] == "PARKED"
    })
    .await;
    let view = states(&env, "rejected").await;
    let reason = view["states"][0]["pendingCall"]["parkedReason"]
        .as_str()
        .unwrap_or_default();
    assert!(
        reason.contains(REFUSAL) && reason.contains("not retried"),
        "{mode:?}: {view}"
    );
    let parked = env
        .history(&exec)
        .await
        .into_iter()
        .find(|e| e.event_type == "TASK_PARKED")
        .expect("the parking is in the history");
    let calls = |id: &str| {
        process
            .attempts
            .all()
            .iter()
            .filter(|call| call.process_id == id)
            .count()
    };
    let judged = Judged {
        deadlocked_completed: true,
        rejected_refusals: parked.details["refusals"].clone(),
        rejected_calls: calls("rejected"),
    };

    allow_state_completion(&env).await;
    let body = json!({ "processId": "rejected" }).to_string();
    let (status, answer) = post_raw(&env, paths::RETRY_NOW, body, Some("application/json")).await;
    assert_eq!(status, 200, "{answer}");
    completed_on_its_own_attempts(&env, &process, "rejected").await;
    env.shutdown().await;
    judged
}

/// One test, both sources: the same faults, the same outcome.
async fn both_task_sources_judge_the_same_failures_alike(db: Database) {
    let queue = judge(db, QueueMode::Database).await;
    let pulsar = judge(db, QueueMode::Pulsar).await;
    let expected = Judged {
        deadlocked_completed: true,
        rejected_refusals: json!(1),
        rejected_calls: 2,
    };
    assert_eq!(queue, expected, "database queue");
    assert_eq!(pulsar, expected, "Pulsar mode");
}

/// The async service's connections go through a proxy that resets them while the
/// business row is being written (the database holds the statement 3 s): a lost
/// connection, not the user's failure, so no attempt is consumed.
async fn a_connection_cut_during_the_business_write_consumes_no_attempt(db: Database) {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            async_instances: 0,
            ..Default::default()
        },
    )
    .await;
    let proxy = TcpProxy::start_for_url(env.db().url()).await;
    let mut config = env.async_config("behind-a-proxy");
    config.database_url = proxy.url_to(env.db().url());
    let service = AsyncService::start(config)
        .await
        .expect("the async service starts");
    let process = fails_once();
    let worker = serve(&mut env, &process).await;
    trouble_the_business_row(&env, true).await;
    let options = ProcessStartOptions::new().global_attribute_pk_value("cut");
    start(&env, &process, &worker, "cut", options)
        .await
        .unwrap();
    for cut in 1..=REFUSED_WRITES {
        eventually("the business write to be under way", SOON, || async {
            troubled_writes(&env, true).await >= cut
        })
        .await;
        proxy.reset();
    }
    completed_on_its_own_attempts(&env, &process, "cut").await;
    let _ = service.shutdown().await;
    env.shutdown().await;
}

both_databases!(
    both_task_sources_judge_the_same_failures_alike,
    a_connection_cut_during_the_business_write_consumes_no_attempt,
);
