//! The worker paths: served by the user's worker at the `workerUrl` given at start, not
//! by the API service. Each names that server (so contract tools do not send these
//! requests to the service), the headers XDB sends, the answers a worker may give and
//! what XDB does with each.

use serde_json::json;
use utoipa::openapi::{OpenApi, RefOr};

use super::from_json;
use crate::paths;

/// The server variable standing for the worker URL.
pub const WORKER_URL_VARIABLE: &str = "workerUrl";

pub(super) fn apply(doc: &mut OpenApi) {
    for (path, item) in doc.paths.paths.iter_mut() {
        if !path.starts_with(paths::WORKER_PREFIX) {
            continue;
        }
        item.servers = Some(vec![from_json(json!({
            "url": format!("{{{WORKER_URL_VARIABLE}}}"),
            "description": "Your worker, at the `workerUrl` the process was started with \
                            (XDB appends this path to it). Not the API service.",
            "variables": {WORKER_URL_VARIABLE: {
                "default": "http://127.0.0.1:8803",
                "description": "The process's `workerUrl`."
            }}
        }))]);
        let Some(operation) = item.post.as_mut() else {
            continue;
        };
        operation.description = Some(description(path).to_string());
        operation.parameters = Some(from_json(json!([
            {"name": "Idempotency-Key", "in": "header", "required": true,
             "description": "The same as `context.idempotencyKey`: stable across the \
                             attempts of one call.",
             "schema": {"type": "string"}},
            {"name": "traceparent", "in": "header", "required": false,
             "description": "W3C trace context of XDB's client span for this call; continue \
                             it so the worker's spans join the process's trace.",
             "schema": {"type": "string"}},
            {"name": "tracestate", "in": "header", "required": false,
             "description": "W3C trace state, with `traceparent`.",
             "schema": {"type": "string"}}
        ])));
        let responses = &mut operation.responses.responses;
        for (status, text) in [
            (
                "400",
                "The worker refuses the call. With a non-retryable `errorType` \
                 (`UNKNOWN_PROCESS_TYPE`, `UNKNOWN_STATE`, `UNKNOWN_RPC`, \
                 `UNDECODABLE_INPUT`, `NOT_IMPLEMENTED`: see `WorkerErrorType`) the call can \
                 never succeed as the worker stands: a waitUntil or execute is parked after \
                 this one attempt (`TASK_PARKED`, reason `NON_RETRYABLE_WORKER_ERROR`) until \
                 an operator's retry-now or give-up. Otherwise (`INVALID_REQUEST`, a body \
                 the worker cannot read, or no `errorType`) a failure (see `default`).",
            ),
            (
                "401",
                "The worker requires XDB's signature (`X-XDB-Signature`) and it is \
                 missing, wrong or too old. XDB treats it as a failure (see `default`).",
            ),
            (
                "500",
                "User code failed. XDB treats it as a failure (see `default`).",
            ),
            ("default", FAILURE),
        ] {
            responses.insert(status.to_string(), RefOr::T(error_response(text)));
        }
    }
}

/// What XDB does with a failed worker call, whatever the status.
const FAILURE: &str = "Any other status. Apart from the non-retryable `errorType`s of a \
    400 answer, XDB does not distinguish worker statuses: every non-2xx answer (4xx and 5xx \
    alike), a timeout, a refused connection or a 2xx body it cannot use fails the call, and nothing the call asked for is written. A waitUntil or \
    execute attempt is retried by the state's retry policy (by default forever, backing \
    off up to 100 s), recorded as `STATE_API_FAILED` in the history; when the policy gives \
    up, the state's failure recovery applies (`STATE_FAILED`). An RPC is not retried: the \
    client gets 424 `WORKER_API_ERROR`, with the body's `detail` as `workerError`.";

fn error_response(description: &str) -> utoipa::openapi::Response {
    from_json(json!({
        "description": description,
        "content": {"application/json": {"schema": {
            "$ref": "#/components/schemas/WorkerErrorResponse"
        }}}
    }))
}

fn description(path: &str) -> &'static str {
    match path {
        paths::WORKER_WAIT_UNTIL => {
            "XDB calls it when a state with a waitUntil starts. Answer the commands the \
             state waits for (timers, local-queue messages), plus attribute writes and \
             messages to publish, which commit with the answer. At-least-once: a retried \
             attempt has the same `context.idempotencyKey` and a higher `context.attempt`."
        }
        paths::WORKER_EXECUTE => {
            "XDB calls it once a state's commands completed (at once for a state without \
             waitUntil). Answer the decision — next states, or how the thread ends — plus \
             writes and messages, which commit with it. At-least-once, like waitUntil."
        }
        _ => {
            "XDB's API service calls it for a client's RPC, once, synchronously, with the \
             requested attributes loaded (and locked) in the open transaction. Answer the \
             output for the client, plus writes, messages and new threads, which commit \
             with it. Not retried: `context.attempt` is always 1."
        }
    }
}
