//! Long poll until the current execution closes, woken by its close notification.

use std::time::Duration;

use axum::extract::State;
use axum::Json;
use tokio::time::Instant;
use xdb_protocol::{
    ProcessExecutionDescribeRequest, ProcessExecutionWaitForCompletionRequest,
    ProcessExecutionWaitForCompletionResponse,
};

use crate::closed_waiters::Wake;
use crate::json::ApiJson;
use crate::metric_definitions::{ANSWERED_FROM_NOTIFICATION, ANSWERED_FROM_READ};
use crate::{ApiError, AppState};

const DEFAULT_WAIT_SECONDS: u32 = 30;
/// Re-check the database this often even without a notification (one may be missed).
const FALLBACK_POLL: Duration = Duration::from_secs(1);

pub(crate) async fn wait_for_completion(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<ProcessExecutionWaitForCompletionRequest>,
) -> Result<Json<ProcessExecutionWaitForCompletionResponse>, ApiError> {
    // A request that names no timeout waits the default, or less where the operator
    // allows less: omitting a field must not turn a valid request into a refused one.
    let seconds = request
        .timeout_seconds
        .unwrap_or(DEFAULT_WAIT_SECONDS.min(state.config.api.max_wait_seconds));
    if seconds > state.config.api.max_wait_seconds {
        return Err(ApiError::invalid(format!(
            "timeoutSeconds: at most {}",
            state.config.api.max_wait_seconds
        )));
    }
    let deadline = Instant::now() + Duration::from_secs(u64::from(seconds));
    let describe = ProcessExecutionDescribeRequest {
        process_id: request.process_id.clone(),
        process_execution_id: None,
    };
    let mut woken_by_close = false;
    // The instance is shutting down: answer what the execution is now, so the client
    // asks another instance rather than waiting out its timeout here.
    let mut draining = state.draining.subscribe();
    loop {
        let execution = state.store.process_outcome(&describe).await?;
        if woken_by_close {
            wait_closes_answered(&state, ANSWERED_FROM_READ);
        }
        let timed_out = Instant::now() >= deadline || *draining.borrow_and_update();
        if execution.status.is_closed() || timed_out {
            return Ok(Json(ProcessExecutionWaitForCompletionResponse {
                process_execution_id: execution.process_execution_id,
                status: execution.status,
                timed_out: !execution.status.is_closed(),
                result: execution.result,
                failure: execution.failure,
            }));
        }
        // Registered after the read: a close in between is remembered, and wakes it.
        let mut registration = state
            .closed_waiters
            .register(&execution.process_execution_id);
        let _registered = Registered::count(&state);
        let wake = (Instant::now() + FALLBACK_POLL).min(deadline);
        let woke = tokio::select! {
            woke = tokio::time::timeout_at(wake, registration.wake()) => woke,
            // Read once more, and answer.
            () = drained(&mut draining) => Ok(Wake::Recheck),
        };
        match woke {
            // The closing transaction sent its answer along: no read needed.
            Ok(Wake::Closed(Some(outcome))) => {
                wait_closes_answered(&state, ANSWERED_FROM_NOTIFICATION);
                return Ok(Json(outcome.as_ref().clone()));
            }
            Ok(Wake::Closed(None)) => woken_by_close = true,
            Ok(Wake::Recheck) | Err(_) => woken_by_close = false,
        }
    }
}

/// Resolves once the instance drains (never, should the sender be gone).
async fn drained(draining: &mut tokio::sync::watch::Receiver<bool>) {
    if draining.wait_for(|draining| *draining).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Counts a registered wait in `xdb_api_waits_registered` while it lives (a client
/// that goes away drops it with the request).
struct Registered(prometheus::IntGauge);

impl Registered {
    fn count(state: &AppState) -> Self {
        let gauge = state.metrics.waits_registered.clone();
        gauge.inc();
        Self(gauge)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Counts a wait woken by its execution's close, answered from `answered_from`.
fn wait_closes_answered(state: &AppState, answered_from: &str) {
    state
        .metrics
        .wait_closes
        .with_label_values(&[answered_from])
        .inc();
}
