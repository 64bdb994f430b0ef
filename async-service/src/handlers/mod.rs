//! What the async service does with each kind of task, whatever the task source.

mod process_timeout;
mod state_api;
mod timer;

use std::sync::Arc;

use tracing::Instrument;
use xdb_engine::{Task, TaskType};
use xdb_persistence::{
    trace_context, Applied, SetAside, StateCall, StoreError, TaskSource, Transitions,
};

use xdb_worker_client::WorkerClient;

use crate::metric_definitions::{outcome, AsyncMetrics};

/// Shared by every task handler.
pub struct HandlerContext {
    /// What handlers read before a worker call and commit after it.
    pub store: Arc<dyn Transitions>,
    /// Where the task sources claim and lease tasks.
    pub tasks: Arc<dyn TaskSource>,
    pub workers: WorkerClient,
    pub owner: String,
    pub default_api_timeout_seconds: u32,
    /// What a worker's answer may write and publish.
    pub limits: xdb_protocol::Limits,
    pub(crate) metrics: Arc<AsyncMetrics>,
    /// When a state's worker call may go under the flow limits in force.
    pub(crate) flow: Arc<crate::flow_limits::FlowLimiter>,
}

/// Handles one claimed task to the end: its outcome is committed (or the task is left
/// for its lease to expire, when the database failed).
///
/// The handling is a span continuing the trace the task was created in, and the tasks
/// it creates carry this span on, so a process's states form one trace. `preloaded` is
/// the state call the transaction that created `task` read already
/// (`Applied::continuation_call`), which saves loading it.
pub async fn handle_task(
    context: &HandlerContext,
    task: &Task,
    preloaded: Option<StateCall>,
) -> Result<Applied, StoreError> {
    let span = tracing::info_span!(
        "xdb.task",
        otel.name = %format!("handle {}", task.task_type.as_str()),
        otel.kind = "consumer",
        task.id = task.id,
        task.r#type = task.task_type.as_str(),
        task.attempt = task.attempt,
        process_execution_id = %task.process_execution_id,
        state_execution_id = task.state.as_ref().map(ToString::to_string),
        outcome = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    );
    if let Some(traceparent) = &task.traceparent {
        xdb_telemetry::set_parent_from_traceparent(&span, traceparent);
    }
    let traceparent = xdb_telemetry::traceparent(&span);
    let result = trace_context::scope(traceparent, dispatch(context, task, preloaded))
        .instrument(span.clone())
        .await;
    let outcome = match &result {
        Ok(_) => outcome::OK,
        Err(StoreError::Stale(_)) => outcome::STALE,
        Err(error) if error.is_database() => outcome::DATABASE_ERROR,
        Err(_) => outcome::ERROR,
    };
    span.record("outcome", outcome);
    if matches!(outcome, outcome::DATABASE_ERROR | outcome::ERROR) {
        span.record("otel.status_code", "ERROR");
    }
    context
        .metrics
        .tasks_completed
        .with_label_values(&[task.task_type.as_str(), outcome])
        .inc();
    match result {
        Err(StoreError::Stale(reason)) => {
            tracing::debug!(task = task.id, %reason, "task is stale; dropped");
            Ok(Applied::default())
        }
        other => other,
    }
}

/// Sets `task` aside when its execution (as read) is paused; whether it did. Nothing of
/// a paused execution is called: its tasks wait in `xdb_sys_parked_tasks` until it resumes.
async fn set_aside_if_paused(
    context: &HandlerContext,
    task: &Task,
    process: &xdb_engine::ProcessExecution,
) -> Result<bool, StoreError> {
    if !xdb_persistence::is_held_back(process) {
        return Ok(false);
    }
    let set_aside = context
        .store
        .set_aside(task, &context.owner, &SetAside::Paused)
        .await?;
    if set_aside {
        tracing::debug!(task = task.id, "its execution is paused; task set aside");
    }
    Ok(set_aside)
}

/// Waits here for a state call's turn under the flow limits when it comes soon, and
/// takes its place under a concurrency limit; otherwise says how much later to ask
/// again (the caller gives its task back for then).
async fn wait_turn(
    context: &HandlerContext,
    task: &Task,
    process_type: &str,
    state_id: &str,
) -> Result<Option<std::time::Duration>, StoreError> {
    use crate::flow_limits::Admission;
    match context.flow.admit(process_type, state_id) {
        Admission::Now => {}
        Admission::After(wait) => tokio::time::sleep(wait).await,
        Admission::HoldBack(delay) => return Ok(Some(delay)),
    }
    let slots = context.flow.call_slot_limits(process_type, state_id);
    if slots == xdb_persistence::CallSlotLimits::default() {
        return Ok(None);
    }
    let taken = context
        .store
        .take_call_slot(task, &context.owner, process_type, state_id, slots)
        .await?;
    let wait = context.flow.slot_answer(process_type, state_id, taken);
    Ok((!taken).then_some(wait))
}

async fn dispatch(
    context: &HandlerContext,
    task: &Task,
    preloaded: Option<StateCall>,
) -> Result<Applied, StoreError> {
    match task.task_type {
        TaskType::WaitUntil | TaskType::Execute => {
            state_api::handle(context, task, preloaded).await
        }
        TaskType::Timer => timer::handle(context, task).await,
        TaskType::ProcessTimeout => process_timeout::handle(context, task).await,
    }
}
