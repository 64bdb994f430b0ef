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
use xdb_persistence::ProcessStore;

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
    store: Arc<dyn ProcessStore>,
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
