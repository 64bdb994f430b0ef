//! Operators' controls (retry now, give up, pause, resume, reprioritize), and the async service's
//! setting aside of a task: one of a paused execution, or one the database refused too
//! many times in a row. Which tasks a control acts on is decided in [`crate::controls`].

use chrono::{DateTime, Utc};
use serde_json::json;
use xdb_engine::decide::{self, DecideError, StateApi};
use xdb_engine::validation::ValidationError;
use xdb_engine::{HistoryEntry, ProcessExecution, Task, TaskType, TransitionPlan};
use xdb_protocol::{
    ControlDetails, HistoryEventType, PauseInfo, ProcessExecutionControlRequest,
    ProcessExecutionControlResponse, ReprioritizedDetails, TaskParkedDetails, TaskParkedReason,
};

use crate::controls;
use crate::receipts::{Control, Receipt};
use crate::reprioritize;
use crate::tables::{
    Announce, Dialect, Finish, Lane, OperatorRows, ParkReason, PlanWriter, ProcessRows, TaskRows,
    TaskView, Transaction,
};
use crate::{SetAside, StoreError};

fn event(control: Control) -> HistoryEventType {
    match control {
        Control::RetryNow => HistoryEventType::RetryRequested,
        Control::GiveUp => HistoryEventType::GiveUpRequested,
        Control::Pause => HistoryEventType::Paused,
        Control::Resume => HistoryEventType::Resumed,
        Control::Reprioritize => HistoryEventType::Reprioritized,
    }
}

/// Applies `control` to the execution `request` names, and records it in its history.
pub(crate) async fn control<D: Dialect>(
    store: &D,
    control: Control,
    request: &ProcessExecutionControlRequest,
    receipt: Option<&Receipt>,
) -> Result<ProcessExecutionControlResponse, StoreError> {
    let target = controls::check_request(
        request.state_execution_id.as_deref(),
        request.reason.as_deref(),
        request.identity.as_deref(),
        matches!(control, Control::RetryNow | Control::GiveUp),
    )
    .map_err(|(field, message)| invalid(field, message))?;
    let change = match control {
        Control::Reprioritize => {
            Some(reprioritize::check(request.reprioritize.as_ref()).map_err(refused)?)
        }
        _ if request.reprioritize.is_some() => {
            return Err(invalid(
                "reprioritize",
                "only the reprioritize control takes it".into(),
            ))
        }
        _ => None,
    };
    let mut tx = store.begin(Lane::Main).await?;
    let process = tx
        .lock_execution_of(&request.process_id, request.process_execution_id.as_deref())
        .await?;
    if process.status.is_closed() {
        return Err(DecideError::NotRunning.into());
    }
    let now = store.database_clock().now();
    let tasks = tx.tasks_of(process.id, true).await?;
    let not_applicable = StoreError::NotApplicable;
    let state_execution_ids = match control {
        Control::RetryNow => {
            if process.paused.is_some() {
                return Err(not_applicable(
                    "the execution is paused: resume it, and what is due runs".into(),
                ));
            }
            let picked = controls::retry_now(&tasks, &target, now).map_err(not_applicable)?;
            for view in &picked {
                if view.parked.is_some() {
                    tx.unpark(view.task.id, Some(now)).await?;
                } else {
                    tx.make_due(view.task.id, now).await?;
                }
            }
            controls::state_ids(&picked)
        }
        Control::GiveUp => {
            let picked = controls::give_up(&tasks, &target).map_err(not_applicable)?;
            let ids = controls::state_ids(&picked);
            record(&mut tx, &process, control, request, &ids, now).await?;
            let tasks: Vec<Task> = picked.iter().map(|v| v.task.clone()).collect();
            give_up_states(&mut tx, process.id, &tasks, request, now).await?;
            let answer = ProcessExecutionControlResponse {
                state_execution_ids: ids,
            };
            super::record_receipt(&mut tx, receipt, &answer, now).await?;
            tx.commit().await?;
            return Ok(answer);
        }
        Control::Pause => {
            if process.paused.is_some() {
                return Err(not_applicable("the execution is paused already".into()));
            }
            let info = PauseInfo {
                since_timestamp_ms: now.timestamp_millis(),
                reason: request.reason.clone(),
                identity: request.identity.clone(),
                pending_on_key: None,
            };
            tx.set_paused(process.id, Some(&info)).await?;
            let held = controls::to_hold(&tasks);
            for view in &held {
                tx.park(view.task.id, None, ParkReason::Paused, None, now)
                    .await?;
            }
            controls::state_ids(&held)
        }
        Control::Reprioritize => {
            let change = change.expect("checked before the transaction");
            let (priority, fairness) =
                reprioritize::apply(process.priority, process.fairness.as_ref(), change)
                    .map_err(refused)?;
            tx.reorder(process.id, priority, fairness.as_ref()).await?;
            let waiting: Vec<&TaskView> = tasks
                .iter()
                .filter(|v| v.lease_owner.is_none() && v.parked.is_none())
                .filter(|v| matches!(v.task.task_type, TaskType::WaitUntil | TaskType::Execute))
                .collect();
            let details = ReprioritizedDetails {
                before: reprioritize::claim_order(process.priority, process.fairness.as_ref()),
                after: reprioritize::claim_order(priority, fairness.as_ref()),
                reason: request.reason.clone(),
                identity: request.identity.clone(),
                state_execution_ids: controls::state_ids(&waiting),
            };
            let answer = ProcessExecutionControlResponse {
                state_execution_ids: details.state_execution_ids.clone(),
            };
            let plan = TransitionPlan {
                history: vec![HistoryEntry::new(
                    event(control).as_str(),
                    serde_json::to_value(details).expect("reprioritized details serialize"),
                )],
                ..Default::default()
            };
            tx.apply_plan(
                &process,
                &plan,
                now,
                Announce::TasksDue,
                None,
                Finish::Later,
            )
            .await?;
            super::record_receipt(&mut tx, receipt, &answer, now).await?;
            tx.commit().await?;
            return Ok(answer);
        }
        Control::Resume => {
            match &process.paused {
                None => return Err(not_applicable("the execution is not paused".into())),
                Some(pause) if pause.pending_on_key.is_some() => {
                    return Err(not_applicable(
                        "the execution is PENDING, held by its type's maxRunningExecutions: \
                         it starts by itself when a running one of its key closes"
                            .into(),
                    ))
                }
                Some(_) => {}
            }
            tx.set_paused(process.id, None).await?;
            let released = controls::to_release(&tasks);
            for view in &released {
                tx.unpark(view.task.id, None).await?;
            }
            controls::state_ids(&released)
        }
    };
    record(
        &mut tx,
        &process,
        control,
        request,
        &state_execution_ids,
        now,
    )
    .await?;
    let answer = ProcessExecutionControlResponse {
        state_execution_ids,
    };
    super::record_receipt(&mut tx, receipt, &answer, now).await?;
    tx.commit().await?;
    Ok(answer)
}

fn invalid(field: &str, message: String) -> StoreError {
    StoreError::Decide(DecideError::Invalid(ValidationError::new(field, message)))
}

fn refused(refusal: reprioritize::Refusal) -> StoreError {
    match refusal {
        reprioritize::Refusal::Invalid(field, message) => invalid(&field, message),
        reprioritize::Refusal::NotApplicable(why) => StoreError::NotApplicable(why),
    }
}

/// Writes the control's history event (and wakes the async services for tasks it made
/// due).
async fn record<T: Transaction>(
    tx: &mut T,
    process: &ProcessExecution,
    control: Control,
    request: &ProcessExecutionControlRequest,
    state_execution_ids: &[String],
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let details = ControlDetails {
        reason: request.reason.clone(),
        identity: request.identity.clone(),
        state_execution_ids: state_execution_ids.to_vec(),
    };
    let plan = TransitionPlan {
        history: vec![HistoryEntry::new(
            event(control).as_str(),
            serde_json::to_value(details).expect("control details serialize"),
        )],
        ..Default::default()
    };
    tx.apply_plan(process, &plan, now, Announce::TasksDue, None, Finish::Later)
        .await?;
    Ok(())
}

/// Applies each state's failure recovery in place of its remaining attempts (a recovery
/// that closes the execution takes its set-aside tasks with it, as every close does).
/// The execution is read again after each: a recovery changes it.
async fn give_up_states<T: Transaction>(
    tx: &mut T,
    id: uuid::Uuid,
    tasks: &[Task],
    request: &ProcessExecutionControlRequest,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let who = request.identity.as_deref().unwrap_or("an operator");
    let why = request.reason.as_deref().unwrap_or("no reason given");
    for task in tasks {
        let process = tx.lock_process(id).await?;
        if process.status.is_closed() {
            return Ok(());
        }
        let Some(state_id) = &task.state else {
            continue;
        };
        tx.delete_unheld_task(task.id).await?;
        let Some(state) = tx.lock_state(id, state_id).await? else {
            continue;
        };
        let api = match task.task_type {
            TaskType::WaitUntil => StateApi::WaitUntil,
            _ => StateApi::Execute,
        };
        let failed_attempt = u32::try_from(task.attempt - 1).unwrap_or(0).max(1);
        let error = format!("given up by {who}: {why}");
        let plan = decide::state_api_given_up(&process, &state, api, failed_attempt, &error, now);
        tx.apply_plan(
            &process,
            &plan,
            now,
            Announce::NewTasks,
            None,
            Finish::Later,
        )
        .await?;
    }
    Ok(())
}

/// Sets a claimed `task` aside instead of running it. `Ok(false)`: it should run after
/// all (its execution resumed meanwhile).
pub(crate) async fn set_aside<D: Dialect>(
    store: &D,
    task: &Task,
    owner: &str,
    why: &SetAside,
) -> Result<bool, StoreError> {
    let mut tx = store.begin(Lane::Main).await?;
    let process = tx.lock_process(task.process_execution_id).await?;
    if process.status.is_closed() {
        // Nothing of a closed execution runs again.
        tx.drop_task(task, owner).await?;
        tx.commit().await?;
        return Ok(true);
    }
    let now = store.database_clock().now();
    match why {
        SetAside::Paused => {
            if process.paused.is_none() {
                return Ok(false);
            }
            if !tx
                .park(task.id, Some(owner), ParkReason::Paused, None, now)
                .await?
            {
                return Err(StoreError::Stale(format!(
                    "task {} is no longer ours",
                    task.id
                )));
            }
        }
        SetAside::Refused { error, refusals } => {
            if !tx
                .park(task.id, Some(owner), ParkReason::Refused, Some(error), now)
                .await?
            {
                return Err(StoreError::Stale(format!(
                    "task {} is no longer ours",
                    task.id
                )));
            }
            let details = TaskParkedDetails {
                state_execution_id: task.state.as_ref().map(ToString::to_string),
                task_type: task.task_type.as_str().to_owned(),
                reason: TaskParkedReason::Refused,
                refusals: *refusals,
                error: error.clone(),
                worker_error_type: None,
            };
            let plan = TransitionPlan {
                history: vec![HistoryEntry::new(
                    HistoryEventType::TaskParked.as_str(),
                    json!(details),
                )],
                ..Default::default()
            };
            tx.apply_plan(
                &process,
                &plan,
                now,
                Announce::ClosuresOnly,
                None,
                Finish::Later,
            )
            .await?;
        }
    }
    tx.commit().await?;
    Ok(true)
}

/// Whether a claimed task of `process` is to be set aside rather than run.
pub(crate) fn held_back(process: &ProcessExecution) -> bool {
    process.paused.is_some() && !process.status.is_closed()
}

/// Gives a claimed state task back for later, at the same attempt, marked as held back
/// by a flow limit (see [`crate::Transitions::hold_back`]).
pub(crate) async fn hold_back<D: Dialect>(
    store: &D,
    task: &Task,
    owner: &str,
    delay: std::time::Duration,
) -> Result<bool, StoreError> {
    let due = store.database_clock().now()
        + chrono::Duration::from_std(delay).unwrap_or(chrono::Duration::MAX);
    let info = crate::trace_context::TaskInfo {
        traceparent: task.traceparent.clone(),
        rate_limited_attempt: Some(task.attempt),
    };
    let mut session = store.session(Lane::Main).await?;
    session.hold_task(task, owner, due, &info).await
}
