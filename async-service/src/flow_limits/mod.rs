//! Flow limits as this instance applies them: the limits in force (read from the
//! database every [`REFRESH_EVERY`]) shared among the live async instances, and a
//! [`RateGate`] deciding when each state call may go.
//!
//! A limit of R calls a second is shared evenly: with n live async instances each lets
//! R/n through, so the whole service keeps to R while every instance has work of the
//! type, and to less while some have none (a limit is a ceiling, never a promise).
//! Nothing is coordinated per call: the database is read once a second by each
//! instance, not once per call.

mod gate;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

pub use gate::Admission;
use gate::RateGate;
use tokio::sync::watch;
use xdb_persistence::{CallSlotLimits, FlowLimitStore, InstanceRegistry, ServiceKind};
use xdb_protocol::FlowLimitsEntry;

/// How often each instance reads the limits and the live instances: how soon a change
/// applies.
pub const REFRESH_EVERY: Duration = Duration::from_secs(1);
/// The longest a call waits in the instance for its turn, holding its in-flight slot;
/// a longer wait gives its task back, due then (costing no attempt), so that a
/// limited type cannot fill an instance's slots while other types wait.
pub const MAX_HOLD: Duration = Duration::from_millis(200);

/// The limits of one process type: its own, and its states'.
#[derive(Debug, Default, Clone, PartialEq)]
struct TypeLimits {
    whole: Option<f64>,
    states: HashMap<String, f64>,
    whole_calls: Option<u32>,
    state_calls: HashMap<String, u32>,
}

#[derive(Debug, Default)]
struct InForce {
    by_type: HashMap<String, TypeLimits>,
    /// Live async instances, this one included.
    instances: usize,
}

/// The flow limits this instance applies.
#[derive(Debug, Default)]
pub struct FlowLimiter {
    in_force: RwLock<Arc<InForce>>,
    gate: Mutex<RateGate>,
    /// Calls refused a place in a row, by gate key: how long the next refused one
    /// waits before it asks again.
    refusals: Mutex<HashMap<String, u32>>,
}

/// How long a call refused a place waits before asking again: a tenth of a second more
/// for each refusal in a row, up to a second, so that a long queue of waiting calls asks
/// the database a few times a second, not at once.
pub const SLOT_RETRY_STEP: Duration = Duration::from_millis(100);
const SLOT_RETRY_MAX_STEPS: u32 = 10;

/// The gate's key of a type's own limit or a state's, unambiguous whatever the names.
fn key(process_type: &str, state_id: Option<&str>) -> String {
    match state_id {
        None => format!("{}:{process_type}", process_type.len()),
        Some(state) => format!("{}:{process_type}/{state}", process_type.len()),
    }
}

impl FlowLimiter {
    /// When a call of `state_id` of `process_type` may go.
    pub fn admit(&self, process_type: &str, state_id: &str) -> Admission {
        let in_force = self.in_force.read().expect("flow limits lock").clone();
        let Some(limits) = in_force.by_type.get(process_type) else {
            return Admission::Now;
        };
        let share = in_force.instances.max(1) as f64;
        let type_key = key(process_type, None);
        let state_key = key(process_type, Some(state_id));
        let mut applied: Vec<(&str, f64)> = Vec::with_capacity(2);
        if let Some(rate) = limits.whole {
            applied.push((&type_key, rate / share));
        }
        if let Some(rate) = limits.states.get(state_id) {
            applied.push((&state_key, rate / share));
        }
        self.gate.lock().expect("rate gate lock").admit(
            &applied,
            in_force.instances,
            Instant::now(),
            MAX_HOLD,
        )
    }

    /// The concurrency limits a call of `state_id` of `process_type` is under.
    pub fn call_slot_limits(&self, process_type: &str, state_id: &str) -> CallSlotLimits {
        let in_force = self.in_force.read().expect("flow limits lock").clone();
        in_force
            .by_type
            .get(process_type)
            .map(|limits| CallSlotLimits {
                whole: limits.whole_calls,
                state: limits.state_calls.get(state_id).copied(),
            })
            .unwrap_or_default()
    }

    /// Records whether a call of `state_id` of `process_type` got its place; when it did
    /// not, how long it waits before asking again.
    pub fn slot_answer(&self, process_type: &str, state_id: &str, taken: bool) -> Duration {
        let key = key(process_type, Some(state_id));
        let mut refusals = self.refusals.lock().expect("refusals lock");
        if taken {
            refusals.remove(&key);
            return Duration::ZERO;
        }
        let count = refusals.entry(key).or_insert(0);
        *count = (*count + 1).min(SLOT_RETRY_MAX_STEPS);
        SLOT_RETRY_STEP * *count
    }

    /// Puts `entries` (the limits in force) and the live instance count into effect.
    pub fn replace(&self, entries: &[FlowLimitsEntry], instances: usize) {
        let mut by_type: HashMap<String, TypeLimits> = HashMap::new();
        for entry in entries {
            let effective = &entry.effective;
            if effective.is_unlimited() {
                continue;
            }
            let limits = by_type.entry(entry.process_type.clone()).or_default();
            match &entry.state_id {
                None => {
                    limits.whole = effective.max_calls_per_second;
                    limits.whole_calls = effective.max_concurrent_calls;
                }
                Some(state) => {
                    if let Some(rate) = effective.max_calls_per_second {
                        limits.states.insert(state.clone(), rate);
                    }
                    if let Some(calls) = effective.max_concurrent_calls {
                        limits.state_calls.insert(state.clone(), calls);
                    }
                }
            }
        }
        let mut kept: HashMap<String, ()> = HashMap::new();
        for (process_type, limits) in &by_type {
            if limits.whole.is_some() {
                kept.insert(key(process_type, None), ());
            }
            for state in limits.states.keys() {
                kept.insert(key(process_type, Some(state)), ());
            }
        }
        self.gate
            .lock()
            .expect("rate gate lock")
            .retain(|k| kept.contains_key(k));
        *self.in_force.write().expect("flow limits lock") =
            Arc::new(InForce { by_type, instances });
    }

    /// Reads the limits and the live instances once and puts them into effect. The
    /// service does so before it claims its first task, so that no call of a limited
    /// type runs unlimited while an instance starts.
    pub async fn refresh<S>(
        &self,
        store: &S,
        liveness_timeout: Duration,
    ) -> Result<(), xdb_persistence::StoreError>
    where
        S: FlowLimitStore + InstanceRegistry + ?Sized,
    {
        let entries = store.list_flow_limits(None).await?;
        let instances = store
            .live_instances(ServiceKind::Async, liveness_timeout)
            .await?
            .len();
        self.replace(&entries, instances);
        Ok(())
    }

    /// Reads the limits and the live instances every [`REFRESH_EVERY`] until `stop`; a
    /// failed read keeps the limits last read (the database's trouble is reported by
    /// the services' own health).
    pub async fn refresh_until<S>(
        self: Arc<Self>,
        store: Arc<S>,
        liveness_timeout: Duration,
        mut stop: watch::Receiver<bool>,
    ) where
        S: FlowLimitStore + InstanceRegistry + ?Sized,
    {
        loop {
            if let Err(error) = self.refresh(store.as_ref(), liveness_timeout).await {
                tracing::debug!(%error, "flow limits not read; the last ones apply");
            }
            tokio::select! {
                _ = tokio::time::sleep(REFRESH_EVERY) => {}
                _ = stop.changed() => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xdb_protocol::FlowLimits;

    fn entry(process_type: &str, state: Option<&str>, rate: Option<f64>) -> FlowLimitsEntry {
        FlowLimitsEntry {
            process_type: process_type.into(),
            state_id: state.map(Into::into),
            declared: None,
            override_limits: None,
            effective: FlowLimits {
                max_calls_per_second: rate,
                ..Default::default()
            },
            updated_timestamp_ms: 0,
        }
    }

    #[test]
    fn concurrency_limits_are_read_per_state_and_refused_calls_wait_longer_each_time() {
        let limiter = FlowLimiter::default();
        let mut whole = entry("t", None, None);
        whole.effective.max_concurrent_calls = Some(8);
        let mut state = entry("t", Some("s"), None);
        state.effective.max_concurrent_calls = Some(2);
        limiter.replace(&[whole, state], 3);
        assert_eq!(
            limiter.call_slot_limits("t", "s"),
            CallSlotLimits {
                whole: Some(8),
                state: Some(2)
            }
        );
        assert_eq!(limiter.call_slot_limits("t", "other").state, None);
        assert_eq!(
            limiter.call_slot_limits("u", "s"),
            CallSlotLimits::default()
        );
        // Concurrency limits are not shared out: they hold across all instances.
        assert_eq!(limiter.admit("t", "s"), Admission::Now);
        assert_eq!(limiter.slot_answer("t", "s", false), SLOT_RETRY_STEP);
        assert_eq!(limiter.slot_answer("t", "s", false), SLOT_RETRY_STEP * 2);
        for _ in 0..20 {
            limiter.slot_answer("t", "s", false);
        }
        assert_eq!(limiter.slot_answer("t", "s", false), Duration::from_secs(1));
        assert_eq!(limiter.slot_answer("t", "s", true), Duration::ZERO);
        assert_eq!(limiter.slot_answer("t", "s", false), SLOT_RETRY_STEP);
    }

    #[test]
    fn an_unlimited_type_is_never_held() {
        let limiter = FlowLimiter::default();
        limiter.replace(&[entry("other", None, Some(1.0))], 1);
        for _ in 0..100 {
            assert_eq!(limiter.admit("free", "s"), Admission::Now);
        }
    }

    #[test]
    fn each_instance_takes_its_share_of_the_limit() {
        let limiter = FlowLimiter::default();
        // 10 a second among 2 instances: 5 here, 200 ms apart.
        limiter.replace(&[entry("t", None, Some(10.0))], 2);
        assert_eq!(limiter.admit("t", "s"), Admission::Now);
        match limiter.admit("t", "s") {
            Admission::After(wait) => assert!(wait > Duration::from_millis(190), "{wait:?}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(limiter.admit("t", "s"), Admission::HoldBack(_)));
    }

    #[test]
    fn a_state_limit_applies_to_that_state_only_and_a_lifted_limit_frees_it() {
        let limiter = FlowLimiter::default();
        limiter.replace(&[entry("t", Some("slow"), Some(1.0))], 1);
        assert_eq!(limiter.admit("t", "slow"), Admission::Now);
        assert!(matches!(limiter.admit("t", "slow"), Admission::HoldBack(_)));
        assert_eq!(limiter.admit("t", "fast"), Admission::Now);
        assert_eq!(limiter.admit("t", "fast"), Admission::Now);
        limiter.replace(&[entry("t", Some("slow"), None)], 1);
        assert_eq!(limiter.admit("t", "slow"), Admission::Now);
    }
}
