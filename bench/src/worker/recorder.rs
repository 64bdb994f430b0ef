//! What the bench worker saw: when each process's `waitUntil` answered and when its
//! `execute` was called, by the worker's own clock, so scenarios can time what happens
//! inside XDB between two worker calls.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use tokio::sync::Notify;

/// Worker-side timestamps by process id. Shared by the worker's processes (which write)
/// and the scenarios (which read and wait).
#[derive(Debug, Default)]
pub struct Recorder {
    wait_until_answered: Mutex<HashMap<String, SystemTime>>,
    executed: Mutex<HashMap<String, SystemTime>>,
    /// `waitUntil` calls of processes that are not timed one by one (the waiting
    /// scenario's): only counted, so 100,000 of them cost the bench no memory.
    waiting: AtomicUsize,
    changed: Notify,
}

impl Recorder {
    /// Notes that `process_id`'s `waitUntil` is answering now.
    pub fn wait_until_answered(&self, process_id: &str) {
        lock(&self.wait_until_answered).insert(process_id.to_string(), SystemTime::now());
        self.changed.notify_waiters();
    }

    /// Notes that `process_id`'s `execute` was called at `at` (taken on entry).
    pub fn executed(&self, process_id: &str, at: SystemTime) {
        lock(&self.executed).insert(process_id.to_string(), at);
        self.changed.notify_waiters();
    }

    /// Counts one `waitUntil` of a waiting-scenario process.
    pub fn counted_waiting(&self) {
        self.waiting.fetch_add(1, Ordering::Relaxed);
    }

    /// `waitUntil` calls of waiting-scenario processes so far.
    pub fn waiting_count(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// When `process_id`'s `execute` was called, if it was.
    pub fn execute_time(&self, process_id: &str) -> Option<SystemTime> {
        lock(&self.executed).get(process_id).copied()
    }

    /// When `process_id`'s `waitUntil` answered, if it did.
    pub fn wait_until_time(&self, process_id: &str) -> Option<SystemTime> {
        lock(&self.wait_until_answered).get(process_id).copied()
    }

    /// How many of `ids` have had their `execute` called.
    pub fn executed_among(&self, ids: &[String]) -> usize {
        let executed = lock(&self.executed);
        ids.iter().filter(|id| executed.contains_key(*id)).count()
    }

    /// How many of `ids` have had their `waitUntil` answered.
    pub fn waited_among(&self, ids: &[String]) -> usize {
        let answered = lock(&self.wait_until_answered);
        ids.iter().filter(|id| answered.contains_key(*id)).count()
    }

    /// Waits until `done()` holds or `timeout` passes; whether it holds.
    pub async fn wait_for(&self, timeout: Duration, done: impl Fn(&Recorder) -> bool) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // Registered before checking, so a change between the check and the wait
            // still wakes us.
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if done(self) {
                return true;
            }
            // A timed wake-up too: the waiting-scenario counter does not notify.
            let tick = tokio::time::Instant::now() + Duration::from_millis(50);
            if tokio::time::timeout_at(tick.min(deadline), changed)
                .await
                .is_err()
                && tokio::time::Instant::now() >= deadline
            {
                return done(self);
            }
        }
    }
}

/// A poisoned lock only means another scenario task panicked; its data is still sound.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[tokio::test]
    async fn waits_for_an_execute_recorded_later() {
        let recorder = Arc::new(Recorder::default());
        let ids = vec!["a".to_string(), "b".to_string()];
        let writer = recorder.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            writer.executed("a", SystemTime::now());
            writer.executed("b", SystemTime::now());
        });
        let all = |r: &Recorder| r.executed_among(&ids) == 2;
        assert!(recorder.wait_for(Duration::from_secs(5), all).await);
        assert!(recorder.execute_time("a").is_some());
        assert_eq!(recorder.execute_time("c"), None);
        let never = |r: &Recorder| r.executed_among(&["c".to_string()]) == 1;
        assert!(!recorder.wait_for(Duration::from_millis(60), never).await);
    }
}
