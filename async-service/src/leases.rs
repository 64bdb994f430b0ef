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
    use async_trait::async_trait;
    use xdb_engine::Task;
    use xdb_persistence::{OperatorGauges, ReleasedLeases, StateCall, StoreError, TaskClaim};

    use super::*;

    /// A task source that records lease renewals; nothing else is asked of it here.
    #[derive(Default)]
    struct RenewalRecorder {
        renewed: Mutex<Vec<Vec<i64>>>,
    }

    impl RenewalRecorder {
        fn rounds(&self) -> Vec<Vec<i64>> {
            self.renewed.lock().unwrap().clone()
        }
    }

    #[async_trait]
    impl TaskSource for RenewalRecorder {
        async fn renew_leases(
            &self,
            _owner: &str,
            task_ids: &[i64],
            _lease: Duration,
        ) -> Result<u64, StoreError> {
            let mut ids = task_ids.to_vec();
            ids.sort();
            self.renewed.lock().unwrap().push(ids);
            Ok(task_ids.len() as u64)
        }
        async fn lease_due(
            &self,
            _: &str,
            _: i64,
            _: Duration,
            _: f64,
        ) -> Result<Vec<(Task, Option<StateCall>)>, StoreError> {
            unreachable!("lease renewal claims nothing")
        }
        async fn count_backlog(&self, _: i64) -> Result<i64, StoreError> {
            unreachable!("lease renewal counts nothing")
        }
        async fn operator_gauges(&self, _: i32, _: i64) -> Result<OperatorGauges, StoreError> {
            unreachable!("lease renewal counts nothing")
        }
        async fn claim_task(&self, _: i64, _: &str, _: Duration) -> Result<TaskClaim, StoreError> {
            unreachable!("lease renewal claims nothing")
        }
        async fn next_task_due_in(&self) -> Result<Option<Duration>, StoreError> {
            unreachable!("lease renewal reads no due times")
        }
        async fn release_leases(&self, _: &str) -> Result<u64, StoreError> {
            unreachable!("lease renewal releases nothing")
        }
        async fn release_dead_leases(
            &self,
            _: &str,
            _: Duration,
        ) -> Result<ReleasedLeases, StoreError> {
            unreachable!("lease renewal releases nothing")
        }
    }

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
        let source = Arc::new(RenewalRecorder::default());
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
        assert!(source.rounds().is_empty(), "{:?}", source.rounds());

        let first = tasks.hold(1);
        let _second = tasks.hold(2);
        tokio::time::advance(period).await;
        settle().await;
        assert_eq!(source.rounds(), vec![vec![1, 2]]);

        // A released task (its handling over, or failed) is no longer renewed.
        drop(first);
        tokio::time::advance(period).await;
        settle().await;
        assert_eq!(source.rounds(), vec![vec![1, 2], vec![2]]);

        stop.send(true).unwrap();
        renewal.await.unwrap();
        tokio::time::advance(period * 3).await;
        assert_eq!(source.rounds().len(), 2, "no renewal after shutdown");
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
