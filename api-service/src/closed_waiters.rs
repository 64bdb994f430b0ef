//! Clients waiting for executions to close, woken one execution at a time.
//!
//! Every close of the system reaches every API instance; handing each to every waiting
//! request (a broadcast) woke all of them per close: 64 waiters and 500 closes a second
//! made 32,000 wake-ups a second, of which 500 mattered. One task reads the
//! notifications here and wakes only the waiters of the execution that closed.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast::error::RecvError;
use tokio::sync::oneshot;
use xdb_persistence::{Notification, Notifications};
use xdb_protocol::ProcessExecutionWaitForCompletionResponse;

/// How many closes are remembered, for a waiter that registers just after its
/// execution's close went by (it read the execution as running a moment before).
const RECENT_CLOSES: usize = 4096;

/// Why a waiter woke.
#[derive(Debug, Clone)]
pub(crate) enum Wake {
    /// Its execution closed; the answer when the close carried it.
    Closed(Option<Arc<ProcessExecutionWaitForCompletionResponse>>),
    /// Notifications may have been lost: read the execution again.
    Recheck,
}

#[derive(Default)]
struct Waiting {
    next_token: u64,
    by_execution: HashMap<String, Vec<(u64, oneshot::Sender<Wake>)>>,
    /// The last closes, and their order (oldest first) to forget them by.
    recent: HashMap<String, Option<Arc<ProcessExecutionWaitForCompletionResponse>>>,
    recent_order: VecDeque<String>,
}

/// The waiters of one API instance.
pub(crate) struct ClosedWaiters {
    waiting: Mutex<Waiting>,
}

/// One waiter's registration: [`Registration::wake`] resolves when its execution
/// closes; dropped, it is forgotten.
pub(crate) struct Registration {
    waiters: Arc<ClosedWaiters>,
    execution: String,
    token: u64,
    wake: oneshot::Receiver<Wake>,
}

impl ClosedWaiters {
    /// Starts dispatching `notifications` to waiters.
    pub fn start(notifications: &Notifications) -> Arc<Self> {
        let waiters = Arc::new(Self {
            waiting: Mutex::new(Waiting::default()),
        });
        let mut receiver = notifications.subscribe();
        let dispatcher = Arc::downgrade(&waiters);
        tokio::spawn(async move {
            loop {
                let received = receiver.recv().await;
                let Some(waiters) = dispatcher.upgrade() else {
                    return;
                };
                match received {
                    Ok(Notification::ProcessClosed { id, outcome }) => waiters.closed(id, outcome),
                    Ok(Notification::Reconnected) | Err(RecvError::Lagged(_)) => {
                        waiters.recheck_all()
                    }
                    Ok(Notification::Tasks | Notification::TasksOf(_) | Notification::Batches) => {}
                    Err(RecvError::Closed) => return,
                }
            }
        });
        waiters
    }

    /// Registers a waiter for `execution`, which it read as running; already woken if
    /// that execution closed since.
    pub fn register(self: &Arc<Self>, execution: &str) -> Registration {
        let (sender, wake) = oneshot::channel();
        let mut waiting = self.waiting.lock().expect("never poisoned");
        waiting.next_token += 1;
        let token = waiting.next_token;
        let recent = waiting.recent.get(execution).cloned();
        match recent {
            Some(outcome) => {
                let _ = sender.send(Wake::Closed(outcome));
            }
            None => waiting
                .by_execution
                .entry(execution.to_string())
                .or_default()
                .push((token, sender)),
        }
        Registration {
            waiters: self.clone(),
            execution: execution.to_string(),
            token,
            wake,
        }
    }

    fn closed(&self, id: String, outcome: Option<Arc<ProcessExecutionWaitForCompletionResponse>>) {
        let mut waiting = self.waiting.lock().expect("never poisoned");
        for (_, sender) in waiting.by_execution.remove(&id).unwrap_or_default() {
            let _ = sender.send(Wake::Closed(outcome.clone()));
        }
        if waiting.recent_order.len() == RECENT_CLOSES {
            if let Some(oldest) = waiting.recent_order.pop_front() {
                waiting.recent.remove(&oldest);
            }
        }
        if waiting.recent.insert(id.clone(), outcome).is_none() {
            waiting.recent_order.push_back(id);
        }
    }

    fn recheck_all(&self) {
        let mut waiting = self.waiting.lock().expect("never poisoned");
        for (_, senders) in waiting.by_execution.drain() {
            for (_, sender) in senders {
                let _ = sender.send(Wake::Recheck);
            }
        }
    }

    #[cfg(test)]
    fn waiter_count(&self) -> usize {
        let waiting = self.waiting.lock().expect("never poisoned");
        waiting.by_execution.values().map(Vec::len).sum()
    }
}

impl Registration {
    /// Resolves when the execution closes, or when it should be read again.
    pub async fn wake(&mut self) -> Wake {
        (&mut self.wake).await.unwrap_or(Wake::Recheck)
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut waiting = self.waiters.waiting.lock().expect("never poisoned");
        if let Some(senders) = waiting.by_execution.get_mut(&self.execution) {
            senders.retain(|(token, _)| *token != self.token);
            if senders.is_empty() {
                waiting.by_execution.remove(&self.execution);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn closed(id: &str) -> Notification {
        Notification::ProcessClosed {
            id: id.into(),
            outcome: None,
        }
    }

    async fn woken(registration: &mut Registration) -> Option<Wake> {
        tokio::time::timeout(Duration::from_millis(200), registration.wake())
            .await
            .ok()
    }

    #[tokio::test]
    async fn a_close_wakes_only_its_own_executions_waiters() {
        let notifications = Notifications::new();
        let waiters = ClosedWaiters::start(&notifications);
        let mut a = waiters.register("a");
        let mut also_a = waiters.register("a");
        let mut b = waiters.register("b");
        notifications.publish(closed("a"));
        assert!(matches!(woken(&mut a).await, Some(Wake::Closed(None))));
        assert!(matches!(woken(&mut also_a).await, Some(Wake::Closed(None))));
        assert!(woken(&mut b).await.is_none(), "b has not closed");
    }

    #[tokio::test]
    async fn a_waiter_registering_just_after_the_close_is_woken_at_once() {
        let notifications = Notifications::new();
        let waiters = ClosedWaiters::start(&notifications);
        notifications.publish(closed("a"));
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut late = waiters.register("a");
        assert!(matches!(woken(&mut late).await, Some(Wake::Closed(None))));
    }

    #[tokio::test]
    async fn lost_notifications_make_every_waiter_read_again() {
        let notifications = Notifications::new();
        let waiters = ClosedWaiters::start(&notifications);
        let mut a = waiters.register("a");
        let mut b = waiters.register("b");
        notifications.publish(Notification::Reconnected);
        assert!(matches!(woken(&mut a).await, Some(Wake::Recheck)));
        assert!(matches!(woken(&mut b).await, Some(Wake::Recheck)));
    }

    #[tokio::test]
    async fn a_dropped_waiter_is_forgotten() {
        let notifications = Notifications::new();
        let waiters = ClosedWaiters::start(&notifications);
        let kept = waiters.register("a");
        drop(waiters.register("a"));
        drop(waiters.register("b"));
        assert_eq!(waiters.waiter_count(), 1);
        drop(kept);
        assert_eq!(waiters.waiter_count(), 0);
    }
}
