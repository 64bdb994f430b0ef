//! The async service's small HTTP surface: health probes and the internal wake-up API.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use tokio::sync::watch;
use xdb_persistence::{Notification, Notifications, ProcessStore};
use xdb_protocol::{paths, InternalNotifyRequest};

#[derive(Clone)]
pub(crate) struct HttpState {
    pub store: Arc<dyn ProcessStore>,
    pub notifications: Notifications,
    /// True once shutdown began: the instance claims nothing more.
    pub draining: watch::Receiver<bool>,
}

pub(crate) fn router(state: HttpState) -> Router {
    Router::new()
        .route("/health/live", get(|| async { StatusCode::OK }))
        .route("/health/ready", get(ready))
        .route(paths::INTERNAL_NOTIFY, post(notify))
        .with_state(state)
}

/// Ready when the database answers and the instance is not shutting down.
async fn ready(State(state): State<HttpState>) -> StatusCode {
    if *state.draining.borrow() {
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    match state.store.next_task_due_in().await {
        Ok(_) => StatusCode::OK,
        Err(_) => StatusCode::SERVICE_UNAVAILABLE,
    }
}

async fn notify(
    State(state): State<HttpState>,
    Json(request): Json<InternalNotifyRequest>,
) -> StatusCode {
    if request.new_tasks {
        state.notifications.publish(Notification::Tasks);
    }
    StatusCode::OK
}
