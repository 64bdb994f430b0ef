//! Wires the dialect's own operations to the store's traits (state transitions, and
//! the operations written once, are in `crate::operations`).

use std::time::Duration;

use async_trait::async_trait;
use xdb_engine::Task;

use super::*;
use crate::{ServiceInstance, ServiceKind, StateCall, StoreError};

#[async_trait]
impl crate::InstanceRegistry for PostgresStore {
    async fn heartbeat_instance(&self, instance: &ServiceInstance) -> Result<(), StoreError> {
        service_instances::heartbeat_instance(self, instance).await
    }
    async fn live_instances(
        &self,
        service: ServiceKind,
        max_age: Duration,
    ) -> Result<Vec<ServiceInstance>, StoreError> {
        service_instances::live_instances(self, service, max_age).await
    }
    async fn remove_instance(&self, instance_id: &str) -> Result<(), StoreError> {
        service_instances::remove_instance(self, instance_id).await
    }
}

#[async_trait]
impl crate::TaskSource for PostgresStore {
    fn listen(&self, what: crate::Listen) -> Option<crate::Notifications> {
        Some(PostgresStore::listen(self, what))
    }
    async fn claim_due_tasks(
        &self,
        owner: &str,
        limit: i64,
        lease: Duration,
    ) -> Result<Vec<Task>, StoreError> {
        claim_tasks::claim_due_tasks(self, owner, limit, lease).await
    }
    async fn claim_tasks_with_calls(
        &self,
        owner: &str,
        limit: i64,
        lease: Duration,
        ahead: Duration,
    ) -> Result<Vec<(Task, Option<StateCall>)>, StoreError> {
        claim_tasks::claim_tasks_with_calls(self, owner, limit, lease, ahead.as_secs_f64()).await
    }
    async fn count_backlog(&self, cap: i64) -> Result<i64, StoreError> {
        backlog::count_backlog(self, cap).await
    }
    async fn claim_overdue_tasks(
        &self,
        owner: &str,
        limit: i64,
        lease: Duration,
        overdue: Duration,
    ) -> Result<Vec<Task>, StoreError> {
        claim_tasks::claim_tasks_due_by(self, owner, limit, lease, -overdue.as_secs_f64()).await
    }
    async fn claim_task(
        &self,
        task_id: i64,
        owner: &str,
        lease: Duration,
    ) -> Result<crate::TaskClaim, StoreError> {
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
