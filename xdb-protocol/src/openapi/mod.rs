//! The OpenAPI 3.1 document, generated from the wire types.
//!
//! `openapi.json` at the crate root is this document as committed, with the default
//! [`Limits`]; a test keeps the two identical, so a reviewer sees every contract change in
//! the diff. The API service serves (and validates requests against) the document with
//! the limits it is configured with.
//!
//! The derive gives the paths and schemas; the modules here add what the types cannot
//! say: the request limits (`limits`), every error response by sub-type (`errors`), the
//! security schemes (`security`), the worker paths' own server and headers (`worker`),
//! the links that follow a started process (`links`) and the typed history (`history`).

mod errors;
mod history;
mod limits;
mod links;
mod operators;
mod security;
mod worker;

#[cfg(test)]
mod tests;

pub use limits::{
    HTTP_URL, MAX_REQUEST_ID_CHARS, NO_CONTROL_CHARACTERS, REQUEST_ID, SQL_IDENTIFIER,
    SQL_TABLE_NAME,
};

use utoipa::OpenApi;

use crate::limits::{Limits, DEFAULT_MAX_WAIT_SECONDS};

/// Operation ids, which links and tests refer to.
pub mod operation_ids {
    pub const START: &str = "start";
    pub const STOP: &str = "stop";
    pub const DESCRIBE: &str = "describe";
    pub const LIST: &str = "list";
    pub const COUNT: &str = "count";
    pub const HISTORY: &str = "history";
    pub const PUBLISH_TO_LOCAL_QUEUE: &str = "publish_to_local_queue";
    pub const RPC: &str = "rpc";
    pub const WAIT_FOR_COMPLETION: &str = "wait_for_completion";
    pub const STATES: &str = "states";
    pub const RETRY_NOW: &str = "retry_now";
    pub const GIVE_UP: &str = "give_up";
    pub const PAUSE: &str = "pause";
    pub const RESUME: &str = "resume";
    pub const REPRIORITIZE: &str = "reprioritize";
    pub const RESET: &str = "reset";
    pub const INTERNAL_NOTIFY: &str = "internal_notify";
    pub const CONSOLE_ATTRIBUTES: &str = "console_attributes";
    pub const DEFINITIONS_REGISTER: &str = "definitions_register";
    pub const DEFINITIONS_LIST: &str = "definitions_list";
    pub const DEFINITIONS_DESCRIBE: &str = "definitions_describe";
    pub const DEPLOYMENTS_LIST: &str = "deployments_list";
    pub const DEPLOYMENTS_SET_CURRENT: &str = "deployments_set_current";
    pub const DEPLOYMENTS_MOVE: &str = "deployments_move";
    pub const BATCH_START: &str = "batch_start";
    pub const BATCH_LIST: &str = "batch_list";
    pub const BATCH_DESCRIBE: &str = "batch_describe";
    pub const BATCH_CANCEL: &str = "batch_cancel";
    pub const SCHEDULE_CREATE: &str = "schedule_create";
    pub const SCHEDULE_UPDATE: &str = "schedule_update";
    pub const SCHEDULE_PAUSE: &str = "schedule_pause";
    pub const SCHEDULE_RESUME: &str = "schedule_resume";
    pub const SCHEDULE_TRIGGER: &str = "schedule_trigger";
    pub const SCHEDULE_BACKFILL: &str = "schedule_backfill";
    pub const SCHEDULE_DELETE: &str = "schedule_delete";
    pub const SCHEDULE_LIST: &str = "schedule_list";
    pub const SCHEDULE_DESCRIBE: &str = "schedule_describe";
    pub const SCHEDULE_HISTORY: &str = "schedule_history";
    pub const FLOW_LIMITS_SET: &str = "flow_limits_set";
    pub const FLOW_LIMITS_LIST: &str = "flow_limits_list";
    pub const FLOW_LIMITS_HISTORY: &str = "flow_limits_history";
}

/// Error responses are added by `errors`, from the sub-types each operation can answer.
#[allow(dead_code)]
mod operations {
    use crate::*;

    /// Start a process execution
    ///
    /// Writes the execution, its first state and the business row's initial columns in
    /// one transaction; the async service then calls the worker. The response links to
    /// the operations that follow the new execution.
    #[utoipa::path(post, path = "/api/v1/xdb/service/process-execution/start", tag = "service",
        request_body = ProcessExecutionStartRequest,
        responses((status = 200, body = ProcessExecutionStartResponse, description = "started")))]
    fn start() {}

    /// Stop the current execution of a process id
    ///
    /// Closes it as TERMINATED or FAILED, ending every state and timer.
    #[utoipa::path(post, path = "/api/v1/xdb/service/process-execution/stop", tag = "service",
        request_body = ProcessExecutionStopRequest,
        responses((status = 200, body = EmptyResponse, description = "stopped")))]
    fn stop() {}

    /// Describe an execution
    #[utoipa::path(post, path = "/api/v1/xdb/service/process-execution/describe", tag = "service",
        request_body = ProcessExecutionDescribeRequest,
        responses((status = 200, body = ProcessExecutionDescribeResponse,
                   description = "the execution")))]
    fn describe() {}

    /// List executions, newest first
    #[utoipa::path(post, path = "/api/v1/xdb/service/process-execution/list", tag = "service",
        request_body = ProcessExecutionListRequest,
        responses((status = 200, body = ProcessExecutionListResponse, description = "one page")))]
    fn list() {}

    /// Count executions, exactly, optionally per group
    ///
    /// One statement over the executions (and, for `column` conditions or groups, the
    /// business rows), bounded by the service's `api.query_timeout_ms`.
    #[utoipa::path(post, path = "/api/v1/xdb/service/process-execution/count", tag = "service",
        request_body = ProcessExecutionCountRequest,
        responses((status = 200, body = ProcessExecutionCountResponse, description = "the counts")))]
    fn count() {}

    /// The history of an execution, oldest event first
    #[utoipa::path(post, path = "/api/v1/xdb/service/process-execution/history", tag = "service",
        request_body = ProcessExecutionHistoryRequest,
        responses((status = 200, body = ProcessExecutionHistoryResponse,
                   description = "the events")))]
    fn history() {}

    /// Publish messages to the current execution's local queues
    #[utoipa::path(post, path = "/api/v1/xdb/service/process-execution/publish-to-local-queue", tag = "service",
        request_body = PublishToLocalQueueRequest,
        responses((status = 200, body = EmptyResponse, description = "published")))]
    fn publish_to_local_queue() {}

    /// Call an RPC of the current execution
    ///
    /// The worker is called once, synchronously, inside the transaction that holds the
    /// loaded attributes' locks; its writes commit with its answer.
    #[utoipa::path(post, path = "/api/v1/xdb/service/process-execution/rpc", tag = "service",
        request_body = ProcessExecutionRpcRequest,
        responses((status = 200, body = ProcessExecutionRpcResponse,
                   description = "the RPC answered and its writes committed")))]
    fn rpc() {}

    /// Wait until the current execution closes
    ///
    /// A long poll: answers when the execution closes or `timeoutSeconds` passes
    /// (`timedOut`), whichever comes first.
    #[utoipa::path(post, path = "/api/v1/xdb/service/process-execution/wait-for-completion", tag = "service",
        request_body = ProcessExecutionWaitForCompletionRequest,
        responses((status = 200, body = ProcessExecutionWaitForCompletionResponse,
                   description = "closed, or timed out waiting")))]
    fn wait_for_completion() {}

    /// The state executions of an execution: why it is (not) progressing
    ///
    /// Each state's status, the call it waits on (attempt, due time, running, parked or
    /// paused), its last failure, what its commands wait for (timers with due times,
    /// queues with the messages queued) and their results so far.
    #[utoipa::path(post, path = "/api/v1/xdb/service/process-execution/states", tag = "operate",
        request_body = ProcessExecutionStatesRequest,
        responses((status = 200, body = ProcessExecutionStatesResponse,
                   description = "the states")))]
    fn states() {}

    /// Run waiting retries now
    ///
    /// Calls waiting for their retry backoff become due at once (attempt counts kept) and
    /// parked tasks are released. 409 `CONTROL_NOT_APPLICABLE` when nothing waits.
    #[utoipa::path(post, path = "/api/v1/xdb/service/process-execution/retry-now", tag = "operate",
        request_body = ProcessExecutionControlRequest,
        responses((status = 200, body = ProcessExecutionControlResponse,
                   description = "the states now due")))]
    fn retry_now() {}

    /// Give up on failing states now
    ///
    /// A state whose call failed and waits for its next attempt (or is parked) goes to its
    /// failure recovery without the remaining attempts: the process fails, or proceeds to
    /// the configured state. 409 `CONTROL_NOT_APPLICABLE` when no state is failing or its
    /// attempt is being called right now.
    #[utoipa::path(post, path = "/api/v1/xdb/service/process-execution/give-up", tag = "operate",
        request_body = ProcessExecutionControlRequest,
        responses((status = 200, body = ProcessExecutionControlResponse,
                   description = "the states given up")))]
    fn give_up() {}

    /// Pause an execution
    ///
    /// Nothing of it is called until it resumes: calls and timers that fall due wait
    /// (a call already running finishes). Messages and RPCs are still accepted.
    #[utoipa::path(post, path = "/api/v1/xdb/service/process-execution/pause", tag = "operate",
        request_body = ProcessExecutionControlRequest,
        responses((status = 200, body = ProcessExecutionControlResponse,
                   description = "paused")))]
    fn pause() {}

    /// Resume a paused execution
    ///
    /// What fell due while it was paused (calls, timers) runs now.
    #[utoipa::path(post, path = "/api/v1/xdb/service/process-execution/resume", tag = "operate",
        request_body = ProcessExecutionControlRequest,
        responses((status = 200, body = ProcessExecutionControlResponse,
                   description = "resumed")))]
    fn resume() {}

    /// Change an execution's priority or fairness key
    ///
    /// In one transaction: the execution's priority, fairness key or weight
    /// (`reprioritize`; a field left out stays) and those of its waiting tasks, so they
    /// are claimed in the new order, as are the tasks it writes later. A call running
    /// now finishes as it is. Recorded as `REPRIORITIZED` with the order before and
    /// after. In Pulsar mode the reordered tasks travel again as change events, placed
    /// by the new order. 409 `CONTROL_NOT_APPLICABLE` for a weight without a key.
    #[utoipa::path(post, path = "/api/v1/xdb/service/process-execution/reprioritize",
        tag = "operate",
        request_body = ProcessExecutionControlRequest,
        responses((status = 200, body = ProcessExecutionControlResponse,
                   description = "reprioritized")))]
    fn reprioritize() {}

    /// Reset an execution to a state
    ///
    /// Restarts the execution from `stateId` with `stateInput` (Temporal's reset). On a
    /// running execution, in one transaction: its open state executions are aborted,
    /// their calls, timers and waits cancelled (messages queued in its local queues
    /// stay), and the state starts; the process timeout keeps running. On a closed one
    /// (completed, failed, timed out, terminated), a new execution of the same process id
    /// starts at the state, linked to the old one (`resetFrom` in its `PROCESS_STARTED`
    /// and `PROCESS_RESET` events), with the old one's local attributes and the same
    /// business row; the old history is left as it was. A `PROCESS_RESET` event records
    /// the reset. `stateConfig` absent: the state's options as its registered definition
    /// declares them, else the defaults. 400 for a state the registered definition does
    /// not have; 409 `CONTROL_NOT_APPLICABLE` for a closed execution that is not the
    /// latest of its process id while the latest still runs.
    #[utoipa::path(post, path = "/api/v1/xdb/service/process-execution/reset", tag = "operate",
        request_body = ProcessExecutionResetRequest,
        responses((status = 200, body = ProcessExecutionResetResponse,
                   description = "the execution that continues from the state")))]
    fn reset() {}

    /// An execution's local attributes and its business row (for the web console)
    ///
    /// Every local attribute the execution keeps, and every column of the row of the
    /// business table its global attributes are (null when the row does not exist), as
    /// the database has them now. Read without locks.
    #[utoipa::path(post, path = "/api/v1/xdb/console/process-execution/attributes", tag = "console",
        request_body = ProcessExecutionAttributesRequest,
        responses((status = 200, body = ProcessExecutionAttributesResponse,
                   description = "the attributes")))]
    fn console_attributes() {}

    /// Register a worker deployment's process definitions
    ///
    /// Idempotent: a definition equal to the current one writes nothing. Each process
    /// type's table and columns are checked against the database first; a definition
    /// that removes states running executions wait in is refused unless `force`. Once a
    /// type is registered, starts, publishes and RPCs are checked against it, and a
    /// start may leave out `workerUrl` (the deployment's is used).
    #[utoipa::path(post, path = "/api/v1/xdb/service/definitions/register", tag = "definitions",
        request_body = RegisterDefinitionsRequest,
        responses((status = 200, body = RegisterDefinitionsResponse,
                   description = "registered (or current already)")))]
    fn definitions_register() {}

    /// The current definition of every registered process type
    #[utoipa::path(post, path = "/api/v1/xdb/service/definitions/list", tag = "definitions",
        request_body = DefinitionsListRequest,
        responses((status = 200, body = DefinitionsListResponse, description = "the definitions")))]
    fn definitions_list() {}

    /// One process type's definition and the history of its revisions
    #[utoipa::path(post, path = "/api/v1/xdb/service/definitions/describe", tag = "definitions",
        request_body = DefinitionDescribeRequest,
        responses((status = 200, body = DefinitionDescribeResponse, description = "the definition")))]
    fn definitions_describe() {}

    /// Every worker deployment, the types it serves and the executions running on it
    ///
    /// A deployment current for no type and running no execution is drained.
    #[utoipa::path(post, path = "/api/v1/xdb/service/deployments/list", tag = "definitions",
        request_body = DeploymentsListRequest,
        responses((status = 200, body = DeploymentsListResponse, description = "the deployments")))]
    fn deployments_list() {}

    /// Make a deployment current again
    ///
    /// For every type it registered, its last definition becomes a new revision, so
    /// starts naming no worker go to it (a rollback, or the end of a canary).
    #[utoipa::path(post, path = "/api/v1/xdb/service/deployments/set-current", tag = "definitions",
        request_body = DeploymentSetCurrentRequest,
        responses((status = 200, body = RegisterDefinitionsResponse, description = "current")))]
    fn deployments_set_current() {}

    /// Move running executions to another deployment
    ///
    /// Each moved execution runs its next worker call on the deployment it is moved to.
    #[utoipa::path(post, path = "/api/v1/xdb/service/deployments/move", tag = "definitions",
        request_body = ExecutionsMoveRequest,
        responses((status = 200, body = ExecutionsMoveResponse, description = "moved")))]
    fn deployments_move() {}

    /// Start a batch operation
    ///
    /// One operation on every execution the selection matches, at most once each, at
    /// `ratePerSecond`, driven by the async service and resumed after any crash. Preview
    /// the selection with `count` first.
    #[utoipa::path(post, path = "/api/v1/xdb/service/batch/start", tag = "batch",
        request_body = BatchStartRequest,
        responses((status = 200, body = BatchStartResponse, description = "started")))]
    fn batch_start() {}

    /// List batch operations, newest first
    #[utoipa::path(post, path = "/api/v1/xdb/service/batch/list", tag = "batch",
        request_body = BatchListRequest,
        responses((status = 200, body = BatchListResponse, description = "one page")))]
    fn batch_list() {}

    /// Describe a batch operation: its progress and what it skipped or failed on
    #[utoipa::path(post, path = "/api/v1/xdb/service/batch/describe", tag = "batch",
        request_body = BatchDescribeRequest,
        responses((status = 200, body = BatchDescribeResponse, description = "the batch")))]
    fn batch_describe() {}

    /// Cancel a running batch operation
    ///
    /// It stops within the page of executions in hand (about a second's worth at its
    /// rate); what it did stays done, and counted.
    #[utoipa::path(post, path = "/api/v1/xdb/service/batch/cancel", tag = "batch",
        request_body = BatchCancelRequest,
        responses((status = 200, body = BatchDescribeResponse, description = "cancelled")))]
    fn batch_cancel() {}

    /// Create a schedule
    ///
    /// Starts `start.processType` on a cron expression in a time zone or on a fixed
    /// interval. Each firing's process id is the schedule id and the firing's nominal
    /// time, so no firing starts twice. A bad spec (an invalid cron expression, an unknown
    /// time zone, an interval of 0) is a 400 naming the field, and creates nothing.
    #[utoipa::path(post, path = "/api/v1/xdb/service/schedule/create", tag = "schedule",
        request_body = ScheduleCreateRequest,
        responses((status = 200, body = ScheduleDescribeResponse, description = "created")))]
    fn schedule_create() {}

    /// Replace a schedule's spec, start template and policies
    ///
    /// Firings already recorded keep what they were recorded with; the next one follows
    /// the new spec from now on.
    #[utoipa::path(post, path = "/api/v1/xdb/service/schedule/update", tag = "schedule",
        request_body = ScheduleUpdateRequest,
        responses((status = 200, body = ScheduleDescribeResponse, description = "updated")))]
    fn schedule_update() {}

    /// Pause a schedule: no firing is recorded until it is resumed
    #[utoipa::path(post, path = "/api/v1/xdb/service/schedule/pause", tag = "schedule",
        request_body = ScheduleControlRequest,
        responses((status = 200, body = ScheduleDescribeResponse, description = "paused")))]
    fn schedule_pause() {}

    /// Resume a paused schedule
    ///
    /// Firings missed while paused run when within the catch-up window.
    #[utoipa::path(post, path = "/api/v1/xdb/service/schedule/resume", tag = "schedule",
        request_body = ScheduleControlRequest,
        responses((status = 200, body = ScheduleDescribeResponse, description = "resumed")))]
    fn schedule_resume() {}

    /// Fire a schedule now, whatever its spec and paused flag say
    #[utoipa::path(post, path = "/api/v1/xdb/service/schedule/trigger", tag = "schedule",
        request_body = ScheduleTriggerRequest,
        responses((status = 200, body = ScheduleTriggerResponse, description = "recorded")))]
    fn schedule_trigger() {}

    /// Run the firings a schedule's spec had in a past range
    #[utoipa::path(post, path = "/api/v1/xdb/service/schedule/backfill", tag = "schedule",
        request_body = ScheduleBackfillRequest,
        responses((status = 200, body = ScheduleBackfillResponse, description = "recorded")))]
    fn schedule_backfill() {}

    /// Delete a schedule and its firings' records
    ///
    /// Executions it started run on; firings not started yet are dropped.
    #[utoipa::path(post, path = "/api/v1/xdb/service/schedule/delete", tag = "schedule",
        request_body = ScheduleControlRequest,
        responses((status = 200, body = EmptyResponse, description = "deleted")))]
    fn schedule_delete() {}

    /// List schedules by id
    #[utoipa::path(post, path = "/api/v1/xdb/service/schedule/list", tag = "schedule",
        request_body = ScheduleListRequest,
        responses((status = 200, body = ScheduleListResponse, description = "one page")))]
    fn schedule_list() {}

    /// Describe a schedule: its next 10 fire times and its latest firings
    #[utoipa::path(post, path = "/api/v1/xdb/service/schedule/describe", tag = "schedule",
        request_body = ScheduleDescribeRequest,
        responses((status = 200, body = ScheduleDescribeResponse, description = "the schedule")))]
    fn schedule_describe() {}

    /// The audit history of schedules: who created, changed, paused, resumed, triggered,
    /// backfilled or deleted each one, and why
    ///
    /// A deleted schedule's changes stay.
    #[utoipa::path(post, path = "/api/v1/xdb/service/schedule/history", tag = "schedule",
        request_body = ScheduleHistoryRequest,
        responses((status = 200, body = ScheduleHistoryResponse, description = "one page, newest first")))]
    fn schedule_history() {}

    /// Set or clear an operator's override of a process type's or a state's flow limits
    ///
    /// The override wins over what the definition declares until it is cleared
    /// (`override` absent or `null`). Async instances apply a change within about a
    /// second. Kept in the limits' audit history.
    #[utoipa::path(post, path = "/api/v1/xdb/service/flow-limits/set", tag = "flow-limits",
        request_body = FlowLimitsSetRequest,
        responses((status = 200, body = FlowLimitsEntry, description = "the limits now")))]
    fn flow_limits_set() {}

    /// List the flow limits declared and overridden, with those in force
    #[utoipa::path(post, path = "/api/v1/xdb/service/flow-limits/list", tag = "flow-limits",
        request_body = FlowLimitsListRequest,
        responses((status = 200, body = FlowLimitsListResponse, description = "every entry")))]
    fn flow_limits_list() {}

    /// The audit history of flow limits: every registration's and operator's change
    #[utoipa::path(post, path = "/api/v1/xdb/service/flow-limits/history", tag = "flow-limits",
        request_body = FlowLimitsHistoryRequest,
        responses((status = 200, body = FlowLimitsHistoryResponse, description = "one page, newest first")))]
    fn flow_limits_history() {}

    /// Wake a service instance (between XDB's own services)
    ///
    /// Served on the instances' internal listeners only (never on the API service's
    /// public listener), and only on databases without LISTEN/NOTIFY (MySQL). Each call
    /// must be signed with the cluster's internal secret.
    #[utoipa::path(post, path = "/api/v1/xdb/internal/notify", tag = "internal",
        request_body = InternalNotifyRequest,
        responses((status = 200, body = EmptyResponse, description = "noted")))]
    fn internal_notify() {}

    /// A state's waitUntil (served by the worker)
    #[utoipa::path(post, path = "/api/v1/xdb/worker/async-state/wait-until", tag = "worker",
        request_body = AsyncStateWaitUntilRequest,
        responses((status = 200, body = AsyncStateWaitUntilResponse,
                   description = "what the state waits for")))]
    fn worker_wait_until() {}

    /// A state's execute (served by the worker)
    #[utoipa::path(post, path = "/api/v1/xdb/worker/async-state/execute", tag = "worker",
        request_body = AsyncStateExecuteRequest,
        responses((status = 200, body = AsyncStateExecuteResponse,
                   description = "the state's decision")))]
    fn worker_execute() {}

    /// An RPC (served by the worker)
    #[utoipa::path(post, path = "/api/v1/xdb/worker/process/rpc", tag = "worker",
        request_body = ProcessRpcWorkerRequest,
        responses((status = 200, body = ProcessRpcWorkerResponse,
                   description = "the RPC's output and writes")))]
    fn worker_rpc() {}
}

/// The whole XDB REST contract.
#[derive(OpenApi)]
#[openapi(
    info(title = "XDB", version = "1.0.0", description = include_str!("description.md")),
    servers((url = "/", description = "The XDB API service: the service and internal paths. \
                                       The worker paths name their own server.")),
    paths(operations::start, operations::stop, operations::describe, operations::list,
          operations::count,
          operations::history, operations::publish_to_local_queue, operations::rpc,
          operations::wait_for_completion, operations::states, operations::retry_now,
          operations::give_up, operations::pause, operations::resume,
          operations::reprioritize, operations::reset,
          operations::console_attributes,
          operations::definitions_register, operations::definitions_list,
          operations::definitions_describe, operations::deployments_list,
          operations::deployments_set_current, operations::deployments_move,
          operations::batch_start, operations::batch_list, operations::batch_describe,
          operations::batch_cancel,
          operations::schedule_create, operations::schedule_update,
          operations::schedule_pause, operations::schedule_resume,
          operations::schedule_trigger, operations::schedule_backfill,
          operations::schedule_delete, operations::schedule_list,
          operations::schedule_describe, operations::schedule_history,
          operations::flow_limits_set, operations::flow_limits_list,
          operations::flow_limits_history,
          operations::internal_notify, operations::worker_wait_until,
          operations::worker_execute, operations::worker_rpc),
    components(schemas(
        crate::ApiErrorResponse, crate::ErrorSubType, crate::WorkerErrorResponse,
        crate::WorkerErrorType, crate::TaskParkedReason,
        crate::HistoryEventType, crate::ProcessStartedDetails, crate::ProcessClosedDetails,
        crate::WaitUntilCompletedDetails, crate::ExecuteCompletedDetails,
        crate::StateApiFailureDetails, crate::TimerFiredDetails,
        crate::LocalQueueMessagesPublishedDetails, crate::LocalQueueMessagesConsumedDetails,
        crate::ConsumedMessage,
        crate::RpcCompletedDetails, crate::ControlDetails, crate::TaskParkedDetails,
        crate::ProcessResetDetails, crate::ReprioritizedDetails)),
    tags((name = "service", description = "Client → API service"),
         (name = "operate", description = "Operators: why an execution is not progressing, \
                                           and the controls that unstick it"),
         (name = "definitions", description = "Worker deployments register the process \
                                               types they host; the service checks requests \
                                               against them"),
         (name = "batch", description = "One operation on every execution a filter \
                                         selects, as a durable job"),
         (name = "schedule", description = "A process type started on a cron expression \
                                            or an interval, fired by the async service"),
         (name = "flow-limits", description = "How fast the async service may call a \
                                               process type's worker, declared by \
                                               definitions and overridden by operators"),
         (name = "console", description = "The web console's reads beside the service \
                                           API (served at `/ui`)"),
         (name = "worker", description = "XDB → the user's worker: served by workers (the \
                                          SDKs host them), not by the API service"),
         (name = "internal", description = "Between XDB's own services")),
)]
pub struct ApiDoc;

/// The document with `limits` stated in the request schemas, and `max_wait_seconds` (the
/// service's `api.max_wait_seconds`) as the longest wait-for-completion.
pub fn document(limits: &Limits, max_wait_seconds: u32) -> serde_json::Value {
    let mut doc = ApiDoc::openapi();
    history::apply(&mut doc);
    errors::apply(&mut doc);
    security::apply(&mut doc);
    worker::apply(&mut doc);
    limits::apply(&mut doc, limits, max_wait_seconds);
    let mut doc = serde_json::to_value(&doc).expect("the OpenAPI document serializes");
    links::apply(&mut doc);
    operators::apply(&mut doc);
    crate::canonical_json::with_sorted_keys(doc)
}

/// [`document`] as pretty JSON.
pub fn document_json(limits: &Limits, max_wait_seconds: u32) -> String {
    serde_json::to_string_pretty(&document(limits, max_wait_seconds))
        .expect("the OpenAPI document serializes")
}

/// The document with the default limits, as pretty JSON (the committed `openapi.json`).
pub fn openapi_json() -> String {
    document_json(&Limits::default(), DEFAULT_MAX_WAIT_SECONDS)
}

/// Reads a document fragment written as JSON into utoipa's type (whose structs cannot be
/// built field by field outside utoipa).
fn from_json<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).expect("a well-formed OpenAPI fragment")
}
