//! URL paths of the REST API, shared by servers, clients and the SDK, and the role a
//! bearer token needs for each ([`role_of`]).

use serde::{Deserialize, Serialize};

/// Prefix of every service API path.
pub const SERVICE_PREFIX: &str = "/api/v1/xdb/service/process-execution";
pub const START: &str = "/api/v1/xdb/service/process-execution/start";
pub const STOP: &str = "/api/v1/xdb/service/process-execution/stop";
pub const DESCRIBE: &str = "/api/v1/xdb/service/process-execution/describe";
pub const LIST: &str = "/api/v1/xdb/service/process-execution/list";
pub const COUNT: &str = "/api/v1/xdb/service/process-execution/count";
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
pub const RESET: &str = "/api/v1/xdb/service/process-execution/reset";
pub const REPRIORITIZE: &str = "/api/v1/xdb/service/process-execution/reprioritize";

/// Prefix of every path of the service API (executions and definitions).
pub const SERVICE_API_PREFIX: &str = "/api/v1/xdb/service/";
pub const DEFINITIONS_REGISTER: &str = "/api/v1/xdb/service/definitions/register";
pub const DEFINITIONS_LIST: &str = "/api/v1/xdb/service/definitions/list";
pub const DEFINITIONS_DESCRIBE: &str = "/api/v1/xdb/service/definitions/describe";
pub const DEPLOYMENTS_LIST: &str = "/api/v1/xdb/service/deployments/list";
pub const DEPLOYMENTS_SET_CURRENT: &str = "/api/v1/xdb/service/deployments/set-current";
pub const DEPLOYMENTS_MOVE: &str = "/api/v1/xdb/service/deployments/move";
pub const BATCH_START: &str = "/api/v1/xdb/service/batch/start";
pub const BATCH_LIST: &str = "/api/v1/xdb/service/batch/list";
pub const BATCH_DESCRIBE: &str = "/api/v1/xdb/service/batch/describe";
pub const BATCH_CANCEL: &str = "/api/v1/xdb/service/batch/cancel";
pub const SCHEDULE_CREATE: &str = "/api/v1/xdb/service/schedule/create";
pub const SCHEDULE_UPDATE: &str = "/api/v1/xdb/service/schedule/update";
pub const SCHEDULE_PAUSE: &str = "/api/v1/xdb/service/schedule/pause";
pub const SCHEDULE_RESUME: &str = "/api/v1/xdb/service/schedule/resume";
pub const SCHEDULE_TRIGGER: &str = "/api/v1/xdb/service/schedule/trigger";
pub const SCHEDULE_BACKFILL: &str = "/api/v1/xdb/service/schedule/backfill";
pub const SCHEDULE_DELETE: &str = "/api/v1/xdb/service/schedule/delete";
pub const SCHEDULE_LIST: &str = "/api/v1/xdb/service/schedule/list";
pub const SCHEDULE_DESCRIBE: &str = "/api/v1/xdb/service/schedule/describe";
pub const SCHEDULE_HISTORY: &str = "/api/v1/xdb/service/schedule/history";
pub const FLOW_LIMITS_SET: &str = "/api/v1/xdb/service/flow-limits/set";
pub const FLOW_LIMITS_LIST: &str = "/api/v1/xdb/service/flow-limits/list";
pub const FLOW_LIMITS_HISTORY: &str = "/api/v1/xdb/service/flow-limits/history";

/// Prefix of the web console's own reads: client paths like the service's (the same
/// bearer tokens), kept apart because they serve a page, not an SDK.
pub const CONSOLE_PREFIX: &str = "/api/v1/xdb/console/";
pub const CONSOLE_ATTRIBUTES: &str = "/api/v1/xdb/console/process-execution/attributes";

/// The web console's view of the async service's metrics (the dashboard's figures).
pub const CONSOLE_ASYNC_METRICS: &str = "/ui/metrics/async";

/// Whether `path` is a client path: protected by the bearer tokens when any are set.
pub fn is_client_path(path: &str) -> bool {
    path.starts_with(SERVICE_API_PREFIX) || path.starts_with(CONSOLE_PREFIX)
}

/// What a bearer token may do (`security.tokens`); a token may have several roles.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The operator's view: describe, list, history, states, the console's reads.
    Read,
    /// The operator's controls: retry-now, give-up, pause, resume, reprioritize, reset,
    /// and stop.
    Operate,
    /// What an application does: start, publish to a local queue, RPC, wait.
    Client,
    /// What a worker deployment does: register its process definitions.
    Deploy,
}

impl Role {
    /// Every role, as a token with `security.api_tokens` has them.
    pub const ALL: [Role; 4] = [Role::Read, Role::Operate, Role::Client, Role::Deploy];

    /// The name in the configuration and in error messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Read => "read",
            Role::Operate => "operate",
            Role::Client => "client",
            Role::Deploy => "deploy",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The API service's Prometheus metrics (counts of what the service did).
pub const METRICS: &str = "/metrics";

/// The role a request to `path` needs, or `None` for a path no token guards: health
/// probes (a status, for the orchestrator), the OpenAPI document and the console's static
/// assets (the same for every deployment; they hold no data), the internal notify path
/// (served on the internal listener only, and signed) and unknown paths. The one place
/// that decides who may call what.
pub fn role_of(path: &str) -> Option<Role> {
    match path {
        DESCRIBE
        | LIST
        | COUNT
        | HISTORY
        | STATES
        | CONSOLE_ASYNC_METRICS
        | METRICS
        | DEFINITIONS_LIST
        | DEFINITIONS_DESCRIBE
        | DEPLOYMENTS_LIST
        | BATCH_LIST
        | BATCH_DESCRIBE
        | SCHEDULE_LIST
        | SCHEDULE_DESCRIBE
        | SCHEDULE_HISTORY
        | FLOW_LIMITS_LIST
        | FLOW_LIMITS_HISTORY => Some(Role::Read),
        // A schedule starts processes as a client would, but it is a standing order that
        // runs unattended: those who run the system own it.
        RETRY_NOW | GIVE_UP | PAUSE | RESUME | REPRIORITIZE | RESET | STOP | DEPLOYMENTS_MOVE
        | BATCH_START | BATCH_CANCEL | SCHEDULE_CREATE | SCHEDULE_UPDATE | SCHEDULE_PAUSE
        | SCHEDULE_RESUME | SCHEDULE_TRIGGER | SCHEDULE_BACKFILL | SCHEDULE_DELETE
        | FLOW_LIMITS_SET => Some(Role::Operate),
        START | PUBLISH_TO_LOCAL_QUEUE | RPC | WAIT_FOR_COMPLETION => Some(Role::Client),
        DEFINITIONS_REGISTER | DEPLOYMENTS_SET_CURRENT => Some(Role::Deploy),
        // The console's reads are all views; a new one is guarded from the start.
        _ if path.starts_with(CONSOLE_PREFIX) => Some(Role::Read),
        _ => None,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every client path the OpenAPI document serves, so a new one cannot miss a role.
    fn documented_client_paths() -> Vec<String> {
        let doc: serde_json::Value =
            serde_json::from_str(&crate::openapi::openapi_json()).expect("the document");
        let paths = doc["paths"].as_object().expect("paths");
        paths
            .keys()
            .filter(|path| is_client_path(path))
            .cloned()
            .collect()
    }

    #[test]
    fn every_client_path_has_a_role() {
        let client_paths = documented_client_paths();
        assert!(client_paths.len() >= 15, "{client_paths:?}");
        for path in &client_paths {
            assert!(role_of(path).is_some(), "{path} has no role");
        }
        assert_eq!(role_of(CONSOLE_ATTRIBUTES), Some(Role::Read));
        assert_eq!(role_of(CONSOLE_ASYNC_METRICS), Some(Role::Read));
        assert_eq!(
            role_of(METRICS),
            Some(Role::Read),
            "what the service did is data"
        );
    }

    #[test]
    fn each_role_has_its_paths() {
        let of = |role| {
            let mut paths: Vec<String> = documented_client_paths()
                .into_iter()
                .filter(|path| role_of(path) == Some(role))
                .collect();
            paths.sort();
            paths
        };
        // The last two segments: executions' and definitions' paths share last ones.
        let tail = |path: &str| {
            let mut segments = path.rsplit('/');
            let last = segments.next().unwrap_or_default();
            match segments.next() {
                Some(
                    group @ ("definitions" | "deployments" | "batch" | "schedule" | "flow-limits"),
                ) => {
                    format!("{group}/{last}")
                }
                _ => last.to_string(),
            }
        };
        let names = |role| of(role).iter().map(|p| tail(p)).collect::<Vec<_>>();
        assert_eq!(
            names(Role::Read),
            [
                "attributes",
                "batch/describe",
                "batch/list",
                "definitions/describe",
                "definitions/list",
                "deployments/list",
                "flow-limits/history",
                "flow-limits/list",
                "count",
                "describe",
                "history",
                "list",
                "states",
                "schedule/describe",
                "schedule/history",
                "schedule/list"
            ]
        );
        assert_eq!(
            names(Role::Operate),
            [
                "batch/cancel",
                "batch/start",
                "deployments/move",
                "flow-limits/set",
                "give-up",
                "pause",
                "reprioritize",
                "reset",
                "resume",
                "retry-now",
                "stop",
                "schedule/backfill",
                "schedule/create",
                "schedule/delete",
                "schedule/pause",
                "schedule/resume",
                "schedule/trigger",
                "schedule/update"
            ]
        );
        assert_eq!(
            names(Role::Client),
            [
                "publish-to-local-queue",
                "rpc",
                "start",
                "wait-for-completion"
            ]
        );
        assert_eq!(
            names(Role::Deploy),
            ["definitions/register", "deployments/set-current"]
        );
    }

    #[test]
    fn public_and_internal_paths_need_no_role() {
        for path in [
            OPENAPI,
            INTERNAL_NOTIFY,
            WORKER_WAIT_UNTIL,
            WORKER_EXECUTE,
            WORKER_RPC,
            "/health/live",
            "/health/ready",
            "/ui/",
            "/ui/app.js",
            // A prefix of a guarded path is not that path.
            "/api/v1/xdb/service/process-execution/start/",
        ] {
            assert_eq!(role_of(path), None, "{path}");
        }
    }

    #[test]
    fn roles_read_and_print_in_lower_case() {
        for role in Role::ALL {
            let json = serde_json::to_string(&role).unwrap();
            assert_eq!(json, format!("\"{role}\""));
            assert_eq!(serde_json::from_str::<Role>(&json).unwrap(), role);
        }
        assert!(serde_json::from_str::<Role>("\"admin\"").is_err());
    }
}
