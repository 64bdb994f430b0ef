//! Start: claims the process id, writes the execution, its first state and task, and
//! upserts the global-attribute row, in one transaction (or the dialect's one
//! statement, for a first execution that writes no business row).

use uuid::Uuid;
use xdb_engine::decide::{self, DecideError, PreviousExecution};
use xdb_protocol::{ProcessExecutionStartRequest, ProcessExecutionStopType, ProcessStatus};

use crate::receipts::Receipt;
use crate::tables::{
    Announce, AttributeRows, Dialect, Finish, Lane, PlanWriter, ProcessRows, Transaction,
};
use crate::StoreError;

pub(crate) async fn start_process<D: Dialect>(
    store: &D,
    request: &ProcessExecutionStartRequest,
    receipt: Option<&Receipt>,
) -> Result<Uuid, StoreError> {
    // Refuse bad input before touching a row (a too-long id would fail in SQL as a 500).
    decide::validate_start_request(request)?;
    let now = store.database_clock().now();
    let new_id = Uuid::now_v7();
    let rules = store.run_limits().current(store).await?;
    let run_limit = rules.run_limits.get(&request.process_type).cloned();
    let request = rules.apply(request).map_err(DecideError::from)?;
    let request = request.as_ref();
    let run_key = match &run_limit {
        Some(limit) => Some(crate::run_limits::key_of(request, limit).map_err(DecideError::from)?),
        None => None,
    };
    if run_limit.is_none() {
        if let Some(started) = store
            .start_first_execution(request, new_id, now, receipt)
            .await?
        {
            return Ok(started);
        }
    }
    let mut tx = store.begin(Lane::Main).await?;
    let previous = tx.claim_process_id(&request.process_id, new_id).await?;
    let start = decide::start_process(
        request,
        previous.as_ref().map(|p| PreviousExecution {
            id: p.id,
            status: p.status,
        }),
        new_id,
        now,
    )?;

    // The user row before any process row, as in every other transaction.
    if let Some(config) = &start.execution.global_attribute_config {
        tx.upsert_business_row(config, &config.initial_write)
            .await?;
    }
    if let Some(previous) = previous
        .as_ref()
        .filter(|_| start.terminate_previous.is_some())
    {
        let locked = tx.lock_process(previous.id).await?;
        if locked.status == ProcessStatus::Running {
            let plan = decide::stop_process(
                &locked,
                ProcessExecutionStopType::Terminate,
                Some("replaced by a new execution (TERMINATE_IF_RUNNING)"),
                now,
            )?;
            tx.apply_plan(&locked, &plan, now, Announce::NewTasks, None, Finish::Later)
                .await?;
        }
    }
    if previous.is_some() {
        tx.repoint_latest(&request.process_id, new_id).await?;
    }
    tx.insert_execution(&start.execution).await?;
    // A first execution's plan updates no state row: COMMIT may go out with its writes.
    let finish = if previous.is_none() && receipt.is_none() && run_limit.is_none() {
        Finish::WithWrites
    } else {
        Finish::Later
    };
    tx.apply_plan(
        &start.execution,
        &start.plan,
        now,
        Announce::NewTasks,
        None,
        finish,
    )
    .await?;
    if let (Some(limit), Some(key)) = (&run_limit, &run_key) {
        super::run_slots::take_or_queue(&mut tx, &start.execution, key, limit.max, now).await?;
    }
    let answer = xdb_protocol::ProcessExecutionStartResponse {
        process_execution_id: new_id.to_string(),
    };
    super::record_receipt(&mut tx, receipt, &answer, now).await?;
    tx.commit().await?;
    Ok(new_id)
}
