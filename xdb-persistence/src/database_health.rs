//! Whether the database answers, as the services' readiness probes report it.
//!
//! A probe that read through the store would queue behind request traffic: a saturated
//! instance (every pooled connection busy) would turn unready and be taken out of its
//! Service exactly when it is needed. So a background task asks the database on a
//! connection of its own ([`DatabaseProbe`]), every [`PROBE_EVERY`], within
//! [`PROBE_LIMIT`], and keeps the verdict; the probes read that verdict and never touch
//! the database themselves. It must never use the store's pools: a busy pool says
//! nothing about whether the database is there.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::task::JoinHandle;

use crate::StoreError;

/// How often the database is asked.
pub const PROBE_EVERY: Duration = Duration::from_secs(1);

/// How long one probe may take, connecting included. A database that cannot answer
/// `SELECT 1` on an idle connection within this is as good as gone for a request.
pub const PROBE_LIMIT: Duration = Duration::from_secs(3);

/// One round trip to the database on the probe's own connection, outside the pools
/// requests use (a store keeps one connection for it, reopened when it breaks).
#[async_trait]
pub trait DatabaseProbe: Send + Sync + 'static {
    async fn probe(&self) -> Result<(), StoreError>;
}

/// The verdict of the last probe, kept by a background task; stops with the last clone.
#[derive(Clone)]
pub struct DatabaseHealth {
    verdict: Arc<Mutex<Option<String>>>,
    _prober: Arc<AbortOnDrop>,
}

struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl DatabaseHealth {
    /// Starts probing through `probe`. Healthy until a probe says otherwise: the store
    /// behind it has just connected.
    pub fn start(probe: Arc<dyn DatabaseProbe>) -> Self {
        Self::start_with(probe, PROBE_EVERY, PROBE_LIMIT)
    }

    /// [`DatabaseHealth::start`] with another cadence and limit.
    pub fn start_with(probe: Arc<dyn DatabaseProbe>, every: Duration, limit: Duration) -> Self {
        let verdict = Arc::new(Mutex::new(None));
        let prober = tokio::spawn({
            let verdict = verdict.clone();
            async move {
                let mut ticks = tokio::time::interval(every);
                ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    ticks.tick().await;
                    let outcome = tokio::time::timeout(limit, probe.probe()).await;
                    let problem = problem_of(outcome, limit);
                    let mut kept = verdict.lock().expect("never poisoned");
                    if problem.is_some() != kept.is_some() {
                        match &problem {
                            Some(problem) => tracing::warn!(%problem, "the database probe failed"),
                            None => tracing::info!("the database probe passes again"),
                        }
                    }
                    *kept = problem;
                }
            }
        });
        Self {
            verdict,
            _prober: Arc::new(AbortOnDrop(prober)),
        }
    }

    /// `None` while the last probe passed; otherwise why it failed.
    pub fn problem(&self) -> Option<String> {
        self.verdict.lock().expect("never poisoned").clone()
    }
}

/// What a probe's outcome (or its running out of `limit`) says.
fn problem_of(
    outcome: Result<Result<(), StoreError>, tokio::time::error::Elapsed>,
    limit: Duration,
) -> Option<String> {
    match outcome {
        Ok(Ok(())) => None,
        Ok(Err(error)) => Some(format!("the database does not answer: {error}")),
        Err(_) => Some(format!(
            "the database did not answer within {} ms",
            limit.as_millis()
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU8, Ordering};

    use super::*;

    /// Answers as told: 0 at once, 1 with an error, 2 never.
    #[derive(Default)]
    struct Scripted(AtomicU8);

    #[async_trait]
    impl DatabaseProbe for Scripted {
        async fn probe(&self) -> Result<(), StoreError> {
            match self.0.load(Ordering::SeqCst) {
                0 => Ok(()),
                1 => Err(StoreError::ConnectionLost("refused".into())),
                _ => std::future::pending().await,
            }
        }
    }

    async fn settle(health: &DatabaseHealth, want_problem: bool) -> Option<String> {
        // Paused time: each sleep lets the prober run its next probe.
        for _ in 0..100 {
            let problem = health.problem();
            if problem.is_some() == want_problem {
                return problem;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the verdict never became {want_problem}");
    }

    #[tokio::test(start_paused = true)]
    async fn the_verdict_follows_the_probe_and_a_hung_probe_counts_as_failed() {
        let probe = Arc::new(Scripted::default());
        let health = DatabaseHealth::start_with(
            probe.clone(),
            Duration::from_secs(1),
            Duration::from_secs(3),
        );
        assert_eq!(health.problem(), None);
        probe.0.store(1, Ordering::SeqCst);
        let refused = settle(&health, true).await.unwrap();
        assert!(refused.contains("refused"), "{refused}");
        probe.0.store(0, Ordering::SeqCst);
        settle(&health, false).await;
        probe.0.store(2, Ordering::SeqCst);
        let hung = settle(&health, true).await.unwrap();
        assert!(hung.contains("within 3000 ms"), "{hung}");
        probe.0.store(0, Ordering::SeqCst);
        settle(&health, false).await;
    }
}
