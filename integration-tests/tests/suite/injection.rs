//! SQL injection through every string of a request that reaches SQL as a value: each is
//! bound as a parameter, so it is stored and found again verbatim and nothing else
//! happens. (Identifiers, the other way text reaches SQL, are validated and quoted:
//! `bad_input::bad_table_and_column_names_are_refused_and_write_nothing`.)

use serde_json::{json, Value};
use xdb_integration_tests::{Database, XdbTestEnv};
use xdb_sdk::protocol::*;

use crate::common::*;

/// Quotes, comments and statement breaks of both dialects.
const INJECTIONS: [&str; 4] = [
    "x'); DROP TABLE \"user\"; --",
    "x' OR '1'='1",
    "x`; DROP TABLE xdb_sys_tasks; #",
    "x\\'; DELETE FROM xdb_sys_process_executions; /*",
];

async fn start_raw(env: &XdbTestEnv, body: Value) -> (u16, Value) {
    post_raw(
        env,
        paths::START,
        body.to_string(),
        Some("application/json"),
    )
    .await
}

async fn injected_text_in_every_value_field_is_stored_verbatim(db: Database) {
    let env = XdbTestEnv::start(db).await;
    for (i, text) in INJECTIONS.iter().enumerate() {
        let process_id = format!("{text}-{i}");
        let row_id = format!("{text}-row-{i}");
        // processId, processType, workerUrl's path, stateId, the primary key value,
        // initial global and local attribute values and keys.
        let (status, answer) = start_raw(
            &env,
            json!({
                "processId": process_id,
                "processType": text,
                "workerUrl": format!("http://127.0.0.1:9/{}", urlencoding(text)),
                "startStateId": text,
                "startStateInput": {"encoding": "json", "data": json!(text).to_string()},
                "processStartConfig": {
                    "globalAttributeConfig": {
                        "tableName": "test_entity",
                        "primaryKey": {"column": "id", "value": row_id},
                        "initialWrite": [
                            {"column": "note", "value": text},
                            {"column": "data", "value": {"note": text}}
                        ]
                    },
                    "localAttributeInitialWrite": [{"key": text, "value": {"encoding": "json", "data": "1"}}]
                }
            }),
        )
        .await;
        assert_eq!(status, 200, "{text}: {answer}");
        let row = env
            .entity_row(&row_id)
            .await
            .expect("the business row exists");
        assert_eq!(row.note.as_deref(), Some(*text));
        assert_eq!(row.data, Some(json!({"note": text})));

        let described = env.client.describe_process(&process_id).await.unwrap();
        assert_eq!(described.process_id, process_id);
        assert_eq!(described.process_type, *text);

        // A queue name, a dedup id and a payload.
        env.client
            .publish_to_local_queue(&process_id, text, text, Some(text.to_string()))
            .await
            .unwrap();
        let queued = env
            .count(
                "SELECT count(*) FROM xdb_sys_local_queue_messages \
                 WHERE queue_name = $1 AND dedup_id = $2",
                &[(*text).into(), (*text).into()],
            )
            .await;
        assert_eq!(queued, 1, "{text}");

        // List filters and the page token.
        let listed = env
            .client
            .list(&ProcessExecutionListRequest {
                filter: ProcessExecutionListFilter {
                    process_id: Some(process_id.clone()),
                    process_type: Some(text.to_string()),
                    ..Default::default()
                },
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(listed.executions.len(), 1, "{text}");
        let bad_token = env
            .client
            .list(&ProcessExecutionListRequest {
                next_page_token: Some(text.to_string()),
                ..Default::default()
            })
            .await;
        expect_api_error(bad_token, 400, ErrorSubType::InvalidRequest);

        // A stop reason, then history by process id.
        env.client
            .stop_process(
                &process_id,
                ProcessExecutionStopType::Fail,
                Some(text.to_string()),
            )
            .await
            .unwrap();
        let history = env
            .client
            .history(&ProcessExecutionHistoryRequest {
                process_id: process_id.clone(),
                process_execution_id: None,
                ..Default::default()
            })
            .await
            .unwrap();
        assert!(
            history.events.iter().any(|e| e
                .details
                .to_string()
                .contains(&json!(text).to_string()[1..5])),
            "{text}: the stop reason is in the history"
        );
        // Unknown ids that look like SQL are just unknown.
        expect_api_error(
            env.client.describe_process(&format!("{text}-none")).await,
            404,
            ErrorSubType::ProcessNotFound,
        );
    }
    // Every table is still there, with exactly what was written.
    let counts = env.row_counts().await;
    let count_of = |table: &str| counts.iter().find(|(t, _)| *t == table).unwrap().1;
    assert_eq!(
        count_of("test_entity"),
        INJECTIONS.len() as i64,
        "{counts:?}"
    );
    assert_eq!(count_of("\"user\""), 0, "{counts:?}");
    assert_eq!(
        count_of("xdb_sys_process_executions"),
        INJECTIONS.len() as i64,
        "{counts:?}"
    );
    assert_eq!(
        count_of("xdb_sys_local_attributes"),
        INJECTIONS.len() as i64,
        "{counts:?}"
    );
    env.shutdown().await;
}

/// Percent-encodes what a URL path cannot hold as is.
fn urlencoding(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

both_databases!(injected_text_in_every_value_field_is_stored_verbatim);
