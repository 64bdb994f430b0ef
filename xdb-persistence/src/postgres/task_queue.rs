//! The dialect's task queue: each method is its statement file's.

use std::time::Duration;

use xdb_engine::Task;

use super::*;
use crate::tables::TaskQueue;
use crate::{StateCall, StoreError, TaskClaim};

impl TaskQueue for PostgresStore {
    fn listen(&self, what: crate::Listen) -> Option<crate::Notifications> {
        Some(PostgresStore::listen(self, what))
    }
    async fn lease_due(
        &self,
        owner: &str,
        limit: i64,
        lease: Duration,
        ahead: f64,
    ) -> Result<Vec<(Task, Option<StateCall>)>, StoreError> {
        claim_tasks::claim_tasks_with_calls(self, owner, limit, lease, ahead).await
    }
    async fn count_backlog(&self, cap: i64) -> Result<i64, StoreError> {
        backlog::count_backlog(self, cap).await
    }
    async fn claim_task(
        &self,
        task_id: i64,
        owner: &str,
        lease: Duration,
    ) -> Result<TaskClaim, StoreError> {
        claim_task::claim_task(self, task_id, owner, lease).await
    }
    async fn next_task_due_in(&self) -> Result<Option<Duration>, StoreError> {
        claim_tasks::next_task_due_in(self).await
    }
    async fn renew_leases(
        &self,
        owner: &str,
        task_ids: &[i64],
        lease: Duration,
    ) -> Result<u64, StoreError> {
        claim_tasks::renew_leases(self, owner, task_ids, lease).await
    }
    async fn release_leases(&self, owner: &str) -> Result<u64, StoreError> {
        claim_tasks::release_leases(self, owner).await
    }
}
