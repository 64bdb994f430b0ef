//! The web console at `/ui`: static assets compiled into the binary (built from
//! `console/` by `scripts/build-console.sh`, committed in `console/dist`), and the async
//! service's metrics passed through for its dashboard.
//!
//! The assets are public, like the OpenAPI document: they hold no data. Everything the
//! page shows comes from the client paths, which take the bearer tokens; the page asks
//! for a token when they answer 401. The page runs no inline script and loads nothing
//! from elsewhere, and the Content-Security-Policy says so. With `api.console = false`
//! none of these routes exist (404).

use std::sync::LazyLock;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;

use crate::AppState;

const INDEX: &str = include_str!("../../../console/dist/index.html");
const APP_JS: &str = include_str!("../../../console/dist/app.js");
const APP_CSS: &str = include_str!("../../../console/dist/app.css");

/// Scripts and styles from this origin only, requests to this origin only, no frames.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// The console's routes, or none when `api.console` is off.
pub(crate) fn routes(enabled: bool) -> Router<AppState> {
    if !enabled {
        return Router::new();
    }
    Router::new()
        .route("/ui", get(|| async { Redirect::permanent("/ui/") }))
        .route(
            "/ui/",
            get(|| async { asset("text/html; charset=utf-8", INDEX) }),
        )
        .route(
            "/ui/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }),
        )
        .route(
            "/ui/app.css",
            get(|| async { asset("text/css; charset=utf-8", APP_CSS) }),
        )
        .route("/ui/metrics/async", get(async_metrics))
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // The assets change with the binary: revalidate rather than cache across upgrades.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

static METRICS_CLIENT: LazyLock<reqwest::Client> = LazyLock::new(|| {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .expect("an HTTP client with a timeout builds")
});

/// The async service's Prometheus text from `api.console_async_metrics_url`; 404 when
/// none is configured, 502 when it does not answer. Public, like `/metrics`.
async fn async_metrics(State(state): State<AppState>) -> Response {
    let Some(url) = state.config.api.console_async_metrics_url.as_deref() else {
        return (
            StatusCode::NOT_FOUND,
            "api.console_async_metrics_url is not set",
        )
            .into_response();
    };
    let fetched = async {
        let response = METRICS_CLIENT.get(url).send().await?.error_for_status()?;
        response.text().await
    }
    .await;
    match fetched {
        Ok(text) => ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response(),
        Err(error) => (
            StatusCode::BAD_GATEWAY,
            format!("the async service's metrics did not answer: {error}"),
        )
            .into_response(),
    }
}
