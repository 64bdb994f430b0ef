//! Whether the instance's task source can still get work, for the health probes.
//!
//! The database queue needs nothing beyond the database, which readiness checks anyway.
//! A Pulsar consumer can die on its own: the client gives up reconnecting after a broker
//! outage and ends the consumer's stream, and from then on the instance would look
//! healthy while it never receives another task. [`ConsumerHealth`] records that, so the
//! probes fail and the orchestrator restarts the instance (which subscribes afresh).

use std::sync::Mutex;

/// What the health probes ask of the task source.
pub(crate) trait SourceHealth: Send + Sync {
    /// `None` while the source can get work; otherwise why it cannot, for the probe's
    /// answer and the logs.
    fn problem(&self) -> Option<String>;
}

/// The database queue: nothing of its own can die.
pub(crate) struct AlwaysHealthy;

impl SourceHealth for AlwaysHealthy {
    fn problem(&self) -> Option<String> {
        None
    }
}

/// The consumers of the Pulsar source that stopped for good, by name.
#[derive(Default)]
pub(crate) struct ConsumerHealth {
    dead: Mutex<Vec<String>>,
}

impl ConsumerHealth {
    /// Records that consumer `name` stopped (its stream ended, or its loop panicked)
    /// while the instance was not shutting down: it will never deliver another message.
    pub fn died(&self, name: &str, why: &str) {
        tracing::error!(
            consumer = name,
            why,
            "a Pulsar consumer died; the instance reports unhealthy"
        );
        self.dead
            .lock()
            .expect("never poisoned")
            .push(format!("Pulsar consumer {name}: {why}"));
    }
}

impl SourceHealth for ConsumerHealth {
    fn problem(&self) -> Option<String> {
        let dead = self.dead.lock().expect("never poisoned");
        (!dead.is_empty()).then(|| dead.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn healthy_until_a_consumer_dies_then_names_it() {
        let health = ConsumerHealth::default();
        assert_eq!(health.problem(), None);
        health.died("timers", "the stream ended");
        let problem = health.problem().expect("unhealthy");
        assert!(
            problem.contains("timers") && problem.contains("the stream ended"),
            "{problem}"
        );
        assert_eq!(AlwaysHealthy.problem(), None);
    }
}
