//! Global attributes on a user table: upsert at start, typed reads, updates, RPC, and
//! identifiers that must never reach SQL.

use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;
use xdb_engine::decide::DecideError;
use xdb_engine::TaskType;
use xdb_persistence::{RpcWorker, StoreError};
use xdb_protocol::*;
use xdb_test_util::Dialect;

use crate::common::*;

both!(
    start_upserts_and_states_read_and_update_the_row,
    a_row_conflicting_on_another_unique_key_fails_the_start,
    rpc_reads_under_lock_and_applies_its_writes,
    bad_identifiers_are_refused_and_change_nothing,
    a_trigger_failing_on_the_user_table_is_the_apps_error,
);

fn loading(columns: &[&str], lock_type: LockType) -> AsyncStateConfig {
    AsyncStateConfig {
        global_attribute_loading: Some(GlobalAttributeLoading {
            columns: columns.iter().map(|c| c.to_string()).collect(),
            lock_type,
        }),
        ..Default::default()
    }
}

async fn start_upserts_and_states_read_and_update_the_row(dialect: Dialect) {
    let h = harness(dialect).await;
    h.db.execute_sql(users_table(dialect)).await;
    // An existing row is updated by the start; only the columns written change.
    h.db.execute_sql("INSERT INTO users (id, email, note) VALUES ('u1', 'old@x', 'kept')")
        .await;
    let mut request = start_request("p-attr", "A");
    request.start_state_config = Some(loading(
        &["email", "score", "active", "profile", "balance", "note"],
        LockType::SharedLock,
    ));
    request.process_start_config = Some(ProcessStartConfig {
        global_attribute_config: Some(users_config(
            "u1",
            vec![
                value("email", "new@x"),
                value("score", 7),
                value("active", true),
                value("profile", json!({"tier": "gold", "tags": [1, 2]})),
                value("balance", 12.5),
            ],
        )),
        ..Default::default()
    });
    h.store.start_process(&request).await.unwrap();
    let described = describe(&*h.store, "p-attr").await;
    assert_eq!(described.status, ProcessStatus::Running);
    assert_eq!(
        described.global_attribute_config.unwrap().primary_key.value,
        json!("u1")
    );

    let (task, call) = claim_call(&*h.store, "w", TaskType::WaitUntil).await;
    let read: Vec<(String, serde_json::Value)> = call
        .attributes
        .global_attributes
        .iter()
        .map(|a| (a.column.clone(), a.value.clone()))
        .collect();
    assert_eq!(
        read,
        vec![
            ("email".into(), json!("new@x")),
            ("score".into(), json!(7)),
            ("active".into(), json!(true)),
            ("profile".into(), json!({"tier": "gold", "tags": [1, 2]})),
            ("balance".into(), json!(12.5)),
            ("note".into(), json!("kept")),
        ]
    );

    // A new row is inserted by a start with another key.
    let mut second = start_request("p-attr-2", "A");
    second.process_start_config = Some(ProcessStartConfig {
        global_attribute_config: Some(users_config("u2", vec![value("email", "two@x")])),
        ..Default::default()
    });
    h.store.start_process(&second).await.unwrap();
    assert_eq!(
        sql_text(&h.db, "SELECT email FROM users WHERE id = 'u2'").await,
        Some("two@x".into())
    );

    // The state's writes land in the same transaction as its transition.
    let response = AsyncStateWaitUntilResponse {
        writes: AttributeWrites {
            global_attributes: vec![
                value("email", "newer@x"),
                value("note", serde_json::Value::Null),
                value("profile", "just a string"),
            ],
            local_attributes: vec![],
        },
        ..Default::default()
    };
    h.store
        .complete_wait_until(&task, "w", &call, &response)
        .await
        .unwrap();
    assert_eq!(
        sql_text(&h.db, "SELECT email FROM users WHERE id = 'u1'").await,
        Some("newer@x".into())
    );
    assert_eq!(
        sql_text(&h.db, "SELECT note FROM users WHERE id = 'u1'").await,
        None
    );
    let (_, call) = claim_call(&*h.store, "w", TaskType::Execute).await;
    let profile = call
        .attributes
        .global_attributes
        .iter()
        .find(|a| a.column == "profile")
        .unwrap();
    // A JSON string in a JSON column stays a JSON string.
    assert_eq!(profile.value, json!("just a string"));
}

async fn a_row_conflicting_on_another_unique_key_fails_the_start(dialect: Dialect) {
    let h = harness(dialect).await;
    h.db.execute_sql(users_table(dialect)).await;
    h.db.execute_sql("INSERT INTO users (id, email) VALUES ('u1', 'taken@x')")
        .await;
    let mut request = start_request("p-conflict", "A");
    request.process_start_config = Some(ProcessStartConfig {
        global_attribute_config: Some(users_config("u9", vec![value("email", "taken@x")])),
        ..Default::default()
    });
    let error = h.store.start_process(&request).await.unwrap_err();
    assert!(matches!(error, StoreError::AppDatabase(_)), "{error:?}");
    // Atomic: no execution, and the other row is untouched.
    assert!(matches!(
        h.store
            .describe_process(&ProcessExecutionDescribeRequest {
                process_id: "p-conflict".into(),
                process_execution_id: None,
            })
            .await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(
        sql_text(&h.db, "SELECT id FROM users WHERE email = 'taken@x'").await,
        Some("u1".into())
    );
    assert_eq!(
        sql_text(&h.db, "SELECT id FROM users WHERE id = 'u9'").await,
        None
    );
}

/// Checks the request it gets and answers with writes, a message and a new state.
struct FakeWorker {
    seen: Mutex<Vec<ProcessRpcWorkerRequest>>,
    fail: bool,
}

#[async_trait]
impl RpcWorker for FakeWorker {
    async fn call_rpc(
        &self,
        worker_url: &str,
        request: &ProcessRpcWorkerRequest,
        _timeout: Duration,
    ) -> Result<ProcessRpcWorkerResponse, String> {
        assert_eq!(worker_url, "http://127.0.0.1:9");
        self.seen.lock().unwrap().push(request.clone());
        if self.fail {
            return Err("worker down".into());
        }
        Ok(ProcessRpcWorkerResponse {
            output: Some(encoded("\"ok\"")),
            writes: AttributeWrites {
                global_attributes: vec![value("email", "rpc@x"), value("score", 42)],
                local_attributes: vec![LocalAttributeValue {
                    key: "seen".into(),
                    value: encoded("true"),
                }],
            },
            publish_to_local_queue: vec![LocalQueueMessage {
                queue_name: "q".into(),
                dedup_id: Some("rpc-1".into()),
                payload: None,
            }],
            append_next_states: vec![StateMovement {
                state_id: "C".into(),
                state_input: None,
                state_config: Some(AsyncStateConfig {
                    skip_wait_until: true,
                    ..Default::default()
                }),
            }],
        })
    }
}

async fn rpc_reads_under_lock_and_applies_its_writes(dialect: Dialect) {
    let h = harness(dialect).await;
    h.db.execute_sql(users_table(dialect)).await;
    let mut request = start_request("p-rpc", "A");
    request.process_start_config = Some(ProcessStartConfig {
        global_attribute_config: Some(users_config(
            "u1",
            vec![value("email", "a@x"), value("score", 1)],
        )),
        ..Default::default()
    });
    h.store.start_process(&request).await.unwrap();
    let rpc = ProcessExecutionRpcRequest {
        process_id: "p-rpc".into(),
        rpc_name: "verify".into(),
        input: Some(encoded("{}")),
        timeout_seconds: None,
        global_attribute_loading: Some(GlobalAttributeLoading {
            columns: vec!["email".into(), "score".into()],
            lock_type: LockType::ExclusiveLock,
        }),
        local_attribute_loading: Some(LocalAttributeLoading {
            keys: vec!["seen".into()],
            lock_type: LockType::SharedLock,
        }),
    };

    // A failing worker changes nothing.
    let failing = FakeWorker {
        seen: Mutex::new(Vec::new()),
        fail: true,
    };
    let error = h
        .store
        .rpc(&rpc, &failing, Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::Worker(_)), "{error:?}");
    assert_eq!(
        sql_text(&h.db, "SELECT email FROM users WHERE id = 'u1'").await,
        Some("a@x".into())
    );

    let worker = FakeWorker {
        seen: Mutex::new(Vec::new()),
        fail: false,
    };
    let response = h
        .store
        .rpc(&rpc, &worker, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(response.output, Some(encoded("\"ok\"")));
    let seen = worker.seen.lock().unwrap()[0].clone();
    assert_eq!(seen.rpc_name, "verify");
    assert_eq!(
        seen.attributes.global_attributes,
        vec![value("email", "a@x"), value("score", 1)]
    );
    assert!(seen.attributes.local_attributes.is_empty());
    assert_eq!(
        sql_text(&h.db, "SELECT email FROM users WHERE id = 'u1'").await,
        Some("rpc@x".into())
    );
    assert!(history_types(&*h.store, "p-rpc")
        .await
        .contains(&"RPC_COMPLETED".to_string()));

    // The appended state runs, and the local attribute is there for the next RPC.
    claim(&*h.store, "w", TaskType::Execute).await;
    let again = FakeWorker {
        seen: Mutex::new(Vec::new()),
        fail: false,
    };
    h.store
        .rpc(&rpc, &again, Duration::from_secs(5))
        .await
        .unwrap();
    let seen = again.seen.lock().unwrap()[0].clone();
    assert_eq!(
        seen.attributes.local_attributes,
        vec![LocalAttributeValue {
            key: "seen".into(),
            value: encoded("true"),
        }]
    );
    assert_eq!(
        seen.attributes.global_attributes,
        vec![value("email", "rpc@x"), value("score", 42)]
    );
}

async fn bad_identifiers_are_refused_and_change_nothing(dialect: Dialect) {
    let h = harness(dialect).await;
    h.db.execute_sql(users_table(dialect)).await;
    let bad_tables = ["users; DROP TABLE users", "users`", "a.b.c", "\"users\""];
    for table in bad_tables {
        let mut request = start_request("p-bad", "A");
        let mut config = users_config("u1", vec![value("email", "x@x")]);
        config.table_name = table.into();
        request.process_start_config = Some(ProcessStartConfig {
            global_attribute_config: Some(config),
            ..Default::default()
        });
        let error = h.store.start_process(&request).await.unwrap_err();
        assert!(
            matches!(error, StoreError::Decide(DecideError::Invalid(_))),
            "{table}: {error:?}"
        );
    }
    for column in ["email = 'x'", "e`mail", "1abc", ""] {
        let mut request = start_request("p-bad", "A");
        request.process_start_config = Some(ProcessStartConfig {
            global_attribute_config: Some(users_config("u1", vec![value(column, "x")])),
            ..Default::default()
        });
        let error = h.store.start_process(&request).await.unwrap_err();
        assert!(
            matches!(error, StoreError::Decide(DecideError::Invalid(_))),
            "{column}: {error:?}"
        );
    }
    // Nothing was written: no execution, no row, the table is still there.
    assert!(h
        .store
        .describe_process(&ProcessExecutionDescribeRequest {
            process_id: "p-bad".into(),
            process_execution_id: None,
        })
        .await
        .is_err());
    assert_eq!(sql_text(&h.db, "SELECT email FROM users").await, None);

    // A value that looks like SQL is only ever a value.
    let mut request = start_request("p-value", "A");
    request.process_start_config = Some(ProcessStartConfig {
        global_attribute_config: Some(users_config(
            "u1",
            vec![value("email", "x'); DROP TABLE users; --")],
        )),
        ..Default::default()
    });
    h.store.start_process(&request).await.unwrap();
    assert_eq!(
        sql_text(&h.db, "SELECT email FROM users WHERE id = 'u1'").await,
        Some("x'); DROP TABLE users; --".into())
    );

    // Loading an unknown or malformed column through RPC fails cleanly.
    let rpc = ProcessExecutionRpcRequest {
        process_id: "p-value".into(),
        rpc_name: "r".into(),
        input: None,
        timeout_seconds: None,
        global_attribute_loading: Some(GlobalAttributeLoading {
            columns: vec!["email`; DROP TABLE users".into()],
            lock_type: LockType::NoLock,
        }),
        local_attribute_loading: None,
    };
    let worker = FakeWorker {
        seen: Mutex::new(Vec::new()),
        fail: false,
    };
    let error = h
        .store
        .rpc(&rpc, &worker, Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(
        matches!(error, StoreError::Decide(DecideError::Invalid(_))),
        "{error:?}"
    );
    let mut unknown = rpc.clone();
    unknown.global_attribute_loading = Some(GlobalAttributeLoading {
        columns: vec!["no_such_column".into()],
        lock_type: LockType::NoLock,
    });
    let error = h
        .store
        .rpc(&unknown, &worker, Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::AppDatabase(_)), "{error:?}");
    assert!(worker.seen.lock().unwrap().is_empty());
}

/// A trigger on the user's table that divides by zero fails the state's writes as the
/// application's database error, not as rows that moved (PostgreSQL's one-statement
/// writes assert their row counts with a division by zero of their own): a stale
/// transition would be decided and tried again, calling the worker again each time.
async fn a_trigger_failing_on_the_user_table_is_the_apps_error(dialect: Dialect) {
    let h = harness(dialect).await;
    h.db.execute_sql(users_table(dialect)).await;
    let mut request = start_request("p-trigger", "A");
    request.process_start_config = Some(ProcessStartConfig {
        global_attribute_config: Some(users_config("u1", vec![value("score", 1)])),
        ..Default::default()
    });
    h.store.start_process(&request).await.unwrap();
    let (task, call) = claim_call(&*h.store, "w", TaskType::WaitUntil).await;
    match dialect {
        Dialect::Postgres => {
            h.db.execute_sql(
                "CREATE FUNCTION users_refuse() RETURNS trigger LANGUAGE plpgsql AS \
                 $$ BEGIN NEW.score := NEW.score / 0; RETURN NEW; END $$",
            )
            .await;
            h.db.execute_sql(
                "CREATE TRIGGER users_refuse BEFORE UPDATE ON users \
                 FOR EACH ROW EXECUTE FUNCTION users_refuse()",
            )
            .await;
        }
        Dialect::MySql => {
            h.db.execute_sql(
                "CREATE TRIGGER users_refuse BEFORE UPDATE ON users \
                 FOR EACH ROW SET NEW.score = NEW.score / 0",
            )
            .await;
        }
    }
    let response = AsyncStateWaitUntilResponse {
        writes: AttributeWrites {
            global_attributes: vec![value("score", 2)],
            local_attributes: vec![],
        },
        ..Default::default()
    };
    let error = h
        .store
        .complete_wait_until(&task, "w", &call, &response)
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::AppDatabase(_)), "{error:?}");
    assert_eq!(
        sql_text(&h.db, "SELECT CONCAT(score, '') FROM users WHERE id = 'u1'").await,
        Some("1".into()),
        "nothing written"
    );
}
