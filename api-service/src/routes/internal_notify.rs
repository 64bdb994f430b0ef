//! Wake-ups from async-service instances: executions that closed, for waiting clients.
//! Served on the internal listener only, signed ([`xdb_cluster::InternalAuth`]).

use std::collections::HashSet;
use std::sync::Arc;

use axum::extract::State;
use axum::Json;
use xdb_cluster::{Authenticated, Authenticity};
use xdb_persistence::Notification;
use xdb_protocol::{EmptyResponse, InternalNotifyRequest};

use crate::json::ApiJson;
use crate::{ApiError, AppState};

/// Most ids, and most outcomes, one notification may carry; the sender batches, so this
/// is generous.
const MAX_IDS: usize = xdb_protocol::limits::MAX_NOTIFY_IDS;

pub(crate) async fn internal_notify(
    State(state): State<AppState>,
    call: Authenticated<ApiJson<InternalNotifyRequest>>,
) -> Result<Json<EmptyResponse>, ApiError> {
    let ApiJson(mut request) = call.body;
    if call.authenticity == Authenticity::UnsignedHint {
        // A peer of a release that did not sign: its word is a hint to read, not an
        // answer to pass on.
        request.closed_outcomes.clear();
    }
    for notification in notifications(request)? {
        state.notifications.publish(notification);
    }
    Ok(Json(EmptyResponse {}))
}

/// The closes `request` announces, each once: with its outcome where the request
/// carries one, so that its waiters answer without reading it back.
fn notifications(request: InternalNotifyRequest) -> Result<Vec<Notification>, ApiError> {
    if request.closed_process_execution_ids.len() > MAX_IDS {
        return Err(ApiError::invalid(format!(
            "closedProcessExecutionIds: at most {MAX_IDS}"
        )));
    }
    if request.closed_outcomes.len() > MAX_IDS {
        return Err(ApiError::invalid(format!(
            "closedOutcomes: at most {MAX_IDS}"
        )));
    }
    if let Some(open) = request
        .closed_outcomes
        .iter()
        .find(|outcome| !outcome.status.is_closed() || outcome.timed_out)
    {
        return Err(ApiError::invalid(format!(
            "closedOutcomes: {} is not closed",
            open.process_execution_id
        )));
    }
    let answered: HashSet<String> = request
        .closed_outcomes
        .iter()
        .map(|outcome| outcome.process_execution_id.clone())
        .collect();
    let ids_only = request
        .closed_process_execution_ids
        .into_iter()
        .filter(|id| !answered.contains(id))
        .map(|id| Notification::ProcessClosed { id, outcome: None });
    let with_outcomes =
        request
            .closed_outcomes
            .into_iter()
            .map(|outcome| Notification::ProcessClosed {
                id: outcome.process_execution_id.clone(),
                outcome: Some(Arc::new(outcome)),
            });
    Ok(with_outcomes.chain(ids_only).collect())
}

#[cfg(test)]
mod tests {
    use xdb_protocol::{ProcessExecutionWaitForCompletionResponse, ProcessStatus};

    use super::*;

    fn outcome(id: &str, status: ProcessStatus) -> ProcessExecutionWaitForCompletionResponse {
        ProcessExecutionWaitForCompletionResponse {
            process_execution_id: id.into(),
            status,
            timed_out: false,
            result: None,
            failure: None,
        }
    }

    fn closed(id: &str) -> Notification {
        Notification::ProcessClosed {
            id: id.into(),
            outcome: None,
        }
    }

    #[test]
    fn an_ids_only_request_wakes_waiters_to_read() {
        let request = InternalNotifyRequest {
            closed_process_execution_ids: vec!["a".into(), "b".into()],
            ..Default::default()
        };
        assert_eq!(
            notifications(request).unwrap(),
            vec![closed("a"), closed("b")]
        );
    }

    #[test]
    fn an_id_with_its_outcome_is_announced_once_with_the_outcome() {
        let request = InternalNotifyRequest {
            closed_process_execution_ids: vec!["a".into(), "b".into()],
            closed_outcomes: vec![outcome("a", ProcessStatus::Completed)],
            ..Default::default()
        };
        let expected = Notification::ProcessClosed {
            id: "a".into(),
            outcome: Some(Arc::new(outcome("a", ProcessStatus::Completed))),
        };
        assert_eq!(notifications(request).unwrap(), vec![expected, closed("b")]);
    }

    #[test]
    fn a_running_outcome_is_refused() {
        let request = InternalNotifyRequest {
            closed_outcomes: vec![outcome("a", ProcessStatus::Running)],
            ..Default::default()
        };
        let error = notifications(request).unwrap_err();
        assert!(
            error.message.contains("a is not closed"),
            "{}",
            error.message
        );
    }

    #[test]
    fn too_many_outcomes_are_refused() {
        let request = InternalNotifyRequest {
            closed_outcomes: vec![outcome("a", ProcessStatus::Completed); MAX_IDS + 1],
            ..Default::default()
        };
        let error = notifications(request).unwrap_err();
        assert!(
            error.message.contains("closedOutcomes: at most"),
            "{}",
            error.message
        );
    }
}
