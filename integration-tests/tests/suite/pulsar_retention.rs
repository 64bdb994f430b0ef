//! Pulsar CDC mode: the connector's offsets and, on MariaDB, Debezium's schema history
//! outlive the ledgers they were written to. Pulsar IO reads both back with readers,
//! which hold nothing back, and a broker deletes the closed ledgers that no subscription
//! needs unless the topic's retention keeps them: a broker restart (or the topic moving
//! to another broker) followed by its retention check lost the MariaDB connector's
//! history, and the restarted connector then failed for good ("The db history topic is
//! missing"). The capture sets both topics' retention; here their ledgers are closed
//! (the topic unloaded) and trimmed, as that check would.

use std::time::Duration;

use xdb_integration_tests::processes::hang::HangProcess;
use xdb_integration_tests::pulsar::{admin_url, topic_internal_stats};
use xdb_integration_tests::{Database, EnvOptions, XdbTestEnv};
use xdb_pulsar_io::PulsarIoAdmin;
use xdb_sdk::protocol::ProcessStatus;
use xdb_sdk::ProcessStartOptions;

use crate::common::*;

async fn the_connectors_offsets_and_history_outlive_their_ledgers(db: Database) {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            queue_mode: xdb_config::QueueMode::Pulsar,
            ..Default::default()
        },
    )
    .await;
    let process = HangProcess::after_wait_until();
    process.release();
    let worker = serve(&mut env, &process).await;
    // A process through the connector: its offsets are written.
    let options = ProcessStartOptions::new().global_attribute_pk_value("kept".to_string());
    start(&env, &process, &worker, "kept", options)
        .await
        .unwrap();
    let done = env
        .client
        .wait_for_process_completion("kept", Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");

    let registration = env
        .capture()
        .expect("the test database is captured")
        .registration()
        .clone();
    let kept: Vec<&String> = std::iter::once(&registration.offsets_topic)
        .chain(registration.history_topic.as_ref())
        .collect();
    assert_eq!(kept.len(), if db == Database::MySql { 2 } else { 1 });
    let admin = PulsarIoAdmin::new(&admin_url());
    for topic in kept {
        assert!(holds_messages(&admin, topic).await, "{topic} holds nothing");
        // Unloaded, the topic closes its ledger and opens a new one when used again.
        admin_call(reqwest::Method::PUT, topic, "unload").await;
        admin_call(reqwest::Method::POST, topic, "trim").await;
        let ledgers = topic_internal_stats(topic).await["ledgers"]
            .as_array()
            .map_or(0, Vec::len);
        assert!(
            ledgers >= 2,
            "{topic}: the written ledger is kept ({ledgers} ledgers)"
        );
        assert!(
            holds_messages(&admin, topic).await,
            "{topic} lost its messages to a trim"
        );
    }
    env.shutdown().await;
}

async fn holds_messages(admin: &PulsarIoAdmin, topic: &str) -> bool {
    admin
        .topic_has_messages(topic)
        .await
        .unwrap_or_else(|e| panic!("the first message of {topic}: {e}"))
}

/// `method` on the admin API's `action` of `topic` (`persistent://…`).
async fn admin_call(method: reqwest::Method, topic: &str, action: &str) {
    let path = topic.replacen("persistent://", "", 1);
    let url = format!("{}/admin/v2/persistent/{path}/{action}", admin_url());
    reqwest::Client::new()
        .request(method, &url)
        .send()
        .await
        .and_then(|r| r.error_for_status())
        .unwrap_or_else(|e| panic!("{url}: {e}"));
}

both_databases!(the_connectors_offsets_and_history_outlive_their_ledgers);
