//! URL paths of the REST API, shared by servers, clients and the SDK.

/// Prefix of every service API path.
pub const SERVICE_PREFIX: &str = "/api/v1/xdb/service/process-execution";
pub const START: &str = "/api/v1/xdb/service/process-execution/start";
pub const STOP: &str = "/api/v1/xdb/service/process-execution/stop";
pub const DESCRIBE: &str = "/api/v1/xdb/service/process-execution/describe";
pub const LIST: &str = "/api/v1/xdb/service/process-execution/list";
pub const HISTORY: &str = "/api/v1/xdb/service/process-execution/history";
pub const PUBLISH_TO_LOCAL_QUEUE: &str =
    "/api/v1/xdb/service/process-execution/publish-to-local-queue";
pub const RPC: &str = "/api/v1/xdb/service/process-execution/rpc";
pub const WAIT_FOR_COMPLETION: &str = "/api/v1/xdb/service/process-execution/wait-for-completion";
pub const STATES: &str = "/api/v1/xdb/service/process-execution/states";
pub const RETRY_NOW: &str = "/api/v1/xdb/service/process-execution/retry-now";
pub const GIVE_UP: &str = "/api/v1/xdb/service/process-execution/give-up";
pub const PAUSE: &str = "/api/v1/xdb/service/process-execution/pause";
pub const RESUME: &str = "/api/v1/xdb/service/process-execution/resume";

/// Prefix of the web console's own reads: client paths like the service's (the same
/// bearer tokens), kept apart because they serve a page, not an SDK.
pub const CONSOLE_PREFIX: &str = "/api/v1/xdb/console/";
pub const CONSOLE_ATTRIBUTES: &str = "/api/v1/xdb/console/process-execution/attributes";

/// Whether `path` is a client path: protected by `security.api_tokens` when set.
pub fn is_client_path(path: &str) -> bool {
    path.starts_with(SERVICE_PREFIX) || path.starts_with(CONSOLE_PREFIX)
}

/// Prefix of every worker API path.
pub const WORKER_PREFIX: &str = "/api/v1/xdb/worker/";
/// Worker API paths, relative to the worker URL given at start.
pub const WORKER_WAIT_UNTIL: &str = "/api/v1/xdb/worker/async-state/wait-until";
pub const WORKER_EXECUTE: &str = "/api/v1/xdb/worker/async-state/execute";
pub const WORKER_RPC: &str = "/api/v1/xdb/worker/process/rpc";

/// Serves the OpenAPI document.
pub const OPENAPI: &str = "/api/v1/xdb/openapi.json";
/// Internal API: wakes the async service when new work was committed.
pub const INTERNAL_NOTIFY: &str = "/api/v1/xdb/internal/notify";
