//! TIMER tasks: fire the timer; when it is the last command its state waits for, call
//! the state's execute first and commit the firing with the answer (one transition
//! instead of two).

use xdb_engine::decide::{AttemptFailure, StateApi};
use xdb_engine::Task;
use xdb_persistence::{Applied, StoreError};

use super::state_api::{call_execute, failed};
use super::HandlerContext;

pub(super) async fn handle(context: &HandlerContext, task: &Task) -> Result<Applied, StoreError> {
    let Some(fired) = context.store.fired_timer_call(task).await? else {
        return context.store.fire_timer(task, &context.owner).await;
    };
    if super::set_aside_if_paused(context, task, &fired.before.process).await? {
        return Ok(Applied::default());
    }
    // The timer is never late for a limit: when the execute must wait long, the firing is
    // written alone, and the execute task it starts waits its turn.
    let fired_state = &fired.call.state.id.state_id;
    let process_type = &fired.call.process.process_type;
    if super::wait_turn(context, task, process_type, fired_state)
        .await?
        .is_some()
    {
        return context.store.fire_timer(task, &context.owner).await;
    }
    // A first attempt starts now, not when the timer was claimed (read ahead of time).
    let attempt = Task {
        first_attempt_at: task.first_attempt_at.filter(|_| task.attempt > 1),
        ..task.clone()
    };
    let failure = match call_execute(context, &attempt, &fired.call).await {
        Ok(response) => {
            match context
                .store
                .complete_fired_execute(task, &context.owner, &fired, &response)
                .await
            {
                Err(StoreError::Stale(reason)) => return fire_afresh(context, task, &reason).await,
                // The answer's writes were refused by the user's table.
                Err(StoreError::AppDatabase(error)) => AttemptFailure::retryable(error),
                Err(StoreError::Decide(error)) => AttemptFailure::retryable(error.to_string()),
                other => return other,
            }
        }
        // An answer that can never succeed parks the state's call; the timer task
        // cannot stand for it there (operators act on state calls), so the firing is
        // written on its own and the execute task it starts meets the answer again,
        // and is parked.
        Err(error) if error.0.non_retryable.is_some() => {
            return fire_afresh(context, task, &error.0.error).await;
        }
        Err(error) => error.0,
    };
    // The timer task stands for the execute until the firing is written: a retry by the
    // state's policy reschedules it (its attempt counted up), and giving up applies the
    // state's failure recovery in its place.
    match failed(
        context,
        &attempt,
        &fired.before,
        StateApi::Execute,
        &failure,
    )
    .await
    {
        Err(StoreError::Stale(reason)) => fire_afresh(context, task, &reason).await,
        other => other,
    }
}

/// The rows moved since they were read (the process closed): the firing is decided
/// again, on them.
async fn fire_afresh(
    context: &HandlerContext,
    task: &Task,
    reason: &str,
) -> Result<Applied, StoreError> {
    tracing::debug!(task = task.id, %reason, "a fired timer's rows moved; firing it afresh");
    context.store.fire_timer(task, &context.owner).await
}
