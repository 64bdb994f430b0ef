//! [`WorkerFaults`]: wraps a worker's router to make its state calls slow, failing or
//! held, without touching the process code, and records every call it sees.
//!
//! - [`WorkerFaults::set_delay`]: every state call waits this long before the worker
//!   handles it (so calls are outstanding when a test kills an async instance).
//! - [`WorkerFaults::fail`]: calls matching a [`CallMatch`] are answered HTTP 500 (a
//!   worker error) without reaching the worker, until [`WorkerFaults::stop_failing`].
//! - [`WorkerFaults::refuse`]: calls matching a [`CallMatch`] are answered with a
//!   status and a typed error body (`errorType`) without reaching the worker, until
//!   [`WorkerFaults::stop_failing`].
//! - [`WorkerFaults::hold`]: calls matching a [`CallMatch`] reach the worker, but their
//!   answer is held back until [`WorkerFaults::release`] (a reply still in flight).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde::Deserialize;
use tokio::sync::watch;
use xdb_sdk::protocol::{paths, WorkerErrorResponse};

/// Which worker API a state call is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StateApiKind {
    WaitUntil,
    Execute,
}

/// One state call as the worker received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenCall {
    pub process_id: String,
    pub state_id: String,
    pub api: StateApiKind,
    pub attempt: u32,
    pub idempotency_key: String,
}

/// Selects state calls; unset fields match anything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallMatch {
    pub process_id: Option<String>,
    pub state_id: Option<String>,
    pub api: Option<StateApiKind>,
}

impl CallMatch {
    /// Calls of `api` for state `state_id`, in any process.
    pub fn state(state_id: &str, api: StateApiKind) -> Self {
        Self {
            process_id: None,
            state_id: Some(state_id.to_string()),
            api: Some(api),
        }
    }

    /// Narrows to one process id.
    pub fn in_process(mut self, process_id: &str) -> Self {
        self.process_id = Some(process_id.to_string());
        self
    }

    fn matches(&self, call: &SeenCall) -> bool {
        self.process_id
            .as_ref()
            .is_none_or(|p| *p == call.process_id)
            && self.state_id.as_ref().is_none_or(|s| *s == call.state_id)
            && self.api.is_none_or(|a| a == call.api)
    }
}

#[derive(Default)]
struct Rules {
    delay: Option<Duration>,
    fail: Vec<CallMatch>,
    /// Status and `errorType` to answer matching calls with.
    refuse: Vec<(CallMatch, u16, String)>,
    hold: Vec<CallMatch>,
}

struct Inner {
    rules: Mutex<Rules>,
    calls: Mutex<Vec<SeenCall>>,
    failed: AtomicUsize,
    in_flight: AtomicUsize,
    held: AtomicUsize,
    delivered_after_hold: AtomicUsize,
    released: watch::Sender<bool>,
}

/// The fault rules of one worker; clones share them.
#[derive(Clone)]
pub struct WorkerFaults {
    inner: Arc<Inner>,
}

impl Default for WorkerFaults {
    fn default() -> Self {
        Self::new()
    }
}

/// Decrements a counter when dropped, also when the call is cancelled (caller gone).
struct CountGuard<'a>(&'a AtomicUsize);

impl<'a> CountGuard<'a> {
    fn enter(counter: &'a AtomicUsize) -> Self {
        counter.fetch_add(1, Ordering::SeqCst);
        Self(counter)
    }
}

impl Drop for CountGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StateCallBody {
    context: xdb_sdk::Context,
    state_id: String,
}

impl WorkerFaults {
    pub fn new() -> Self {
        let (released, _) = watch::channel(false);
        Self {
            inner: Arc::new(Inner {
                rules: Mutex::default(),
                calls: Mutex::default(),
                failed: AtomicUsize::new(0),
                in_flight: AtomicUsize::new(0),
                held: AtomicUsize::new(0),
                delivered_after_hold: AtomicUsize::new(0),
                released,
            }),
        }
    }

    /// `router` (a worker) with these faults applied to its state calls.
    pub fn wrap(&self, router: Router) -> Router {
        router.layer(axum::middleware::from_fn_with_state(
            self.clone(),
            intercept,
        ))
    }

    fn rules(&self) -> std::sync::MutexGuard<'_, Rules> {
        self.inner.rules.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every state call waits `delay` before the worker handles it.
    pub fn set_delay(&self, delay: Option<Duration>) {
        self.rules().delay = delay;
    }

    /// Calls matching `selector` fail (HTTP 500) until [`Self::stop_failing`].
    pub fn fail(&self, selector: CallMatch) {
        self.rules().fail.push(selector);
    }

    /// Calls matching `selector` are answered `status` with a [`WorkerErrorResponse`]
    /// of `error_type`, as an SDK answers, until [`Self::stop_failing`].
    pub fn refuse(&self, selector: CallMatch, status: u16, error_type: &str) {
        self.rules()
            .refuse
            .push((selector, status, error_type.to_owned()));
    }

    pub fn stop_failing(&self) {
        let mut rules = self.rules();
        rules.fail.clear();
        rules.refuse.clear();
    }

    /// Answers to calls matching `selector` are held until [`Self::release`].
    pub fn hold(&self, selector: CallMatch) {
        self.rules().hold.push(selector);
    }

    /// Lets every held answer go, and holds no more.
    pub fn release(&self) {
        self.rules().hold.clear();
        self.inner.released.send_replace(true);
    }

    /// Every state call seen so far, oldest first.
    pub fn calls(&self) -> Vec<SeenCall> {
        self.inner
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Calls answered with an injected failure so far.
    pub fn failed(&self) -> usize {
        self.inner.failed.load(Ordering::SeqCst)
    }

    /// State calls received and not answered yet.
    pub fn in_flight(&self) -> usize {
        self.inner.in_flight.load(Ordering::SeqCst)
    }

    /// Answers held right now.
    pub fn held(&self) -> usize {
        self.inner.held.load(Ordering::SeqCst)
    }

    /// Held answers that were handed back to their caller after [`Self::release`].
    pub fn delivered_after_hold(&self) -> usize {
        self.inner.delivered_after_hold.load(Ordering::SeqCst)
    }
}

async fn intercept(State(faults): State<WorkerFaults>, request: Request, next: Next) -> Response {
    let path = request.uri().path().to_string();
    let api = match path.as_str() {
        paths::WORKER_WAIT_UNTIL => StateApiKind::WaitUntil,
        paths::WORKER_EXECUTE => StateApiKind::Execute,
        _ => return next.run(request).await,
    };
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => bytes,
        Err(error) => return (StatusCode::BAD_REQUEST, error.to_string()).into_response(),
    };
    let Ok(parsed) = serde_json::from_slice::<StateCallBody>(&bytes) else {
        // Not a state call this layer understands: the worker decides.
        return next
            .run(Request::from_parts(parts, Body::from(bytes)))
            .await;
    };
    let call = SeenCall {
        process_id: parsed.context.process_id,
        state_id: parsed.state_id,
        api,
        attempt: parsed.context.attempt,
        idempotency_key: parsed.context.idempotency_key,
    };
    faults
        .inner
        .calls
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(call.clone());
    let inner = &faults.inner;
    let _in_flight = CountGuard::enter(&inner.in_flight);
    let (delay, fail, refuse, hold) = {
        let rules = faults.rules();
        (
            rules.delay,
            rules.fail.iter().any(|m| m.matches(&call)),
            rules
                .refuse
                .iter()
                .find(|(m, _, _)| m.matches(&call))
                .map(|(_, status, error_type)| (*status, error_type.clone())),
            rules.hold.iter().any(|m| m.matches(&call)),
        )
    };
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    if let Some((status, error_type)) = refuse {
        inner.failed.fetch_add(1, Ordering::SeqCst);
        let body = WorkerErrorResponse {
            detail: format!(
                "injected {error_type} for {} attempt {}",
                call.state_id, call.attempt
            ),
            error_type: Some(error_type),
        };
        let status = StatusCode::from_u16(status).expect("a valid status");
        return (status, axum::Json(body)).into_response();
    }
    if fail {
        inner.failed.fetch_add(1, Ordering::SeqCst);
        let body = WorkerErrorResponse {
            detail: format!(
                "injected worker failure for {} attempt {}",
                call.state_id, call.attempt
            ),
            error_type: Some("injected".into()),
        };
        return (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(body)).into_response();
    }
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    if hold {
        let mut released = inner.released.subscribe();
        let _held = CountGuard::enter(&inner.held);
        let _ = released.wait_for(|r| *r).await;
        inner.delivered_after_hold.fetch_add(1, Ordering::SeqCst);
    }
    response
}
