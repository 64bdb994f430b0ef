//! Links from a start's answer to the operations that follow the new execution, so a
//! stateful contract test (or a reader) can go from start to describe, history, stop, RPC,
//! publish and wait with the ids the start used and answered. Each link's `requestBody`
//! holds the fields it fixes; a tool fills in the rest.

use serde_json::{json, Value};

use super::operation_ids as ids;
use crate::paths;

const PROCESS_ID: &str = "{$request.body#/processId}";
const EXECUTION_ID: &str = "{$response.body#/processExecutionId}";

/// `(link name, target operation, fixed body fields, description)`.
fn links() -> Vec<(&'static str, &'static str, Value, &'static str)> {
    vec![
        (
            "describe",
            ids::DESCRIBE,
            json!({"processId": PROCESS_ID, "processExecutionId": EXECUTION_ID}),
            "This execution, by its process id and execution id.",
        ),
        (
            "history",
            ids::HISTORY,
            json!({"processId": PROCESS_ID, "processExecutionId": EXECUTION_ID}),
            "This execution's history.",
        ),
        (
            "stop",
            ids::STOP,
            json!({"processId": PROCESS_ID}),
            "Stops the process id's current execution (this one until another starts).",
        ),
        (
            "rpc",
            ids::RPC,
            // A short worker timeout: a tool following the link with a made-up worker
            // URL should not wait a minute on each call.
            json!({"processId": PROCESS_ID, "timeoutSeconds": 5}),
            "Calls an RPC of the process id's current execution.",
        ),
        (
            "publishToLocalQueue",
            ids::PUBLISH_TO_LOCAL_QUEUE,
            json!({"processId": PROCESS_ID}),
            "Publishes to the process id's current execution.",
        ),
        (
            "waitForCompletion",
            ids::WAIT_FOR_COMPLETION,
            json!({"processId": PROCESS_ID}),
            "Waits for the process id's current execution to close.",
        ),
    ]
}

/// Adds the links to the start's 200 response of `doc` (the document as JSON: utoipa's
/// `Link` serializes its fields in snake case, which no OpenAPI tool reads).
pub(super) fn apply(doc: &mut Value) {
    let ok = &mut doc["paths"][paths::START]["post"]["responses"]["200"];
    let Some(ok) = ok.as_object_mut() else {
        return;
    };
    let mut all = serde_json::Map::new();
    for (name, operation_id, body, description) in links() {
        all.insert(
            name.to_string(),
            json!({
                "operationId": operation_id,
                "requestBody": body,
                "description": description,
            }),
        );
    }
    ok.insert("links".to_string(), Value::Object(all));
}
