//! Per-request observability: a server span continuing the caller's trace, request
//! metrics, and `/metrics`.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tracing::Instrument;

use crate::AppState;

/// Wraps every routed request: the span is a child of the request's `traceparent`, and
/// tasks the request creates carry the span on (see `xdb_persistence::trace_context`).
pub(crate) async fn observe(
    State(state): State<AppState>,
    route: Option<MatchedPath>,
    request: Request,
    next: Next,
) -> Response {
    let route = route
        .as_ref()
        .map_or("unmatched", MatchedPath::as_str)
        .to_owned();
    let method = request.method().clone();
    let span = tracing::info_span!(
        "xdb.api.request",
        otel.name = %format!("{method} {route}"),
        otel.kind = "server",
        http.request.method = %method,
        http.route = %route,
        http.response.status_code = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    );
    xdb_telemetry::set_parent_from_headers(&span, request.headers());
    let traceparent = xdb_telemetry::traceparent(&span);
    let started = Instant::now();
    let response = xdb_persistence::trace_context::scope(traceparent, next.run(request))
        .instrument(span.clone())
        .await;
    let status = response.status();
    span.record("http.response.status_code", status.as_u16());
    if status.is_server_error() {
        span.record("otel.status_code", "ERROR");
    }
    let metrics = &state.metrics;
    metrics
        .requests
        .with_label_values(&[method.as_str(), &route, status.as_str()])
        .inc();
    metrics
        .request_seconds
        .with_label_values(&[method.as_str(), &route])
        .observe(started.elapsed().as_secs_f64());
    response
}

/// The Prometheus text exposition.
pub(crate) async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.encode(),
    )
}
