//! A first execution started in one statement: PostgreSQL's faster form of
//! `crate::operations::start_process` for the usual start (no business row to write).

use chrono::{DateTime, Utc};
use uuid::Uuid;
use xdb_engine::decide;
use xdb_engine::ProcessExecution;
use xdb_protocol::ProcessExecutionStartRequest;

use super::apply_plan::{plan_writes, Announce};
use super::pipeline::{param, Answer, Pipeline};
use super::rows::to_json;
use super::PostgresStore;
use crate::plan_writes::is_plain_first_start;
use crate::receipts::{started_answer, Receipt};
use crate::StoreError;

/// Starts `request` as the first execution of its process id, in one statement (no
/// BEGIN, no COMMIT) committed by the store's batches: the claim of the id answers
/// exactly one row, or the statement writes nothing. `None` when the process id has had
/// an execution, or when the start needs more than one statement (a global-attribute
/// row to upsert first).
pub(crate) async fn start_first_execution(
    store: &PostgresStore,
    request: &ProcessExecutionStartRequest,
    new_id: Uuid,
    now: DateTime<Utc>,
    receipt: Option<&Receipt>,
) -> Result<Option<Uuid>, StoreError> {
    let start = decide::start_process(request, None, new_id, now)?;
    if !is_plain_first_start(&start) {
        return Ok(None);
    }
    let mut claim = Pipeline::default();
    claim.push(
        "INSERT INTO xdb_sys_latest_process_executions (process_id, process_execution_id) \
         VALUES ($1, $2) ON CONFLICT (process_id) DO NOTHING RETURNING 1",
        vec![param(request.process_id.clone()), param(new_id)],
        Answer::Exactly(1),
    );
    if let Some(receipt) = receipt {
        // A receipt of the id already (a repeat): nothing is written, and the generic
        // start meets it again at its commit.
        claim.push(
            "INSERT INTO xdb_sys_request_receipts \
               (request_id, operation, body_hash, answer, batch_id, outcome, created_at) \
             VALUES ($1, $2, $3, $4, $5, 'DONE', $6) ON CONFLICT (request_id) DO NOTHING \
             RETURNING 1",
            vec![
                param(receipt.request_id.clone()),
                param(receipt.operation),
                param(receipt.body_hash.clone()),
                param(started_answer(new_id)),
                param(receipt.batch_id),
                param(now),
            ],
            Answer::Exactly(1),
        );
    }
    let (writes, _) = plan_writes(
        insert_execution(claim, &start.execution),
        &start.execution,
        &start.plan,
        now,
        Announce::NewTasks,
        None,
    );
    match store
        .batches()
        .run(request.process_id.clone(), writes)
        .await
    {
        Ok(_) => Ok(Some(new_id)),
        // The claim found the id taken (its assertion failed): nothing was written.
        Err(StoreError::Stale(_)) => Ok(None),
        Err(error) => Err(error),
    }
}

/// `writes` with the execution's row inserted.
pub(crate) fn insert_execution(mut writes: Pipeline, execution: &ProcessExecution) -> Pipeline {
    let (fairness_key, fairness_weight) =
        crate::columns::fairness_columns(execution.fairness.as_ref());
    writes.push(
        "INSERT INTO xdb_sys_process_executions (id, process_id, process_type, worker_url, \
           status, start_time, timeout_seconds, running_state_executions, \
           state_execution_sequences, global_attribute_config, priority, fairness_key, \
           fairness_weight) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        vec![
            param(execution.id),
            param(execution.process_id.clone()),
            param(execution.process_type.clone()),
            param(execution.worker_url.clone()),
            param(execution.status.as_str()),
            param(execution.start_time),
            param(execution.timeout_seconds),
            param(execution.running_state_executions),
            param(to_json(&execution.state_execution_sequences)),
            param(execution.global_attribute_config.as_ref().map(to_json)),
            param(i32::from(execution.priority)),
            param(fairness_key.to_owned()),
            param(fairness_weight),
        ],
        Answer::Nothing,
    );
    writes
}
