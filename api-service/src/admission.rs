//! Admission: how many service-API requests this instance works on at once.
//!
//! Without a bound, a burst of requests (or a database that answers slowly) queues every
//! request in memory, on the database pool, until clients time out. Here a request takes
//! a slot before anything of it is read, waits at most `api.admission_wait_ms` for one
//! when all are taken, and is otherwise refused with 503 `OVERLOADED` and
//! `Retry-After: 1`, having changed nothing. Two budgets: short calls
//! (`api.max_in_flight_requests`), and wait-for-completion long polls
//! (`api.max_waiting_requests`), which would otherwise hold short calls' slots for
//! minutes while holding no connection. Health probes, `/metrics`, the OpenAPI document,
//! the console's assets and the internal notify path are never refused: an orchestrator
//! must see an overloaded instance as alive, and a wake-up costs nothing.
//!
//! The second refusal, a request admitted but left waiting `api.pool_wait_ms` for a
//! database connection, is made by the store (`StoreError::Overloaded`); it is counted
//! here too, so `xdb_api_requests_refused_total` has every refusal by reason.
//!
//! tokio's semaphore rather than `tower::limit`: `ConcurrencyLimit` waits for a slot
//! without bound and `LoadShed` refuses without waiting at all, while a bounded wait is
//! what absorbs a burst on a busy but healthy instance. The wait's default (500 ms) is
//! set against `Retry-After`'s second: at 100 ms, 116 of 500 starts sent together on
//! MariaDB were refused and came back a second later; waiting, all 500 were answered
//! within 0.3 s.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use xdb_config::ApiSettings;
use xdb_protocol::paths;

use crate::error::Overloaded;
use crate::{ApiError, ApiMetrics};

/// `Retry-After` of every refusal, in seconds: long enough for a burst to drain, short
/// enough that a client retrying after it barely notices.
pub const RETRY_AFTER_SECONDS: u64 = 1;

/// Why a request was refused: the `reason` label of `xdb_api_requests_refused_total`.
pub(crate) mod reason {
    /// Every short-call slot stayed taken for `api.admission_wait_ms`.
    pub const IN_FLIGHT: &str = "in_flight";
    /// Every wait-for-completion slot stayed taken for `api.admission_wait_ms`.
    pub const WAITING: &str = "waiting";
    /// No database connection became free within `api.pool_wait_ms`.
    pub const POOL_WAIT: &str = "pool_wait";
    /// Every reason, so that each series is reported from the start.
    pub const ALL: [&str; 3] = [IN_FLIGHT, WAITING, POOL_WAIT];
}

/// Which budget a path draws on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Budget {
    Calls,
    Waits,
    Exempt,
}

fn budget_of(path: &str) -> Budget {
    if path == paths::WAIT_FOR_COMPLETION {
        Budget::Waits
    } else if paths::is_client_path(path) {
        Budget::Calls
    } else {
        Budget::Exempt
    }
}

/// The instance's slots; shared by every request of one router.
pub(crate) struct Admission {
    calls: Arc<Semaphore>,
    waits: Arc<Semaphore>,
    wait: Duration,
    metrics: Arc<ApiMetrics>,
}

impl Admission {
    pub fn new(settings: &ApiSettings, metrics: Arc<ApiMetrics>) -> Self {
        Self {
            calls: Arc::new(Semaphore::new(settings.in_flight_limit())),
            waits: Arc::new(Semaphore::new(settings.max_waiting_requests)),
            wait: Duration::from_millis(settings.admission_wait_ms),
            metrics,
        }
    }

    /// A slot of `budget`, or the reason none became free in time.
    async fn acquire(&self, budget: Budget) -> Result<Option<OwnedSemaphorePermit>, &'static str> {
        let (slots, refusal) = match budget {
            Budget::Calls => (&self.calls, reason::IN_FLIGHT),
            Budget::Waits => (&self.waits, reason::WAITING),
            Budget::Exempt => return Ok(None),
        };
        if let Ok(permit) = slots.clone().try_acquire_owned() {
            return Ok(Some(permit));
        }
        match tokio::time::timeout(self.wait, slots.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(Some(permit)),
            // Never closed; a timeout is the refusal.
            Ok(Err(_)) | Err(_) => Err(refusal),
        }
    }

    fn count(&self, reason: &str) {
        self.metrics.refused.with_label_values(&[reason]).inc();
    }
}

/// The middleware: admits `request` to `next` while it holds a slot, or refuses it.
pub(crate) async fn admit(
    State(admission): State<Arc<Admission>>,
    request: Request,
    next: Next,
) -> Response {
    let permit = match admission.acquire(budget_of(request.uri().path())).await {
        Ok(permit) => permit,
        Err(refusal) => {
            admission.count(refusal);
            let message = match refusal {
                reason::WAITING => "the service is at its limit of wait-for-completion calls",
                _ => "the service is at its limit of requests in flight",
            };
            return ApiError::overloaded(format!(
                "{message}; try again after {RETRY_AFTER_SECONDS} s"
            ))
            .into_response();
        }
    };
    let response = next.run(request).await;
    drop(permit);
    if response.extensions().get::<Overloaded>().is_some() {
        admission.count(reason::POOL_WAIT);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admission(calls: usize, waits: usize, wait_ms: u64) -> Admission {
        let settings = ApiSettings {
            max_in_flight_requests: Some(calls),
            max_waiting_requests: waits,
            admission_wait_ms: wait_ms,
            ..ApiSettings::default()
        };
        Admission::new(&settings, Arc::new(ApiMetrics::new()))
    }

    #[test]
    fn probes_documents_and_wake_ups_are_never_admitted_against_a_budget() {
        assert_eq!(budget_of(paths::START), Budget::Calls);
        assert_eq!(budget_of(paths::CONSOLE_ATTRIBUTES), Budget::Calls);
        assert_eq!(budget_of(paths::WAIT_FOR_COMPLETION), Budget::Waits);
        for exempt in [
            "/health/live",
            "/health/ready",
            "/metrics",
            paths::OPENAPI,
            paths::INTERNAL_NOTIFY,
            "/ui/app.js",
        ] {
            assert_eq!(budget_of(exempt), Budget::Exempt, "{exempt}");
        }
    }

    #[test]
    fn the_default_limit_is_sized_from_the_pool() {
        let settings = ApiSettings {
            pool_size: 5,
            ..ApiSettings::default()
        };
        assert_eq!(settings.in_flight_limit(), 40);
    }

    #[tokio::test]
    async fn a_full_budget_refuses_after_the_wait_and_leaves_the_other_budget_free() {
        let admission = admission(1, 1, 50);
        let held = admission.acquire(Budget::Calls).await.unwrap();
        assert!(held.is_some());
        let began = tokio::time::Instant::now();
        assert_eq!(
            admission.acquire(Budget::Calls).await.unwrap_err(),
            reason::IN_FLIGHT
        );
        let waited = began.elapsed();
        assert!(
            waited >= Duration::from_millis(50) && waited < Duration::from_secs(2),
            "{waited:?}"
        );
        // Long polls have slots of their own.
        let waiting = admission.acquire(Budget::Waits).await.unwrap();
        assert!(waiting.is_some());
        assert_eq!(
            admission.acquire(Budget::Waits).await.unwrap_err(),
            reason::WAITING
        );
        assert!(admission.acquire(Budget::Exempt).await.unwrap().is_none());
        drop(held);
        assert!(admission.acquire(Budget::Calls).await.unwrap().is_some());
    }

    #[tokio::test]
    async fn a_slot_freed_during_the_wait_admits_the_waiting_request() {
        let admission = Arc::new(admission(1, 1, 60_000));
        let held = admission.acquire(Budget::Calls).await.unwrap();
        let waiter = tokio::spawn({
            let admission = admission.clone();
            async move { admission.acquire(Budget::Calls).await.map(|p| p.is_some()) }
        });
        // Freed while the waiter waits (or before it asks): admitted either way.
        tokio::task::yield_now().await;
        drop(held);
        assert_eq!(waiter.await.unwrap(), Ok(true));
    }
}
