//! [`Chaos`]: a layer over a worker's router that, at random (seeded), answers a state
//! call with a 500, hangs past the caller's timeout, or answers 200 with a malformed
//! body, instead of letting the worker answer. It counts what it did, for the report.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// How often each fault happens, per state call (the rest go to the worker).
#[derive(Debug, Clone, Copy)]
pub struct ChaosRates {
    pub server_error: f64,
    pub hang: f64,
    pub malformed: f64,
    /// How long a hanging call hangs: longer than the state's API timeout.
    pub hang_for: Duration,
}

/// Faults injected so far, by kind.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ChaosCounts {
    pub passed: u64,
    pub server_errors: u64,
    pub hangs: u64,
    pub malformed: u64,
}

#[derive(Clone)]
pub struct Chaos {
    inner: Arc<Inner>,
}

struct Inner {
    rates: ChaosRates,
    rng: Mutex<StdRng>,
    enabled: std::sync::atomic::AtomicBool,
    passed: AtomicU64,
    server_errors: AtomicU64,
    hangs: AtomicU64,
    malformed: AtomicU64,
}

enum Fault {
    ServerError,
    Hang,
    Malformed,
}

impl Chaos {
    pub fn new(rates: ChaosRates, seed: u64) -> Self {
        Self {
            inner: Arc::new(Inner {
                rates,
                rng: Mutex::new(StdRng::seed_from_u64(seed)),
                enabled: true.into(),
                passed: AtomicU64::new(0),
                server_errors: AtomicU64::new(0),
                hangs: AtomicU64::new(0),
                malformed: AtomicU64::new(0),
            }),
        }
    }

    /// Wraps `router`; only the state APIs (wait-until, execute) are disturbed.
    pub fn wrap(&self, router: Router) -> Router {
        router.layer(axum::middleware::from_fn_with_state(self.clone(), disturb))
    }

    /// Stops injecting faults (so the run can finish).
    pub fn calm_down(&self) {
        self.inner.enabled.store(false, Ordering::SeqCst);
    }

    pub fn counts(&self) -> ChaosCounts {
        let load = |c: &AtomicU64| c.load(Ordering::SeqCst);
        ChaosCounts {
            passed: load(&self.inner.passed),
            server_errors: load(&self.inner.server_errors),
            hangs: load(&self.inner.hangs),
            malformed: load(&self.inner.malformed),
        }
    }

    fn draw(&self) -> Option<Fault> {
        if !self.inner.enabled.load(Ordering::SeqCst) {
            return None;
        }
        let r = &self.inner.rates;
        let x: f64 = self.inner.rng.lock().expect("never poisoned").gen();
        if x < r.server_error {
            Some(Fault::ServerError)
        } else if x < r.server_error + r.hang {
            Some(Fault::Hang)
        } else if x < r.server_error + r.hang + r.malformed {
            Some(Fault::Malformed)
        } else {
            None
        }
    }
}

async fn disturb(State(chaos): State<Chaos>, request: Request, next: Next) -> Response {
    let inner = &chaos.inner;
    if !request.uri().path().contains("/async-state/") {
        return next.run(request).await;
    }
    match chaos.draw() {
        None => {
            inner.passed.fetch_add(1, Ordering::SeqCst);
            next.run(request).await
        }
        Some(Fault::ServerError) => {
            inner.server_errors.fetch_add(1, Ordering::SeqCst);
            (StatusCode::INTERNAL_SERVER_ERROR, "injected failure").into_response()
        }
        Some(Fault::Hang) => {
            inner.hangs.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(inner.rates.hang_for).await;
            (StatusCode::SERVICE_UNAVAILABLE, "hung").into_response()
        }
        Some(Fault::Malformed) => {
            inner.malformed.fetch_add(1, Ordering::SeqCst);
            (
                StatusCode::OK,
                [("content-type", "application/json")],
                "{\"stateDecision\": [not json",
            )
                .into_response()
        }
    }
}
