use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::*;
use crate::{paths, ErrorSubType, HistoryEventType};

fn doc() -> Value {
    serde_json::from_str(&openapi_json()).unwrap()
}

fn post<'d>(doc: &'d Value, path: &str) -> &'d Value {
    let operation = &doc["paths"][path]["post"];
    assert!(operation.is_object(), "no POST {path}");
    operation
}

const SERVICE_PATHS: [&str; 39] = [
    paths::STATES,
    paths::RESET,
    paths::RETRY_NOW,
    paths::GIVE_UP,
    paths::PAUSE,
    paths::RESUME,
    paths::REPRIORITIZE,
    paths::START,
    paths::STOP,
    paths::DESCRIBE,
    paths::LIST,
    paths::COUNT,
    paths::HISTORY,
    paths::PUBLISH_TO_LOCAL_QUEUE,
    paths::RPC,
    paths::WAIT_FOR_COMPLETION,
    paths::DEFINITIONS_REGISTER,
    paths::DEFINITIONS_LIST,
    paths::DEFINITIONS_DESCRIBE,
    paths::DEPLOYMENTS_LIST,
    paths::DEPLOYMENTS_SET_CURRENT,
    paths::DEPLOYMENTS_MOVE,
    paths::BATCH_START,
    paths::BATCH_LIST,
    paths::BATCH_DESCRIBE,
    paths::BATCH_CANCEL,
    paths::SCHEDULE_CREATE,
    paths::SCHEDULE_UPDATE,
    paths::SCHEDULE_PAUSE,
    paths::SCHEDULE_RESUME,
    paths::SCHEDULE_TRIGGER,
    paths::SCHEDULE_BACKFILL,
    paths::SCHEDULE_DELETE,
    paths::SCHEDULE_LIST,
    paths::SCHEDULE_DESCRIBE,
    paths::SCHEDULE_HISTORY,
    paths::FLOW_LIMITS_SET,
    paths::FLOW_LIMITS_LIST,
    paths::FLOW_LIMITS_HISTORY,
];
const WORKER_PATHS: [&str; 3] = [
    paths::WORKER_WAIT_UNTIL,
    paths::WORKER_EXECUTE,
    paths::WORKER_RPC,
];

/// Keeps the committed document in step with the types; `XDB_BLESS=1` rewrites it.
#[test]
fn committed_document_matches_the_types() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/openapi.json");
    let generated = openapi_json() + "\n";
    if std::env::var("XDB_BLESS").is_ok() {
        std::fs::write(path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        committed == generated,
        "openapi.json is stale: run `XDB_BLESS=1 cargo test -p xdb-protocol`"
    );
}

#[test]
fn document_names_every_path() {
    let doc = doc();
    for path in SERVICE_PATHS.iter().chain(&WORKER_PATHS) {
        post(&doc, path);
    }
    post(&doc, paths::INTERNAL_NOTIFY);
    post(&doc, paths::CONSOLE_ATTRIBUTES);
}

/// The sub-types each operation admits under each status, read from the document.
fn error_sub_types(operation: &Value) -> BTreeMap<u16, Vec<String>> {
    let mut found = BTreeMap::new();
    for (status, response) in operation["responses"].as_object().unwrap() {
        let status: u16 = match status.parse() {
            Ok(status) if status >= 400 => status,
            _ => continue,
        };
        let all_of = &response["content"]["application/json"]["schema"]["allOf"];
        assert_eq!(
            all_of[0]["$ref"], "#/components/schemas/ApiErrorResponse",
            "{status}"
        );
        let names = all_of[1]["properties"]["subType"]["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("{status} lists no sub-types"))
            .iter()
            .map(|n| n.as_str().unwrap().to_string())
            .collect();
        found.insert(status, names);
    }
    found
}

#[test]
fn every_sub_type_appears_with_its_status_and_nowhere_else() {
    let doc = doc();
    let mut seen = BTreeSet::new();
    for path in SERVICE_PATHS.iter().chain(&[paths::INTERNAL_NOTIFY]) {
        for (status, names) in error_sub_types(post(&doc, path)) {
            for name in names {
                let sub_type = ErrorSubType::ALL
                    .into_iter()
                    .find(|s| s.as_str() == name)
                    .unwrap_or_else(|| panic!("{path}: unknown sub-type {name}"));
                assert_eq!(sub_type.http_status(), status, "{path}: {name}");
                seen.insert(name);
            }
        }
    }
    let all: BTreeSet<String> = ErrorSubType::ALL
        .iter()
        .map(|s| s.as_str().to_string())
        .collect();
    assert_eq!(seen, all, "every sub-type is answered by some operation");
    // The wire names are the schema's enum, and the table states each status.
    let schema = &doc["components"]["schemas"]["ErrorSubType"];
    let listed: BTreeSet<String> = schema["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    assert_eq!(listed, all);
    let table = schema["description"].as_str().unwrap();
    for sub_type in ErrorSubType::ALL {
        let row = format!("| `{}` | {} |", sub_type.as_str(), sub_type.http_status());
        assert!(table.contains(&row), "{row}");
    }
}

#[test]
fn every_request_may_be_invalid_too_large_or_fail_and_service_requests_unauthorized() {
    let doc = doc();
    for path in SERVICE_PATHS {
        let errors = error_sub_types(post(&doc, path));
        for status in [400, 401, 413, 500] {
            assert!(errors.contains_key(&status), "{path} lacks {status}");
        }
    }
    let rpc = error_sub_types(post(&doc, paths::RPC));
    assert_eq!(
        rpc[&409],
        ["PROCESS_NOT_RUNNING", "PROCESS_CLOSED_DURING_RPC"]
    );
    assert_eq!(rpc[&424], ["WORKER_API_ERROR", "APP_DATABASE_ERROR"]);
    let start = error_sub_types(post(&doc, paths::START));
    assert_eq!(start[&424], ["APP_DATABASE_ERROR"]);
    // The internal path takes no token but a signature: 401 without it, never 403.
    let internal = error_sub_types(post(&doc, paths::INTERNAL_NOTIFY));
    assert_eq!(internal[&401], ["UNAUTHORIZED"]);
    assert!(!internal.contains_key(&403));
    let security = &post(&doc, paths::INTERNAL_NOTIFY)["security"];
    assert_eq!(
        security,
        &serde_json::json!([{ "xdbInternalSignature": [] }]),
        "required, with no unsigned alternative"
    );
    // The console's read is a client path: the same tokens, the same errors as describe.
    let console = error_sub_types(post(&doc, paths::CONSOLE_ATTRIBUTES));
    assert_eq!(console[&401], ["UNAUTHORIZED"]);
    assert_eq!(console[&404], ["PROCESS_NOT_FOUND"]);
    assert_eq!(console[&424], ["APP_DATABASE_ERROR"]);
}

#[test]
fn worker_paths_are_served_by_the_worker_and_may_be_signed() {
    let doc = doc();
    let scheme = &doc["components"]["securitySchemes"][security::SIGNATURE];
    assert_eq!(scheme["type"], "apiKey");
    assert_eq!(scheme["in"], "header");
    assert_eq!(scheme["name"], "X-XDB-Signature");
    for path in WORKER_PATHS {
        let servers = doc["paths"][path]["servers"].as_array().unwrap();
        assert_eq!(servers.len(), 1, "{path}");
        assert_eq!(servers[0]["url"], "{workerUrl}", "{path}");
        assert!(servers[0]["variables"]["workerUrl"]["default"].is_string());
        let operation = post(&doc, path);
        assert_eq!(operation["tags"][0], "worker");
        let security = operation["security"].as_array().unwrap();
        assert!(
            security.contains(&serde_json::json!({})),
            "signing is optional"
        );
        assert!(security.contains(&serde_json::json!({security::SIGNATURE: []})));
        let headers: Vec<&str> = operation["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(headers, ["Idempotency-Key", "traceparent", "tracestate"]);
        for status in ["200", "400", "401", "500", "default"] {
            assert!(
                operation["responses"][status].is_object(),
                "{path} {status}"
            );
        }
    }
    // The service's own paths are served by the document's server, with a bearer token.
    assert_eq!(doc["servers"][0]["url"], "/");
    for path in SERVICE_PATHS {
        assert!(doc["paths"][path]["servers"].is_null(), "{path}");
        let security = post(&doc, path)["security"].as_array().unwrap().clone();
        assert!(security.contains(&serde_json::json!({security::BEARER: []})));
    }
}

#[test]
fn start_links_to_the_operations_that_follow_the_execution() {
    let doc = doc();
    let links = &post(&doc, paths::START)["responses"]["200"]["links"];
    let operation_ids: BTreeSet<&str> = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .map(|item| item["post"]["operationId"].as_str().unwrap())
        .collect();
    for (name, target) in [
        ("describe", operation_ids::DESCRIBE),
        ("history", operation_ids::HISTORY),
        ("stop", operation_ids::STOP),
        ("rpc", operation_ids::RPC),
        ("publishToLocalQueue", operation_ids::PUBLISH_TO_LOCAL_QUEUE),
        ("waitForCompletion", operation_ids::WAIT_FOR_COMPLETION),
    ] {
        let link = &links[name];
        assert_eq!(link["operationId"], target, "{name}");
        assert!(operation_ids.contains(target), "{target} is an operation");
        assert_eq!(
            link["requestBody"]["processId"],
            "{$request.body#/processId}"
        );
    }
    for name in ["describe", "history"] {
        assert_eq!(
            links[name]["requestBody"]["processExecutionId"],
            "{$response.body#/processExecutionId}"
        );
    }
}

#[test]
fn history_events_are_typed_by_event_type() {
    let doc = doc();
    let schemas = &doc["components"]["schemas"];
    let names: Vec<&str> = schemas["HistoryEventType"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let all: Vec<&str> = HistoryEventType::ALL.iter().map(|t| t.as_str()).collect();
    assert_eq!(names, all);
    let event = &schemas["HistoryEvent"];
    assert_eq!(
        event["oneOf"].as_array().unwrap().len(),
        HistoryEventType::ALL.len()
    );
    assert_eq!(event["discriminator"]["propertyName"], "eventType");
    for event_type in HistoryEventType::ALL {
        let name = history::event_schema(event_type);
        let branch = &schemas[&name];
        assert_eq!(
            branch["properties"]["eventType"]["enum"],
            serde_json::json!([event_type.as_str()])
        );
        let details = branch["properties"]["details"]["$ref"].as_str().unwrap();
        let details = details.rsplit('/').next().unwrap();
        assert_eq!(details, event_type.details_schema());
        assert!(schemas[details].is_object(), "{details} is a component");
        assert_eq!(
            event["discriminator"]["mapping"][event_type.as_str()],
            format!("#/components/schemas/{name}")
        );
    }
    assert_eq!(
        history::event_schema(HistoryEventType::RpcCompleted),
        "RpcCompletedEvent"
    );
}

#[test]
fn limits_in_the_schema_are_those_enforced() {
    let limits = Limits {
        max_page_size: 7,
        ..Limits::default()
    };
    let doc: Value = serde_json::from_str(&document_json(&limits, 42)).unwrap();
    let schemas = &doc["components"]["schemas"];
    let wait = &schemas["ProcessExecutionWaitForCompletionRequest"]["properties"];
    assert_eq!(wait["timeoutSeconds"]["maximum"], 42);
    assert_eq!(
        schemas["ProcessExecutionListRequest"]["properties"]["pageSize"]["maximum"],
        7
    );
    let attempt = &schemas["Context"]["properties"]["attempt"];
    assert_eq!(
        (&attempt["minimum"], &attempt["maximum"]),
        (&serde_json::json!(1), &serde_json::json!(i32::MAX))
    );
    let rpc = &schemas["ProcessExecutionRpcRequest"]["properties"]["timeoutSeconds"];
    assert_eq!((&rpc["minimum"], &rpc["maximum"]), (&1.into(), &60.into()));
    let notify = &schemas["InternalNotifyRequest"]["properties"]["closedProcessExecutionIds"];
    assert_eq!(notify["maxItems"], crate::limits::MAX_NOTIFY_IDS);
    let outcomes = &schemas["InternalNotifyRequest"]["properties"]["closedOutcomes"];
    assert_eq!(outcomes["maxItems"], crate::limits::MAX_NOTIFY_IDS);
    use crate::limits::worker;
    let props = |s: &str| schemas[s]["properties"].clone();
    assert_eq!(
        props("TimerCommand")["delayInSeconds"]["maximum"],
        worker::MAX_TIMER_SECONDS
    );
    assert_eq!(
        props("LocalQueueCommand")["count"]["maximum"],
        worker::MAX_QUEUE_COMMAND_COUNT
    );
    assert_eq!(
        props("StateDecision")["nextStates"]["maxItems"],
        worker::MAX_NEXT_STATES
    );
    assert_eq!(
        props("ProcessRpcWorkerResponse")["appendNextStates"]["maxItems"],
        worker::MAX_NEXT_STATES
    );
}

#[test]
fn the_payload_rule_and_the_defaults_are_stated() {
    let doc = doc();
    let schemas = &doc["components"]["schemas"];
    let encoded = schemas["EncodedObject"]["description"].as_str().unwrap();
    for phrase in [
        "exactly `\"json\"`",
        "not a nested JSON value",
        "leaving the payload field out",
    ] {
        assert!(encoded.contains(phrase), "EncodedObject: {phrase}");
    }
    assert_eq!(
        schemas["EncodedObject"]["example"]["data"],
        "{\"email\":\"a@b.c\"}"
    );
    for (schema, phrase) in [
        (
            "ProcessIdReusePolicy",
            "Absent means\n`ALLOW_IF_NO_RUNNING`",
        ),
        ("CommandWaitingType", "`ANY_OF_COMPLETION` (the default)"),
        ("RetryPolicy", "retry forever"),
        ("RetryPolicy", "keeps its process RUNNING"),
        ("StateDecision", "neither"),
        ("WorkerErrorResponse", "can never\nsucceed"),
        ("WorkerErrorType", "`NOT_IMPLEMENTED`"),
        ("RetryPolicy", "parks the call after one attempt"),
    ] {
        let text = schemas[schema]["description"].as_str().unwrap_or_default();
        assert!(text.contains(phrase), "{schema}: {phrase:?} in {text:?}");
    }
    let count = &schemas["LocalQueueCommand"]["properties"]["count"]["description"];
    assert!(count.as_str().unwrap().contains("0 means 1"));
}

/// A property a reader may leave out either admits null (absent reads as null) or states
/// its `default`, the value the service takes when it is absent: generated SDK types
/// take their defaults from the document.
#[test]
fn every_optional_property_is_nullable_or_states_its_default() {
    let doc = doc();
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let mut missing = Vec::new();
    for (name, schema) in schemas {
        let Some(properties) = schema["properties"].as_object() else {
            continue;
        };
        let required: BTreeSet<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().map(|n| n.as_str().unwrap()).collect())
            .unwrap_or_default();
        for (property, property_schema) in properties {
            let nullable = match &property_schema["type"] {
                Value::Array(types) => types.contains(&"null".into()),
                _ => property_schema["oneOf"]
                    .as_array()
                    .is_some_and(|branches| branches.iter().any(|b| b["type"] == "null")),
            };
            if !required.contains(property.as_str())
                && !nullable
                && property_schema.get("default").is_none()
            {
                missing.push(format!("{name}.{property}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "add #[schema(default = ...)] (serde's default) to {missing:?}"
    );
    let loading = &schemas["GlobalAttributeLoading"]["properties"];
    assert_eq!(loading["lockType"]["default"], "NO_LOCK");
    assert_eq!(loading["columns"]["default"], serde_json::json!([]));
    let wait_until = &schemas["AsyncStateWaitUntilResponse"]["properties"];
    assert_eq!(
        wait_until["commandRequest"]["default"],
        serde_json::json!({"waitingType": "ANY_OF_COMPLETION", "timerCommands": [],
                           "localQueueCommands": []})
    );
}
