//! The async service's small HTTP surface: health probes, Prometheus metrics and, where
//! API instances wake async instances over HTTP (MySQL), the internal wake-up API, whose
//! calls must be signed ([`xdb_cluster::InternalAuth`]). The listener is internal: in a
//! cluster nothing outside reaches it.

use std::sync::Arc;

use axum::extract::{FromRef, State};
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use tokio::sync::watch;
use uuid::Uuid;
use xdb_cluster::{Authenticated, InternalAuth};
use xdb_persistence::{Notification, Notifications, TaskSource};
use xdb_protocol::limits::MAX_NOTIFY_IDS;
use xdb_protocol::{paths, InternalNotifyRequest};

use crate::health::SourceHealth;
use crate::leases::LeasedTasks;
use crate::metric_definitions::AsyncMetrics;

#[derive(Clone)]
pub(crate) struct HttpState {
    pub store: Arc<dyn TaskSource>,
    pub notifications: Notifications,
    /// True once shutdown began: the instance claims nothing more.
    pub draining: watch::Receiver<bool>,
    pub metrics: Arc<AsyncMetrics>,
    pub leased: Arc<LeasedTasks>,
    /// Whether the task source can still get work (a Pulsar consumer or the claim loop
    /// may die).
    pub source: Arc<dyn SourceHealth>,
    /// Whether the database answered the last background probe.
    pub database: xdb_persistence::DatabaseHealth,
    /// `async.attempts_alert_threshold`: the attempt from which a state call counts in
    /// `xdb_async_states_past_attempts`.
    pub attempts_alert_threshold: i32,
    /// Checks the signature of API instances' wake-ups.
    pub internal_auth: InternalAuth,
}

impl FromRef<HttpState> for InternalAuth {
    fn from_ref(state: &HttpState) -> Self {
        state.internal_auth.clone()
    }
}

/// The routes; the wake-up path only where it is used (`serve_notify`: MySQL).
pub(crate) fn router(state: HttpState, serve_notify: bool) -> Router {
    let router = Router::new()
        .route("/health/live", get(live))
        .route("/health/ready", get(ready))
        .route(paths::METRICS, get(metrics));
    let router = if serve_notify {
        router.route(paths::INTERNAL_NOTIFY, post(notify))
    } else {
        router
    };
    router.with_state(state)
}

/// Alive unless the task source died: a dead Pulsar consumer never recovers by itself,
/// so the instance must be restarted.
async fn live(State(state): State<HttpState>) -> (StatusCode, String) {
    match state.source.problem() {
        None => (StatusCode::OK, String::new()),
        Some(problem) => (StatusCode::SERVICE_UNAVAILABLE, problem),
    }
}

/// Ready when the instance is not shutting down, the task source can get work and the
/// database answered the last background probe. Read from in-process state only: a
/// query here would queue behind the instance's own work.
async fn ready(State(state): State<HttpState>) -> (StatusCode, String) {
    let problem = if *state.draining.borrow() {
        Some("shutting down".to_string())
    } else {
        state
            .source
            .problem()
            .or_else(|| state.source.recovering())
            .or_else(|| state.database.problem())
    };
    match problem {
        None => (StatusCode::OK, String::new()),
        Some(problem) => (StatusCode::SERVICE_UNAVAILABLE, problem),
    }
}

/// Most due tasks the backlog gauge counts: beyond it the exact number matters less than
/// keeping a scrape cheap. The gauges of what needs an operator are capped alike.
const BACKLOG_CAP: i64 = 100_000;

/// The Prometheus text exposition; the gauges are sampled now.
async fn metrics(State(state): State<HttpState>) -> impl IntoResponse {
    state.metrics.leases_held.set(state.leased.len() as i64);
    // A failed count keeps the last sample: the scrape itself still answers.
    match state.store.count_backlog(BACKLOG_CAP).await {
        Ok(backlog) => state.metrics.queue_backlog.set(backlog),
        Err(error) => tracing::warn!(%error, "counting the task backlog failed"),
    }
    match state
        .store
        .operator_gauges(state.attempts_alert_threshold, BACKLOG_CAP)
        .await
    {
        Ok(gauges) => state.metrics.set_operator_gauges(&gauges),
        Err(error) => tracing::warn!(%error, "counting what needs an operator failed"),
    }
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.encode(),
    )
}

/// A wake-up: new tasks were committed. Signed or (in an upgrade window) unsigned alike,
/// it only makes this instance read the database sooner.
async fn notify(
    State(state): State<HttpState>,
    call: Authenticated<Json<InternalNotifyRequest>>,
) -> StatusCode {
    let Json(request) = call.body;
    if let Some(notification) = wake_up(&request) {
        state.notifications.publish(notification);
    }
    if request.new_batches {
        state.notifications.publish(Notification::Batches);
    }
    StatusCode::OK
}

/// What `request` tells the claim loop: new tasks of the executions it names, when it
/// names them all well, else new tasks to search for (a name that is no execution id, or
/// too many, must not hide a task).
fn wake_up(request: &InternalNotifyRequest) -> Option<Notification> {
    if !request.new_tasks {
        return None;
    }
    let named = &request.new_task_executions;
    if named.is_empty() || named.len() > MAX_NOTIFY_IDS {
        return Some(Notification::Tasks);
    }
    let executions: Option<Arc<[Uuid]>> = named.iter().map(|id| id.parse().ok()).collect();
    Some(executions.map_or(Notification::Tasks, Notification::TasksOf))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(new_tasks: bool, named: &[&str]) -> InternalNotifyRequest {
        InternalNotifyRequest {
            new_tasks,
            new_task_executions: named.iter().map(|id| id.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn named_executions_are_passed_on_and_anything_doubtful_searches() {
        let id = Uuid::now_v7();
        assert_eq!(wake_up(&request(false, &[])), None);
        assert_eq!(wake_up(&request(true, &[])), Some(Notification::Tasks));
        assert_eq!(
            wake_up(&request(true, &[&id.to_string()])),
            Some(Notification::TasksOf(Arc::from([id])))
        );
        assert_eq!(
            wake_up(&request(true, &[&id.to_string(), "not-an-id"])),
            Some(Notification::Tasks)
        );
        let too_many: Vec<String> = (0..=MAX_NOTIFY_IDS)
            .map(|_| Uuid::now_v7().to_string())
            .collect();
        let too_many: Vec<&str> = too_many.iter().map(String::as_str).collect();
        assert_eq!(
            wake_up(&request(true, &too_many)),
            Some(Notification::Tasks)
        );
    }
}
