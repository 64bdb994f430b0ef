//! WAIT_UNTIL and EXECUTE tasks: load, call the worker, record the answer or the failure.

use std::future::Future;
use std::time::{Duration, Instant};

use xdb_engine::decide::{AttemptFailure, StateApi};
use xdb_engine::{Task, TaskType};
use xdb_persistence::{Applied, StateCall, StoreError};
use xdb_protocol::{
    paths, AsyncStateExecuteRequest, AsyncStateExecuteResponse, AsyncStateWaitUntilRequest,
    AsyncStateWaitUntilResponse, AttributeWrites, Context, LocalQueueMessage,
};

use xdb_worker_client::WorkerCallError;

use super::HandlerContext;

/// Why an attempt of a state's worker call failed before anything was recorded: the
/// worker failed, timed out or answered something unusable (its writes over the
/// limits, say). The attempt fails, and is retried by the state's policy, unless the
/// worker answered that the call can never succeed.
#[derive(Debug, thiserror::Error)]
#[error("{}", .0.error)]
pub(super) struct AttemptFailed(pub(super) AttemptFailure);

impl AttemptFailed {
    fn retryable(error: impl Into<String>) -> Self {
        Self(AttemptFailure::retryable(error))
    }
}

impl From<WorkerCallError> for AttemptFailed {
    fn from(error: WorkerCallError) -> Self {
        Self(match error.non_retryable() {
            Some((kind, detail)) => AttemptFailure::non_retryable(error.to_string(), kind, detail),
            None => AttemptFailure::retryable(error.to_string()),
        })
    }
}

/// What recording an attempt's answer did.
enum Recorded {
    Done(Result<Applied, StoreError>),
    /// The worker's answer cannot be used: the attempt failed.
    AttemptFailed(AttemptFailure),
}

pub(super) async fn handle(
    context: &HandlerContext,
    task: &Task,
    preloaded: Option<StateCall>,
) -> Result<Applied, StoreError> {
    let call = match preloaded {
        Some(call) => call,
        None => match context.store.load_state_call(task, &context.owner).await? {
            Some(call) => call,
            None => return Ok(Applied::default()),
        },
    };
    if super::set_aside_if_paused(context, task, &call.process).await? {
        return Ok(Applied::default());
    }
    let state_id = &call.state.id.state_id;
    if let Some(delay) =
        super::wait_turn(context, task, &call.process.process_type, state_id).await?
    {
        // Not run: given back for its turn, at the same attempt.
        if context.store.hold_back(task, &context.owner, delay).await? {
            tracing::debug!(task = task.id, ?delay, "held back by a flow limit");
        }
        return Ok(Applied::default());
    }
    let api = if task.task_type == TaskType::WaitUntil {
        StateApi::WaitUntil
    } else {
        StateApi::Execute
    };
    let outcome = match api {
        StateApi::WaitUntil => match call_wait_until(context, task, &call).await {
            Ok(response) => Recorded::Done(
                context
                    .store
                    .complete_wait_until(task, &context.owner, &call, &response)
                    .await,
            ),
            Err(failure) => Recorded::AttemptFailed(failure.0),
        },
        StateApi::Execute => match call_execute(context, task, &call).await {
            Ok(response) => Recorded::Done(
                context
                    .store
                    .complete_execute(task, &context.owner, &call, &response)
                    .await,
            ),
            Err(failure) => Recorded::AttemptFailed(failure.0),
        },
    };
    match outcome {
        Recorded::AttemptFailed(failure) => failed(context, task, &call, api, &failure).await,
        // The engine refused the answer (a next state the process does not have, say), or
        // the user's table refused its writes: failures of this attempt too.
        Recorded::Done(Err(StoreError::Decide(error))) => {
            let failure = AttemptFailure::retryable(error.to_string());
            failed(context, task, &call, api, &failure).await
        }
        Recorded::Done(Err(StoreError::AppDatabase(error))) => {
            failed(context, task, &call, api, &AttemptFailure::retryable(error)).await
        }
        Recorded::Done(other) => other,
    }
}

/// Calls the worker's waitUntil for `call` (as `task`'s attempt).
async fn call_wait_until(
    context: &HandlerContext,
    task: &Task,
    call: &StateCall,
) -> Result<AsyncStateWaitUntilResponse, AttemptFailed> {
    let worker_context = worker_context(call, task, StateApi::WaitUntil);
    let timeout = api_timeout(context, call, StateApi::WaitUntil);
    let key = worker_context.idempotency_key.clone();
    let request = AsyncStateWaitUntilRequest {
        context: worker_context,
        process_type: call.process.process_type.clone(),
        state_id: call.state.id.state_id.clone(),
        state_input: call.state.input.clone(),
        attributes: call.attributes.clone(),
    };
    let answer = context.workers.call::<_, AsyncStateWaitUntilResponse>(
        &call.process.worker_url,
        paths::WORKER_WAIT_UNTIL,
        &request,
        timeout,
        &key,
    );
    let response = timed(context, call, StateApi::WaitUntil, answer)
        .await
        .map_err(AttemptFailed::from)?;
    check_writes(context, &response)?;
    Ok(response)
}

/// Calls the worker's execute for `call` (as `task`'s attempt): an unusable answer, or
/// one whose writes are over the limits, is a failure of the attempt.
pub(super) async fn call_execute(
    context: &HandlerContext,
    task: &Task,
    call: &StateCall,
) -> Result<AsyncStateExecuteResponse, AttemptFailed> {
    let worker_context = worker_context(call, task, StateApi::Execute);
    let timeout = api_timeout(context, call, StateApi::Execute);
    let key = worker_context.idempotency_key.clone();
    let request = AsyncStateExecuteRequest {
        context: worker_context,
        process_type: call.process.process_type.clone(),
        state_id: call.state.id.state_id.clone(),
        state_input: call.state.input.clone(),
        command_results: call
            .state
            .command_progress
            .as_ref()
            .zip(call.state.command_request.as_ref())
            .map(|(progress, request)| progress.to_results(request))
            .unwrap_or_default(),
        attributes: call.attributes.clone(),
    };
    let answer = context.workers.call::<_, AsyncStateExecuteResponse>(
        &call.process.worker_url,
        paths::WORKER_EXECUTE,
        &request,
        timeout,
        &key,
    );
    let response = timed(context, call, StateApi::Execute, answer)
        .await
        .map_err(AttemptFailed::from)?;
    check_writes(context, &response)?;
    Ok(response)
}

/// Holds a worker's writes to the value limits; an answer over them fails the attempt.
fn check_writes(context: &HandlerContext, answer: &impl WorkerWrites) -> Result<(), AttemptFailed> {
    let (writes, published) = answer.writes();
    xdb_engine::validation::check_worker_writes(writes, published, &context.limits)
        .map_err(|e| AttemptFailed::retryable(format!("the worker's answer is unusable: {e}")))
}

/// The writes and publications of a state API's answer.
trait WorkerWrites {
    fn writes(&self) -> (&AttributeWrites, &[LocalQueueMessage]);
}

impl WorkerWrites for AsyncStateWaitUntilResponse {
    fn writes(&self) -> (&AttributeWrites, &[LocalQueueMessage]) {
        (&self.writes, &self.publish_to_local_queue)
    }
}

impl WorkerWrites for AsyncStateExecuteResponse {
    fn writes(&self) -> (&AttributeWrites, &[LocalQueueMessage]) {
        (&self.writes, &self.publish_to_local_queue)
    }
}

/// Awaits a worker call, recording its latency and any failure by state.
async fn timed<T>(
    context: &HandlerContext,
    call: &StateCall,
    api: StateApi,
    answer: impl Future<Output = Result<T, WorkerCallError>>,
) -> Result<T, WorkerCallError> {
    let labels = [
        call.process.process_type.as_str(),
        call.state.id.state_id.as_str(),
        api.as_str(),
    ];
    let started = Instant::now();
    let result = answer.await;
    let metrics = &context.metrics;
    metrics
        .worker_call_seconds
        .with_label_values(&labels)
        .observe(started.elapsed().as_secs_f64());
    if result.is_err() {
        metrics.worker_call_errors.with_label_values(&labels).inc();
    }
    result
}

/// Records a failed attempt of `api` for `task`: a retry by policy, or the recovery.
pub(super) async fn failed(
    context: &HandlerContext,
    task: &Task,
    call: &StateCall,
    api: StateApi,
    failure: &AttemptFailure,
) -> Result<Applied, StoreError> {
    match &failure.non_retryable {
        Some(never) => tracing::warn!(
            process_execution_id = %call.process.id,
            state = %call.state.id,
            api = api.as_str(),
            attempt = task.attempt,
            error = failure.error,
            error_type = never.error_type.as_str(),
            "state API attempt failed for good; parking it for an operator"
        ),
        None => tracing::info!(
            process_execution_id = %call.process.id,
            state = %call.state.id,
            api = api.as_str(),
            attempt = task.attempt,
            error = failure.error,
            "state API attempt failed"
        ),
    }
    context
        .store
        .state_api_failed(task, &context.owner, call, api, failure)
        .await
}

fn api_timeout(context: &HandlerContext, call: &StateCall, api: StateApi) -> Duration {
    let configured = match api {
        StateApi::WaitUntil => call.state.config.wait_until_api_timeout_seconds,
        StateApi::Execute => call.state.config.execute_api_timeout_seconds,
    };
    Duration::from_secs(u64::from(
        configured
            .filter(|s| *s > 0)
            .unwrap_or(context.default_api_timeout_seconds),
    ))
}

/// The idempotency key is stable across attempts of one call and unique between calls.
fn worker_context(call: &StateCall, task: &Task, api: StateApi) -> Context {
    let state_execution_id = call.state.id.to_string();
    Context {
        process_id: call.process.process_id.clone(),
        process_execution_id: call.process.id.to_string(),
        process_type: call.process.process_type.clone(),
        idempotency_key: format!(
            "{}/{}/{}",
            call.process.id,
            state_execution_id,
            api.as_str()
        ),
        state_execution_id: Some(state_execution_id),
        attempt: task.attempt.max(1) as u32,
        first_attempt_timestamp_ms: task
            .first_attempt_at
            .map(|t| t.timestamp_millis())
            .unwrap_or_else(|| chrono::Utc::now().timestamp_millis()),
        process_started_timestamp_ms: call.process.start_time.timestamp_millis(),
    }
}
