//! The orchestrator's probes. Neither reads through the store: a probe queued behind
//! request traffic would make a saturated instance look dead or unready exactly when
//! it is needed (see `xdb_persistence::DatabaseHealth`).

use axum::extract::State;
use axum::http::StatusCode;

use crate::AppState;

/// Alive while the process serves HTTP.
pub(crate) async fn live() -> StatusCode {
    StatusCode::OK
}

/// Ready while listening (this answer is proof), not draining, and the database answered
/// the last background probe; otherwise 503 with the reason.
pub(crate) async fn ready(State(state): State<AppState>) -> (StatusCode, String) {
    match readiness(*state.draining.borrow(), state.database_health.problem()) {
        None => (StatusCode::OK, String::new()),
        Some(problem) => (StatusCode::SERVICE_UNAVAILABLE, problem),
    }
}

/// Why the instance is not ready, if it is not.
fn readiness(draining: bool, database_problem: Option<String>) -> Option<String> {
    if draining {
        return Some("shutting down".into());
    }
    database_problem
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_unless_draining_or_the_database_probe_failed() {
        assert_eq!(readiness(false, None), None);
        assert_eq!(readiness(true, None).as_deref(), Some("shutting down"));
        assert_eq!(
            readiness(false, Some("no answer".into())).as_deref(),
            Some("no answer")
        );
        assert_eq!(
            readiness(true, Some("no answer".into())).as_deref(),
            Some("shutting down")
        );
    }
}
