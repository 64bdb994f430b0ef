use serde_json::json;
use xdb_protocol::*;

use super::*;

fn definition() -> ProcessDefinition {
    serde_json::from_value(json!({
        "processType": "Order",
        "states": [
            {"id": "Pay", "hasWaitUntil": false,
             "config": {"skipWaitUntil": true, "executeApiTimeoutSeconds": 7},
             "inputSchema": {"type": "object", "required": ["amount"],
                             "properties": {"amount": {"type": "integer", "minimum": 1}}}},
            {"id": "Ship", "hasWaitUntil": true}
        ],
        "startStates": ["Pay"],
        "localQueues": ["paid"],
        "rpcs": [
            {"name": "cancel",
             "globalAttributeLoading": {"columns": ["status", "paid"],
                                        "lockType": "EXCLUSIVE_LOCK"}},
            {"name": "peek"}
        ],
        "globalAttributes": {"tableName": "orders", "primaryKeyColumn": "id",
                             "columns": [{"name": "status", "type": "STRING"},
                                         {"name": "paid", "type": "BOOLEAN"}]}
    }))
    .unwrap()
}

fn compiled() -> Compiled {
    Compiled::new(StoredDefinition {
        revision: DefinitionRevision {
            process_type: "Order".into(),
            revision: 3,
            content_hash: content_hash(&definition()),
            deployment: WorkerDeployment {
                name: "orders".into(),
                version: "v2".into(),
                worker_url: "http://worker:8080".into(),
            },
            registered_at_ms: 0,
        },
        definition: definition(),
    })
    .unwrap()
}

fn start(state: &str, input: Option<serde_json::Value>) -> ProcessExecutionStartRequest {
    ProcessExecutionStartRequest {
        request_id: None,
        process_id: "o-1".into(),
        process_type: "Order".into(),
        worker_url: String::new(),
        start_state_id: Some(state.into()),
        start_state_input: input.map(|v| EncodedObject::json(&v).unwrap()),
        start_state_config: None,
        process_start_config: None,
    }
}

#[test]
fn a_start_takes_the_deployments_url_and_the_declared_options() {
    let mut request = start("Pay", Some(json!({"amount": 5})));
    resolve_start(&compiled(), &mut request).unwrap();
    assert_eq!(request.worker_url, "http://worker:8080");
    let config = request.start_state_config.unwrap();
    assert!(config.skip_wait_until);
    assert_eq!(config.execute_api_timeout_seconds, Some(7));
}

#[test]
fn a_start_is_refused_naming_the_field() {
    let refused = |mut request: ProcessExecutionStartRequest| {
        resolve_start(&compiled(), &mut request).unwrap_err()
    };
    let unknown = refused(start("Nope", None));
    assert!(
        unknown.starts_with("startStateId:") && unknown.contains("Pay, Ship"),
        "{unknown}"
    );
    let not_a_start = refused(start("Ship", None));
    assert!(not_a_start.contains("not a start state"), "{not_a_start}");
    let bad_input = refused(start("Pay", Some(json!({"amount": 0}))));
    assert!(
        bad_input.starts_with("startStateInput:") && bad_input.contains("/amount"),
        "{bad_input}"
    );
    let no_input = refused(start("Pay", None));
    assert!(no_input.contains("input schema"), "{no_input}");
    let mut no_skip = start("Pay", Some(json!({"amount": 5})));
    no_skip.start_state_config = Some(AsyncStateConfig::default());
    let no_skip = refused(no_skip);
    assert!(
        no_skip.starts_with("startStateConfig.skipWaitUntil"),
        "{no_skip}"
    );
}

#[test]
fn a_start_names_the_declared_table_and_columns() {
    let mut request = start("Pay", Some(json!({"amount": 5})));
    request.process_start_config = Some(ProcessStartConfig {
        global_attribute_config: Some(GlobalAttributeConfig {
            table_name: "orders".into(),
            primary_key: GlobalAttributeValue {
                column: "id".into(),
                value: json!("o-1"),
            },
            initial_write: vec![GlobalAttributeValue {
                column: "notes".into(),
                value: json!(1),
            }],
        }),
        ..Default::default()
    });
    let error = resolve_start(&compiled(), &mut request).unwrap_err();
    assert!(
        error.contains("initialWrite[0].column") && error.contains("notes"),
        "{error}"
    );
}

#[test]
fn a_publish_names_a_declared_queue() {
    let message = |queue: &str| LocalQueueMessage {
        queue_name: queue.into(),
        dedup_id: None,
        payload: None,
    };
    assert!(check_publish(&definition(), &[message("paid")]).is_ok());
    let error = check_publish(&definition(), &[message("paid"), message("payed")]).unwrap_err();
    assert!(
        error.starts_with("messages[1].queueName") && error.contains("paid"),
        "{error}"
    );
}

fn rpc(name: &str) -> ProcessExecutionRpcRequest {
    ProcessExecutionRpcRequest {
        process_id: "o-1".into(),
        rpc_name: name.into(),
        input: None,
        timeout_seconds: None,
        global_attribute_loading: None,
        local_attribute_loading: None,
    }
}

#[test]
fn an_rpc_gets_its_declared_loading_and_may_only_narrow_it() {
    let mut request = rpc("cancel");
    resolve_rpc(&compiled(), &mut request).unwrap();
    let loading = request.global_attribute_loading.unwrap();
    assert_eq!(loading.lock_type, LockType::ExclusiveLock);
    assert_eq!(loading.columns, ["status", "paid"]);

    let mut fewer = rpc("cancel");
    fewer.global_attribute_loading = Some(GlobalAttributeLoading {
        columns: vec!["status".into()],
        lock_type: LockType::ExclusiveLock,
    });
    resolve_rpc(&compiled(), &mut fewer).unwrap();

    let mut unlocked = rpc("cancel");
    unlocked.global_attribute_loading = Some(GlobalAttributeLoading {
        columns: vec!["status".into()],
        lock_type: LockType::NoLock,
    });
    let error = resolve_rpc(&compiled(), &mut unlocked).unwrap_err();
    assert!(error.contains("lockType"), "{error}");

    let mut wider = rpc("peek");
    wider.global_attribute_loading = Some(GlobalAttributeLoading {
        columns: vec!["status".into()],
        lock_type: LockType::NoLock,
    });
    let error = resolve_rpc(&compiled(), &mut wider).unwrap_err();
    assert!(error.contains("'status' is not loaded"), "{error}");

    let error = resolve_rpc(&compiled(), &mut rpc("refund")).unwrap_err();
    assert!(
        error.starts_with("rpcName:") && error.contains("cancel, peek"),
        "{error}"
    );
}

#[test]
fn a_definition_breaking_its_own_rules_is_named() {
    let broken = |edit: &dyn Fn(&mut ProcessDefinition)| {
        let mut definition = definition();
        edit(&mut definition);
        check_definition("definitions[0]", &definition).unwrap_err()
    };
    assert!(check_definition("definitions[0]", &definition()).is_ok());
    let twice = broken(&|d| d.states[1].id = "Pay".into());
    assert!(twice.starts_with("definitions[0].states[1]"), "{twice}");
    let start = broken(&|d| d.start_states = vec!["Nope".into()]);
    assert!(
        start.starts_with("definitions[0].startStates[0]"),
        "{start}"
    );
    let schema = broken(&|d| d.states[0].input_schema = Some(json!({"type": 12})));
    assert!(schema.contains("states[0].inputSchema"), "{schema}");
    let table =
        broken(&|d| d.global_attributes.as_mut().unwrap().table_name = "orders; drop".into());
    assert!(table.contains("globalAttributes.tableName"), "{table}");
}

#[test]
fn columns_are_checked_by_name_and_type() {
    let globals = definition().global_attributes.unwrap();
    let column = |name: &str, data_type: &str| TableColumn {
        name: name.into(),
        data_type: data_type.into(),
        collation: None,
    };
    let table = [
        column("id", "character varying"),
        column("status", "text"),
        column("paid", "boolean"),
    ];
    assert!(check_columns("g", &globals, &table, false).is_ok());
    let error = check_columns("g", &globals, &[], false).unwrap_err();
    assert!(error.contains("does not exist"), "{error}");
    let wrong_type = [
        table[0].clone(),
        table[1].clone(),
        column("paid", "timestamp"),
    ];
    let error = check_columns("g", &globals, &wrong_type, false).unwrap_err();
    assert!(error.starts_with("g.columns[1].type"), "{error}");
    let upper = [
        column("ID", "varchar"),
        column("STATUS", "varchar"),
        column("PAID", "tinyint"),
    ];
    assert!(check_columns("g", &globals, &upper, true).is_ok());
    assert!(check_columns("g", &globals, &upper, false).is_err());
}

#[test]
fn the_content_hash_ignores_key_order_but_not_content() {
    let a = definition();
    let mut b = definition();
    b.states[0].input_schema = Some(
        json!({"properties": {"amount": {"minimum": 1, "type": "integer"}},
                                           "required": ["amount"], "type": "object"}),
    );
    assert_eq!(content_hash(&a), content_hash(&b));
    b.local_queues.push("refunded".into());
    assert_ne!(content_hash(&a), content_hash(&b));
    assert_eq!(content_hash(&a).len(), 64);
}
