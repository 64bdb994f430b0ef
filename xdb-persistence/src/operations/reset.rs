//! Reset: an operator restarts an execution from a named state, in one transaction
//! (what changes is decided in `xdb_engine::decide::reset`). The execution row is locked
//! first, as every transition locks it, so a reset and a transition of the same
//! execution serialize: the one that comes second finds its state aborted or its task
//! gone, and applies nothing.

use uuid::Uuid;
use xdb_engine::decide::{self, DecideError, ResetRequest};
use xdb_engine::validation::ValidationError;
use xdb_protocol::{
    ProcessExecutionResetRequest, ProcessExecutionResetResponse, ProcessStatus, StateMovement,
};

use crate::controls;
use crate::receipts::Receipt;
use crate::tables::{
    Announce, AttributeRows, Dialect, Finish, Lane, OperatorRows, PlanWriter, ProcessRows,
    Transaction,
};
use crate::StoreError;

pub(crate) async fn reset<D: Dialect>(
    store: &D,
    request: &ProcessExecutionResetRequest,
    receipt: Option<&Receipt>,
) -> Result<ProcessExecutionResetResponse, StoreError> {
    controls::check_request(
        None,
        request.reason.as_deref(),
        request.identity.as_deref(),
        false,
    )
    .map_err(|(field, message)| {
        StoreError::Decide(DecideError::Invalid(ValidationError::new(field, message)))
    })?;
    xdb_engine::validation::check_id("stateId", &request.state_id).map_err(DecideError::from)?;
    // Read before the transaction, which should not wait for a connection to read them.
    let run_limits = store.run_limits().current(store).await?;
    let run_limits = &run_limits.run_limits;
    let mut tx = store.begin(Lane::Main).await?;
    let process = tx
        .lock_execution_of(&request.process_id, request.process_execution_id.as_deref())
        .await?;
    let now = store.database_clock().now();
    let asked = ResetRequest {
        movement: StateMovement {
            state_id: request.state_id.clone(),
            state_input: request.state_input.clone(),
            state_config: request.state_config.clone(),
        },
        reason: request.reason.as_deref(),
        identity: request.identity.as_deref(),
    };
    let closed = process.status.is_closed();
    let (states, tasks) = if closed {
        (Vec::new(), Vec::new())
    } else {
        let tasks = tx.tasks_of(process.id, true).await?;
        let states = tx.states_of(process.id).await?;
        (states, tasks.into_iter().map(|v| v.task).collect())
    };
    let new_id = Uuid::now_v7();
    let mut reset = decide::reset(&process, &states, &tasks, &asked, new_id, now)?;
    let continuing = match &reset.new_execution {
        None => {
            for id in &reset.cancel_tasks {
                tx.delete_task(*id).await?;
            }
            tx.apply_plan(
                &process,
                &reset.plan,
                now,
                Announce::NewTasks,
                None,
                Finish::Later,
            )
            .await?;
            process.id
        }
        Some(execution) => {
            // Serialize with starts of the id, which claim its latest-execution row.
            let latest = tx.claim_process_id(&request.process_id, new_id).await?;
            if let Some(latest) = latest.filter(|l| l.id != process.id) {
                if latest.status == ProcessStatus::Running {
                    return Err(StoreError::NotApplicable(format!(
                        "execution {} of process '{}' is running: reset it, or stop it \
                         before resetting the closed execution {}",
                        latest.id, request.process_id, process.id
                    )));
                }
            }
            tx.repoint_latest(&request.process_id, new_id).await?;
            tx.insert_execution(execution).await?;
            // The old execution's local attributes carry over; its business row is the
            // same row.
            reset.plan.attribute_writes.local_attributes =
                tx.all_local_attributes(process.id).await?;
            tx.apply_plan(
                execution,
                &reset.plan,
                now,
                Announce::NewTasks,
                None,
                Finish::Later,
            )
            .await?;
            // A new execution of a limited type takes a slot as a start does, under the
            // key its predecessor was counted under (the shared key if there was none).
            if let Some(limit) = run_limits.get(&execution.process_type) {
                let key = super::run_slots::counted_key(&mut tx, process.id)
                    .await?
                    .unwrap_or_default();
                super::run_slots::take_or_queue(&mut tx, execution, &key, limit.max, now).await?;
            }
            execution.id
        }
    };
    let answer = ProcessExecutionResetResponse {
        process_execution_id: continuing.to_string(),
        new_execution: closed,
        state_execution_id: reset.started.to_string(),
    };
    super::record_receipt(&mut tx, receipt, &answer, now).await?;
    tx.commit().await?;
    Ok(answer)
}
