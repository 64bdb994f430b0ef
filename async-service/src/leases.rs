//! Keeps this instance's leases alive while their tasks are being worked on.
//!
//! Only tasks in [`LeasedTasks`] are renewed: a task whose handling failed (the database
//! refused its transition, say) drops out, its lease runs out, and it is claimed again,
//! by this instance or another. Renewing every lease the instance holds would keep such
//! a task leased, and stuck, for as long as the instance lives.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use xdb_persistence::TaskSource;

/// The ids of the tasks this instance is working on.
#[derive(Default)]
pub(crate) struct LeasedTasks {
    ids: Mutex<HashSet<i64>>,
}

impl LeasedTasks {
    /// Marks `task_id` as being worked on until the returned guard is dropped.
    pub(crate) fn hold(self: &Arc<Self>, task_id: i64) -> LeaseHold {
        self.ids.lock().expect("never poisoned").insert(task_id);
        LeaseHold {
            tasks: self.clone(),
            task_id,
        }
    }

    /// How many tasks are held now.
    pub(crate) fn len(&self) -> usize {
        self.ids.lock().expect("never poisoned").len()
    }

    fn snapshot(&self) -> Vec<i64> {
        self.ids
            .lock()
            .expect("never poisoned")
            .iter()
            .copied()
            .collect()
    }
}

/// A task being worked on; dropping it stops the renewal of its lease.
pub(crate) struct LeaseHold {
    tasks: Arc<LeasedTasks>,
    task_id: i64,
}

impl Drop for LeaseHold {
    fn drop(&mut self) {
        self.tasks
            .ids
            .lock()
            .expect("never poisoned")
            .remove(&self.task_id);
    }
}

/// Renews the leases of the tasks in `tasks` every [`crate::scheduling::lease_renewal_period`]
/// until `shutdown` changes.
pub(crate) async fn renew_until_shutdown(
    store: Arc<dyn TaskSource>,
    owner: String,
    tasks: Arc<LeasedTasks>,
    lease: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    let period = crate::scheduling::lease_renewal_period(lease);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = shutdown.changed() => return,
        }
        let ids = tasks.snapshot();
        if ids.is_empty() {
            continue;
        }
        if let Err(error) = store.renew_leases(&owner, &ids, lease).await {
            tracing::warn!(%error, "renewing leases failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake_task_source::ScriptedTaskSource;

    /// Lets the renewal task run until it waits for its next period.
    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn held_tasks_are_renewed_every_period_until_released_and_shutdown() {
        let lease = Duration::from_secs(30);
        let period = crate::scheduling::lease_renewal_period(lease);
        let source = Arc::new(ScriptedTaskSource::default());
        let tasks = Arc::new(LeasedTasks::default());
        let (stop, stopped) = watch::channel(false);
        let renewal = tokio::spawn(renew_until_shutdown(
            source.clone(),
            "owner".into(),
            tasks.clone(),
            lease,
            stopped,
        ));
        settle().await;

        // Nothing held: a period passes without a renewal.
        tokio::time::advance(period).await;
        settle().await;
        assert!(source.renewals().is_empty(), "{:?}", source.renewals());

        let first = tasks.hold(1);
        let _second = tasks.hold(2);
        tokio::time::advance(period).await;
        settle().await;
        assert_eq!(source.renewals(), vec![vec![1, 2]]);

        // A released task (its handling over, or failed) is no longer renewed.
        drop(first);
        tokio::time::advance(period).await;
        settle().await;
        assert_eq!(source.renewals(), vec![vec![1, 2], vec![2]]);

        stop.send(true).unwrap();
        renewal.await.unwrap();
        tokio::time::advance(period * 3).await;
        assert_eq!(source.renewals().len(), 2, "no renewal after shutdown");
    }

    #[test]
    fn a_dropped_hold_is_no_longer_renewed() {
        let tasks = Arc::new(LeasedTasks::default());
        let first = tasks.hold(1);
        let second = tasks.hold(2);
        let mut ids = tasks.snapshot();
        ids.sort();
        assert_eq!(ids, vec![1, 2]);
        drop(first);
        assert_eq!(tasks.snapshot(), vec![2]);
        drop(second);
        assert!(tasks.snapshot().is_empty());
    }
}
