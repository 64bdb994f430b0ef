//! Requests that change executions, run through the store with the receipt of their
//! `requestId` (see `xdb_persistence::receipts`): one path for start, stop, publish, the
//! controls and reset.

use std::time::Duration;

use serde::de::DeserializeOwned;
use xdb_persistence::receipts::{ClientRequest, Receipt, RequestAnswer};
use xdb_persistence::Notification;

use crate::{ApiError, AppState};

/// The receipt of `request` as the client sent it: taken before the service fills in
/// what a definition supplies, so a request sent again hashes the same.
pub(crate) fn receipt_of(
    state: &AppState,
    request: ClientRequest<'_>,
) -> Result<Option<Receipt>, ApiError> {
    let retention = Duration::from_secs(state.config.api.request_id_retention_seconds);
    Ok(Receipt::of_client(&request, retention)?)
}

/// Runs `request` with `receipt`, tells whom the effect concerns, and reads the answer
/// as the route's type.
pub(crate) async fn apply<T: DeserializeOwned>(
    state: &AppState,
    request: ClientRequest<'_>,
    receipt: Option<Receipt>,
) -> Result<T, ApiError> {
    let applied = state.store.apply(request, receipt.as_ref()).await?;
    if !applied.replayed {
        #[cfg(feature = "fault-injection")]
        crate::fault_injection::after_commit(request.operation()).await;
        announce(state, &request, &applied);
    }
    serde_json::from_value(applied.answer).map_err(|e| {
        xdb_persistence::StoreError::Database(format!("unreadable answer: {e}")).into()
    })
}

fn announce(state: &AppState, request: &ClientRequest<'_>, applied: &RequestAnswer) {
    // Where the database cannot announce a close (MySQL), this instance's waiters hear
    // of it here, with their answer; other instances' waiters poll for it.
    if let Some(outcome) = applied
        .closed_outcome
        .clone()
        .filter(|_| state.async_peers.is_enabled())
    {
        state.notifications.publish(Notification::ProcessClosed {
            id: outcome.process_execution_id.clone(),
            outcome: Some(std::sync::Arc::from(outcome)),
        });
    }
    // Tasks may be due now: wake the async services (where the database cannot). A
    // pause makes none due, and a reprioritization only reorders those that are.
    use xdb_persistence::receipts::Control;
    match request {
        ClientRequest::Control(Control::Pause | Control::Reprioritize, _) => {}
        // A start's tasks are its new execution's: named, they are claimed by it.
        ClientRequest::Start(_) => match started_execution(applied) {
            Some(id) => state.async_peers.new_tasks_of(id.to_owned()),
            None => state.async_peers.new_tasks(),
        },
        _ => state.async_peers.new_tasks(),
    }
}

/// The execution a start's answer names.
fn started_execution(applied: &RequestAnswer) -> Option<&str> {
    applied.answer.get("processExecutionId")?.as_str()
}
