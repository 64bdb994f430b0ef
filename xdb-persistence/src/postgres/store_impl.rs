//! Wires the dialect's own operations to the store's traits (state transitions, and
//! the operations written once, are in `crate::operations`).

use std::time::Duration;

use async_trait::async_trait;
use uuid::Uuid;
use xdb_engine::Task;
use xdb_protocol::*;

use super::*;
use crate::{RpcWorker, ServiceInstance, ServiceKind, StateCall, StoreError};

#[async_trait]
impl crate::ProcessApi for PostgresStore {
    async fn start_process(
        &self,
        request: &ProcessExecutionStartRequest,
    ) -> Result<Uuid, StoreError> {
        crate::operations::start_process(self, request).await
    }
    async fn describe_process(
        &self,
        request: &ProcessExecutionDescribeRequest,
    ) -> Result<ProcessExecutionDescribeResponse, StoreError> {
        crate::operations::describe_process(self, request).await
    }
    async fn stop_process(&self, request: &ProcessExecutionStopRequest) -> Result<(), StoreError> {
        crate::operations::stop_process(self, request).await
    }
    async fn publish_to_local_queue(
        &self,
        request: &PublishToLocalQueueRequest,
    ) -> Result<(), StoreError> {
        crate::operations::publish_to_local_queue(self, request).await
    }
    async fn list_processes(
        &self,
        request: &ProcessExecutionListRequest,
    ) -> Result<ProcessExecutionListResponse, StoreError> {
        crate::operations::list_processes(self, request).await
    }
    async fn process_history(
        &self,
        request: &ProcessExecutionHistoryRequest,
    ) -> Result<ProcessExecutionHistoryResponse, StoreError> {
        crate::operations::process_history(self, request).await
    }
    async fn rpc(
        &self,
        request: &ProcessExecutionRpcRequest,
        worker: &dyn RpcWorker,
        timeout: Duration,
    ) -> Result<ProcessExecutionRpcResponse, StoreError> {
        crate::operations::rpc(self, request, worker, timeout).await
    }
}

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
