//! The calls an instance runs at once in Pulsar mode (`async.max_in_flight`), given out
//! by priority and fairness key. The broker delivers change events in the order the
//! database wrote them, and an instance under a backlog holds many delivered messages
//! waiting for a place: the next free place goes to the waiting message of the highest
//! priority (1 first), and within a priority the fairness keys take turns, each key
//! taking up to its weight of places a turn (self-clocked fair queuing: a message's tag
//! is its key's previous tag, or the tag last served if that is later, plus
//! `MAX_WEIGHT / weight`; the smallest tag goes first), the messages without a key
//! being one key of weight 1; within a key, the one that asked first. So a start of
//! priority 1, or a key's first start beside another key's backlog, overtakes the
//! backlog an instance has received, though not what the broker has yet to deliver.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;
use xdb_protocol::{fairness, priority};

/// What a message waits for a place with: its task's priority and fairness key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PlaceRequest {
    pub priority: u8,
    /// Empty: none (the key every task without one shares).
    pub fairness_key: String,
    pub fairness_weight: u32,
}

impl PlaceRequest {
    /// At `priority`, without a fairness key.
    pub fn keyless(priority: u8) -> Self {
        Self {
            priority,
            fairness_key: String::new(),
            fairness_weight: fairness::DEFAULT_WEIGHT,
        }
    }
}

/// Where a waiter stands: (priority, tag, order asked).
type WaitKey = (u8, u64, u64);

/// Keys' tags are forgotten once this many are kept and theirs is past.
const KEPT_TAGS: usize = 4096;

/// Places for calls, each taken with a priority.
#[derive(Debug)]
pub(crate) struct PriorityPermits {
    state: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct State {
    free: usize,
    /// Numbers the waiters in the order they asked.
    asked: u64,
    /// Who waits, first to be served first.
    waiting: BTreeMap<WaitKey, oneshot::Sender<()>>,
    /// Each priority's tag last served: its virtual time.
    served: [u64; priority::LOWEST as usize + 1],
    /// Each (priority, key)'s last tag given.
    tags: HashMap<(u8, String), u64>,
}

impl State {
    /// A place came free: to the first waiter, or back to the free ones.
    fn release(&mut self) {
        while let Some(((priority, tag, _), waiter)) = self.waiting.pop_first() {
            // A waiter leaves the map before it stops listening (see `Waiting`), so
            // this succeeds; were it not to, the place goes to the next.
            if waiter.send(()).is_ok() {
                let served = &mut self.served[usize::from(priority)];
                *served = (*served).max(tag);
                return;
            }
        }
        self.free += 1;
    }

    /// The tag of a message of `request` that asks now.
    fn tag(&mut self, request: &PlaceRequest) -> u64 {
        let priority = request.priority.min(priority::LOWEST);
        let served = self.served[usize::from(priority)];
        let cost = u64::from(
            fairness::MAX_WEIGHT / request.fairness_weight.clamp(1, fairness::MAX_WEIGHT),
        );
        if self.tags.len() >= KEPT_TAGS {
            // A key whose last tag is served starts from the virtual time anyway.
            let served = self.served;
            self.tags
                .retain(|(priority, _), tag| *tag > served[usize::from(*priority)]);
        }
        let last = self
            .tags
            .entry((priority, request.fairness_key.clone()))
            .or_insert(0);
        *last = (*last).max(served) + cost;
        *last
    }
}

/// A place taken; given back when dropped.
#[derive(Debug)]
pub(crate) struct Permit {
    state: Arc<Mutex<State>>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        lock(&self.state).release();
    }
}

/// A waiter's place in the queue: leaves it when the wait is dropped (a shutdown), and
/// passes on a place that was handed to it after it stopped waiting.
struct Waiting {
    state: Arc<Mutex<State>>,
    key: WaitKey,
    handed: oneshot::Receiver<()>,
    served: bool,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if self.served {
            return;
        }
        let mut state = lock(&self.state);
        if state.waiting.remove(&self.key).is_none() {
            // Handed a place it never took.
            state.release();
        }
    }
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    // Nothing panics while holding it; a poisoned lock still holds a consistent count.
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A priority read from a message: the default when absent (older services and schemas)
/// or out of bounds.
pub(super) fn priority_or_default(read: i64) -> u8 {
    u8::try_from(read)
        .ok()
        .filter(|p| (priority::HIGHEST..=priority::LOWEST).contains(p))
        .unwrap_or(priority::DEFAULT)
}

impl PriorityPermits {
    pub fn new(places: usize) -> Self {
        Self {
            state: Arc::new(Mutex::new(State {
                free: places,
                asked: 0,
                waiting: BTreeMap::new(),
                served: [0; priority::LOWEST as usize + 1],
                tags: HashMap::new(),
            })),
        }
    }

    /// Waits for a place: at once when one is free and nobody waits, else after every
    /// waiter of a higher priority and those of the same priority ahead of it in the
    /// keys' turns (see the module).
    pub async fn acquire(&self, request: &PlaceRequest) -> Permit {
        let mut waiting = {
            let mut state = lock(&self.state);
            if state.free > 0 && state.waiting.is_empty() {
                state.free -= 1;
                return Permit {
                    state: self.state.clone(),
                };
            }
            let (sender, handed) = oneshot::channel();
            let tag = state.tag(request);
            let key = (request.priority, tag, state.asked);
            state.asked += 1;
            state.waiting.insert(key, sender);
            Waiting {
                state: self.state.clone(),
                key,
                handed,
                served: false,
            }
        };
        // The sender lives in the map until it is used, so the wait ends with a place.
        let _ = (&mut waiting.handed).await;
        waiting.served = true;
        Permit {
            state: self.state.clone(),
        }
    }

    /// Places free now.
    #[cfg(test)]
    fn available(&self) -> usize {
        lock(&self.state).free
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Lets spawned tasks run until they wait.
    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn a_free_place_is_taken_at_once_and_given_back_on_drop() {
        let permits = PriorityPermits::new(2);
        let first = permits.acquire(&PlaceRequest::keyless(3)).await;
        let _second = permits.acquire(&PlaceRequest::keyless(5)).await;
        assert_eq!(permits.available(), 0);
        drop(first);
        assert_eq!(permits.available(), 1);
    }

    #[tokio::test]
    async fn waiters_are_served_by_priority_then_in_the_order_they_asked() {
        let permits = Arc::new(PriorityPermits::new(1));
        let held = permits.acquire(&PlaceRequest::keyless(3)).await;
        let (order_tx, mut order) = tokio::sync::mpsc::unbounded_channel();
        for (name, priority) in [("low-a", 5), ("usual", 3), ("low-b", 5), ("urgent", 1)] {
            let permits = permits.clone();
            let order_tx = order_tx.clone();
            tokio::spawn(async move {
                let _permit = permits.acquire(&PlaceRequest::keyless(priority)).await;
                order_tx.send(name).unwrap();
            });
            settle().await;
        }
        drop(held);
        let mut served = Vec::new();
        for _ in 0..4 {
            served.push(order.recv().await.unwrap());
        }
        assert_eq!(served, ["urgent", "usual", "low-a", "low-b"]);
        settle().await;
        assert_eq!(permits.available(), 1, "every place came back");
    }

    #[tokio::test]
    async fn fairness_keys_take_turns_by_weight_within_a_priority() {
        let permits = Arc::new(PriorityPermits::new(1));
        let held = permits.acquire(&PlaceRequest::keyless(3)).await;
        let (order_tx, mut order) = tokio::sync::mpsc::unbounded_channel();
        let keyed = |key: &str, weight| PlaceRequest {
            priority: 3,
            fairness_key: key.into(),
            fairness_weight: weight,
        };
        // A backlog of one key, then another key's and two keyless, then a heavy key's.
        let mut asks: Vec<(String, PlaceRequest)> =
            (0..6).map(|n| (format!("a{n}"), keyed("a", 1))).collect();
        asks.extend((0..2).map(|n| (format!("b{n}"), keyed("b", 1))));
        asks.push(("none".into(), PlaceRequest::keyless(3)));
        asks.extend((0..4).map(|n| (format!("h{n}"), keyed("h", 2))));
        let asked = asks.len();
        for (name, request) in asks {
            let permits = permits.clone();
            let order_tx = order_tx.clone();
            tokio::spawn(async move {
                let _permit = permits.acquire(&request).await;
                order_tx.send(name).unwrap();
            });
            settle().await;
        }
        drop(held);
        let mut served = Vec::new();
        for _ in 0..asked {
            served.push(order.recv().await.unwrap());
        }
        // Tags: a 1000..6000, b 1000 2000, none 1000, h 500..2000 (weight 2).
        assert_eq!(
            served,
            ["h0", "a0", "b0", "none", "h1", "h2", "a1", "b1", "h3", "a2", "a3", "a4", "a5"]
        );
        settle().await;
        assert_eq!(permits.available(), 1, "every place came back");
    }

    #[tokio::test]
    async fn a_wait_given_up_leaves_the_queue_and_loses_no_place() {
        let permits = Arc::new(PriorityPermits::new(1));
        let held = permits.acquire(&PlaceRequest::keyless(3)).await;
        // Given up before a place came.
        let gave_up = tokio::time::timeout(
            Duration::from_millis(10),
            permits.acquire(&PlaceRequest::keyless(1)),
        )
        .await;
        assert!(gave_up.is_err());
        drop(held);
        assert_eq!(permits.available(), 1);

        // Handed a place, then dropped before it took it: the place is passed on.
        let held = permits.acquire(&PlaceRequest::keyless(3)).await;
        let urgent = PlaceRequest::keyless(2);
        let mut waiting = Box::pin(permits.acquire(&urgent));
        assert!(futures::poll!(waiting.as_mut()).is_pending());
        let next = {
            let permits = permits.clone();
            tokio::spawn(async move { drop(permits.acquire(&PlaceRequest::keyless(4)).await) })
        };
        settle().await;
        drop(held);
        drop(waiting);
        tokio::time::timeout(Duration::from_secs(5), next)
            .await
            .expect("the place passed on")
            .unwrap();
        assert_eq!(permits.available(), 1);
    }
}
