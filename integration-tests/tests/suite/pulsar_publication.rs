//! Pulsar CDC mode: which changes of `xdb_sys_tasks` reach the tasks topic. On
//! PostgreSQL the capture's publication carries only changes that leave a task unleased
//! (`xdb_sys_schema::FILTERED_PUBLICATION`): a process whose every later step is a
//! continuation sends one message, its start. Binary logs have no row filter, so on
//! MariaDB its claim and its continuation's task are published too (and passed over by
//! the consumer).

use std::time::Duration;

use xdb_integration_tests::processes::hang::HangProcess;
use xdb_integration_tests::pulsar::topic_stats;
use xdb_integration_tests::{Database, EnvOptions, XdbTestEnv};
use xdb_sdk::protocol::ProcessStatus;
use xdb_sdk::ProcessStartOptions;

use crate::common::*;

const PROCESSES: u64 = 5;

async fn the_tasks_topic_carries_hand_offs_and_on_postgres_nothing_else(db: Database) {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            queue_mode: xdb_config::QueueMode::Pulsar,
            ..Default::default()
        },
    )
    .await;
    // waitUntil, then execute as the continuation of that transition.
    let process = HangProcess::after_wait_until();
    process.release();
    let worker = serve(&mut env, &process).await;
    let topic = env
        .capture()
        .expect("the test database is captured")
        .registration()
        .tasks_topic
        .clone();
    // One after another, so each process's claim and continuation commit before the
    // next start; the last process marks the end: Debezium publishes in commit order,
    // so once its start is on the topic, every earlier change that is published is too.
    for n in 0..=PROCESSES {
        let id = format!("published-{n}");
        let options = ProcessStartOptions::new().global_attribute_pk_value(format!("p{n}"));
        start(&env, &process, &worker, &id, options).await.unwrap();
        let done = env
            .client
            .wait_for_process_completion(&id, Duration::from_secs(30))
            .await
            .unwrap();
        assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");
    }
    let published = messages_in(&topic).await;
    match env.database() {
        // Exactly the starts: no claim, no continuation.
        Database::Postgres => assert_eq!(published, PROCESSES + 1, "{topic}"),
        // Each earlier process's start, claim and continuation, and the last one's start.
        Database::MySql => assert!(published > 3 * PROCESSES, "{published} on {topic}"),
    }
    if env.database() == Database::Postgres {
        let filter: String = env
            .db()
            .client()
            .await
            .query_one(
                "SELECT rowfilter FROM pg_publication_tables WHERE tablename = 'xdb_sys_tasks'",
                &[],
            )
            .await
            .expect("the capture's publication covers xdb_sys_tasks")
            .get(0);
        assert!(filter.contains("lease_owner IS NULL"), "{filter}");
    }
    env.shutdown().await;
}

/// Messages the broker took in on `topic`.
async fn messages_in(topic: &str) -> u64 {
    let stats = topic_stats(topic).await;
    stats["msgInCounter"]
        .as_u64()
        .unwrap_or_else(|| panic!("no msgInCounter in {stats}"))
}

both_databases!(the_tasks_topic_carries_hand_offs_and_on_postgres_nothing_else);
