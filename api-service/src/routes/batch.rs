//! Batch operations: started here after a count of what they select, run by the async
//! service (`xdb_persistence::BatchStore`).

use std::time::Duration;

use axum::extract::State;
use axum::Json;
use uuid::Uuid;
use xdb_persistence::reads_business_row;
use xdb_persistence::receipts::Receipt;
use xdb_protocol::{
    BatchCancelRequest, BatchDescribeRequest, BatchDescribeResponse, BatchListRequest,
    BatchListResponse, BatchOperation, BatchStartRequest, BatchStartResponse, ErrorSubType,
    ProcessExecutionCountRequest, DEFAULT_BATCH_RATE, MAX_BATCH_FAILURES_SHOWN, MAX_BATCH_RATE,
    MAX_CONTROL_TEXT,
};

use super::publish_to_local_queue::MAX_MESSAGES_PER_REQUEST;
use crate::json::ApiJson;
use crate::{ApiError, AppState};

/// Checks the batch, resolves its business table, counts what it selects (which checks
/// the filter as a count would) and records it for the async service.
pub(crate) async fn start(
    State(state): State<AppState>,
    ApiJson(mut request): ApiJson<BatchStartRequest>,
) -> Result<Json<BatchStartResponse>, ApiError> {
    let retention = Duration::from_secs(state.config.api.request_id_retention_seconds);
    let receipt = Receipt::of_request(
        request.request_id.as_deref(),
        "batch-start",
        &request,
        retention,
    )?;
    let rate = check(&state, &request)?;
    let needs_table = reads_business_row(request.where_.as_ref(), None);
    let table = state
        .definitions
        .query_table(
            needs_table,
            "processType",
            request.process_type.as_deref(),
            request.business_table.as_ref(),
        )
        .await?;
    let count = ProcessExecutionCountRequest {
        process_type: request.process_type.clone(),
        where_: request.where_.clone(),
        business_table: request.business_table.clone(),
        group_by: None,
        explain: false,
    };
    let limit = Duration::from_millis(state.config.api.query_timeout_ms);
    let expected = state
        .store
        .count_matching(&count, table.as_ref(), limit)
        .await?
        .count;
    // The async service reads the same table, however definitions change meanwhile.
    if let Some(table) = &table {
        request.business_table = Some(xdb_protocol::BusinessTableRef {
            table_name: table.table_name.clone(),
            primary_key_column: table.key_column.clone(),
        });
    }
    let started = state
        .batches
        .create_batch(&request, rate, expected, receipt.as_ref())
        .await?;
    // On PostgreSQL the batch's commit woke the batch drivers (its NOTIFY); elsewhere
    // this does, and a disabled notifier does nothing.
    state.async_peers.new_batches();
    tracing::info!(
        batch = %started.batch_id,
        operation = request.operation.as_str(),
        expected,
        "batch started"
    );
    Ok(Json(started))
}

/// The operation's own arguments, and the batch's rate.
fn check(state: &AppState, request: &BatchStartRequest) -> Result<u32, ApiError> {
    let rate = request.rate_per_second.unwrap_or(DEFAULT_BATCH_RATE);
    if !(1..=MAX_BATCH_RATE).contains(&rate) {
        return Err(ApiError::invalid(format!(
            "ratePerSecond: 1 to {MAX_BATCH_RATE} (got {rate})"
        )));
    }
    for (field, text) in [("reason", &request.reason), ("identity", &request.identity)] {
        if text.as_ref().is_some_and(|t| t.len() > MAX_CONTROL_TEXT) {
            return Err(ApiError::invalid(format!(
                "{field}: at most {MAX_CONTROL_TEXT} bytes"
            )));
        }
    }
    let operation = request.operation;
    let publishes = operation == BatchOperation::PublishToLocalQueue;
    if publishes == request.messages.is_empty() {
        return Err(ApiError::invalid(if publishes {
            "messages: a PUBLISH_TO_LOCAL_QUEUE batch needs at least one".to_owned()
        } else {
            format!(
                "messages: only a PUBLISH_TO_LOCAL_QUEUE batch takes them, not {}",
                operation.as_str()
            )
        }));
    }
    if request.messages.len() > MAX_MESSAGES_PER_REQUEST {
        return Err(ApiError::invalid(format!(
            "messages: at most {MAX_MESSAGES_PER_REQUEST}"
        )));
    }
    xdb_engine::validation::check_queue_payloads(
        "messages",
        &request.messages,
        &state.config.limits,
    )
    .map_err(|e| ApiError::invalid(format!("invalid request: {e}")))?;
    let resets = operation == BatchOperation::Reset;
    match &request.reset {
        None if resets => {
            return Err(ApiError::invalid(
                "reset: a RESET batch needs reset.stateId",
            ))
        }
        Some(_) if !resets => return Err(ApiError::invalid("reset: only a RESET batch takes it")),
        Some(reset) => xdb_engine::validation::check_id("reset.stateId", &reset.state_id)
            .map_err(|e| ApiError::invalid(e.to_string()))?,
        None => {}
    }
    let reprioritizes = operation == BatchOperation::Reprioritize;
    match &request.reprioritize {
        Some(_) if !reprioritizes => {
            return Err(ApiError::invalid(
                "reprioritize: only a REPRIORITIZE batch takes it",
            ))
        }
        change if reprioritizes => {
            use xdb_persistence::reprioritize::{check, Refusal};
            if let Err(Refusal::Invalid(field, problem)) = check(change.as_ref()) {
                return Err(ApiError::invalid(format!("{field}: {problem}")));
            }
        }
        _ => {}
    }
    let moves = operation == BatchOperation::MoveToDeployment;
    match (&request.move_to, &request.process_type) {
        (None, _) if moves => {
            return Err(ApiError::invalid(
                "moveTo: a MOVE_TO_DEPLOYMENT batch needs the deployment",
            ))
        }
        (Some(_), None) if moves => {
            return Err(ApiError::invalid(
                "processType: a MOVE_TO_DEPLOYMENT batch moves executions of one type",
            ))
        }
        (Some(_), _) if !moves => {
            return Err(ApiError::invalid(
                "moveTo: only a MOVE_TO_DEPLOYMENT batch takes it",
            ))
        }
        _ => {}
    }
    Ok(rate)
}

pub(crate) async fn list(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<BatchListRequest>,
) -> Result<Json<BatchListResponse>, ApiError> {
    Ok(Json(state.batches.list_batches(&request).await?))
}

pub(crate) async fn describe(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<BatchDescribeRequest>,
) -> Result<Json<BatchDescribeResponse>, ApiError> {
    let batch_id = batch_id(&request.batch_id)?;
    let described = state
        .batches
        .describe_batch(batch_id, MAX_BATCH_FAILURES_SHOWN)
        .await?;
    let (batch, not_done) = described.ok_or_else(|| not_found(&request.batch_id))?;
    Ok(Json(BatchDescribeResponse { batch, not_done }))
}

pub(crate) async fn cancel(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<BatchCancelRequest>,
) -> Result<Json<BatchDescribeResponse>, ApiError> {
    let batch_id = batch_id(&request.batch_id)?;
    for (field, text) in [("reason", &request.reason), ("identity", &request.identity)] {
        if text.as_ref().is_some_and(|t| t.len() > MAX_CONTROL_TEXT) {
            return Err(ApiError::invalid(format!(
                "{field}: at most {MAX_CONTROL_TEXT} bytes"
            )));
        }
    }
    let who = request.identity.as_deref().unwrap_or("an operator");
    let why = request.reason.as_deref().unwrap_or("no reason given");
    let cancelled = state
        .batches
        .cancel_batch(batch_id, &format!("cancelled by {who}: {why}"))
        .await?;
    if cancelled.is_none() {
        return Err(not_found(&request.batch_id));
    }
    let described = state
        .batches
        .describe_batch(batch_id, MAX_BATCH_FAILURES_SHOWN)
        .await?;
    let (batch, not_done) = described.ok_or_else(|| not_found(&request.batch_id))?;
    Ok(Json(BatchDescribeResponse { batch, not_done }))
}

fn batch_id(text: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(text)
        .map_err(|_| ApiError::invalid(format!("batchId: {text:?} is not a batch id")))
}

fn not_found(batch_id: &str) -> ApiError {
    ApiError::new(
        ErrorSubType::BatchNotFound,
        format!("no batch has id {batch_id}"),
    )
}
