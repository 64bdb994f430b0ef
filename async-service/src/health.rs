//! Whether the instance's task source can still get work, for the health probes.
//!
//! The `pulsar` client can give up on a consumer after a broker outage and end its
//! stream; the Pulsar source then subscribes again by itself
//! (`pulsar_source/subscriptions.rs`). [`ConsumerHealth`] shows that meanwhile, so the
//! instance reports not ready (it gets no work) but stays alive: no restart is needed.
//! The database queue's claim loop could end for good (a panic): that is recorded too,
//! and then both probes fail so that the orchestrator restarts the instance. The probes
//! read only this in-process record, never the broker or the database.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

/// What the health probes ask of the task source.
pub(crate) trait SourceHealth: Send + Sync {
    /// `None` while the source can get work; otherwise why it cannot, for the probe's
    /// answer and the logs.
    fn problem(&self) -> Option<String>;

    /// Why the source gets no work for now while it recovers by itself (a Pulsar
    /// consumer subscribing again): not ready, but alive.
    fn recovering(&self) -> Option<String> {
        None
    }
}

/// The loops of the task source: those that stopped for good (the database queue's
/// claim loop), and the Pulsar consumers being subscribed again.
#[derive(Default)]
pub(crate) struct ConsumerHealth {
    /// What stopped for good.
    dead: Mutex<Vec<String>>,
    /// Consumers being subscribed again, by name: why they were lost, or the last
    /// failed try.
    resubscribing: Mutex<BTreeMap<String, String>>,
}

impl ConsumerHealth {
    /// Records that the client gave up on consumer `name`; the source subscribes it
    /// again ([`ConsumerHealth::subscribed`] when done).
    pub fn lost(&self, name: &str, why: &str) {
        tracing::warn!(
            consumer = name,
            why,
            "a Pulsar consumer was lost; subscribing again"
        );
        self.resubscribing(name, why);
    }

    /// Consumer `name` is still being subscribed again; `why`: the last failure.
    pub fn resubscribing(&self, name: &str, why: &str) {
        self.resubscribing
            .lock()
            .expect("never poisoned")
            .insert(name.to_owned(), why.to_owned());
    }

    /// Consumer `name` is subscribed again.
    pub fn subscribed(&self, name: &str) {
        self.resubscribing
            .lock()
            .expect("never poisoned")
            .remove(name);
    }

    fn record(&self, problem: String) {
        self.dead.lock().expect("never poisoned").push(problem);
    }
}

/// Held by the database queue's claim loop: when dropped while the instance is not
/// draining (the loop ended or panicked; it never returns otherwise), records that the
/// instance gets no more work.
pub(crate) struct ClaimLoopWatch {
    pub health: Arc<ConsumerHealth>,
    pub draining: watch::Receiver<bool>,
}

impl Drop for ClaimLoopWatch {
    fn drop(&mut self) {
        if !*self.draining.borrow() {
            tracing::error!(
                "the database queue's claim loop ended; the instance reports unhealthy"
            );
            self.health
                .record("the database queue's claim loop ended".into());
        }
    }
}

impl SourceHealth for ConsumerHealth {
    fn problem(&self) -> Option<String> {
        let dead = self.dead.lock().expect("never poisoned");
        (!dead.is_empty()).then(|| dead.join("; "))
    }

    fn recovering(&self) -> Option<String> {
        let resubscribing = self.resubscribing.lock().expect("never poisoned");
        (!resubscribing.is_empty()).then(|| {
            resubscribing
                .iter()
                .map(|(name, why)| format!("Pulsar consumer {name}: subscribing again ({why})"))
                .collect::<Vec<_>>()
                .join("; ")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_consumer_is_recovering_until_subscribed_again_and_never_dead() {
        let health = ConsumerHealth::default();
        assert_eq!((health.problem(), health.recovering()), (None, None));
        health.lost("change events", "its stream ended");
        let why = health.recovering().expect("recovering");
        assert!(why.contains("change events") && why.contains("its stream ended"));
        health.resubscribing("change events", "Not enough non-faulty bookies");
        let why = health.recovering().expect("still recovering");
        assert!(why.contains("bookies"), "{why}");
        assert_eq!(health.problem(), None, "alive all along");
        health.subscribed("change events");
        assert_eq!(health.recovering(), None);
    }

    #[tokio::test]
    async fn a_claim_loop_that_ends_before_draining_is_recorded() {
        let health = Arc::new(ConsumerHealth::default());
        let (drain, draining) = watch::channel(false);
        // Ended while draining: the way every instance stops.
        drain.send_replace(true);
        drop(ClaimLoopWatch {
            health: health.clone(),
            draining: draining.clone(),
        });
        assert_eq!(health.problem(), None);
        // Ended (a panic unwinds through it) while serving.
        drain.send_replace(false);
        let panicked = tokio::spawn({
            let watch = ClaimLoopWatch {
                health: health.clone(),
                draining,
            };
            async move {
                let _watch = watch;
                panic!("the claim loop broke");
            }
        });
        assert!(panicked.await.is_err());
        let problem = health.problem().expect("unhealthy");
        assert!(problem.contains("claim loop ended"), "{problem}");
    }
}
