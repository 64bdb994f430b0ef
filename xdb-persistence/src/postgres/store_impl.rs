//! Wires each [`ProcessStore`] method to its operation file.

use std::time::Duration;

use async_trait::async_trait;
use uuid::Uuid;
use xdb_engine::decide::StateApi;
use xdb_engine::Task;
use xdb_protocol::*;

use super::*;
use crate::{
    Applied, FiredTimer, ProcessStore, Retry, RpcWorker, ServiceInstance, ServiceKind, StateCall,
    StoreError,
};

#[async_trait]
impl ProcessStore for PostgresStore {
    fn listen(&self, what: crate::Listen) -> Option<crate::Notifications> {
        Some(PostgresStore::listen(self, what))
    }

    async fn start_process(
        &self,
        request: &ProcessExecutionStartRequest,
    ) -> Result<Uuid, StoreError> {
        start_process::start_process(self, request).await
    }
    async fn describe_process(
        &self,
        request: &ProcessExecutionDescribeRequest,
    ) -> Result<ProcessExecutionDescribeResponse, StoreError> {
        describe_process::describe_process(self, request).await
    }
    async fn stop_process(&self, request: &ProcessExecutionStopRequest) -> Result<(), StoreError> {
        stop_process::stop_process(self, request).await
    }
    async fn publish_to_local_queue(
        &self,
        request: &PublishToLocalQueueRequest,
    ) -> Result<(), StoreError> {
        publish_to_local_queue::publish_to_local_queue(self, request).await
    }
    async fn list_processes(
        &self,
        request: &ProcessExecutionListRequest,
    ) -> Result<ProcessExecutionListResponse, StoreError> {
        list_processes::list_processes(self, request).await
    }
    async fn process_history(
        &self,
        request: &ProcessExecutionHistoryRequest,
    ) -> Result<ProcessExecutionHistoryResponse, StoreError> {
        process_history::process_history(self, request).await
    }
    async fn rpc(
        &self,
        request: &ProcessExecutionRpcRequest,
        worker: &dyn RpcWorker,
        timeout: Duration,
    ) -> Result<ProcessExecutionRpcResponse, StoreError> {
        rpc::rpc(self, request, worker, timeout).await
    }
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
    async fn load_state_call(
        &self,
        task: &Task,
        owner: &str,
    ) -> Result<Option<StateCall>, StoreError> {
        load_state_call::load_state_call(self, task, owner).await
    }
    async fn complete_wait_until(
        &self,
        task: &Task,
        owner: &str,
        call: &StateCall,
        response: &AsyncStateWaitUntilResponse,
    ) -> Result<Applied, StoreError> {
        complete_wait_until::complete_wait_until(self, task, owner, call, response).await
    }
    async fn complete_execute(
        &self,
        task: &Task,
        owner: &str,
        call: &StateCall,
        response: &AsyncStateExecuteResponse,
    ) -> Result<Applied, StoreError> {
        complete_execute::complete_execute(self, task, owner, call, response).await
    }
    async fn state_api_failed(
        &self,
        task: &Task,
        owner: &str,
        call: &StateCall,
        api: StateApi,
        error: &str,
    ) -> Result<Applied, StoreError> {
        state_api_failed::state_api_failed(self, task, owner, call, api, error, Retry::ByPolicy)
            .await
    }
    async fn state_api_given_up(
        &self,
        task: &Task,
        owner: &str,
        call: &StateCall,
        api: StateApi,
        error: &str,
    ) -> Result<Applied, StoreError> {
        state_api_failed::state_api_failed(self, task, owner, call, api, error, Retry::Never).await
    }
    async fn fire_timer(&self, task: &Task, owner: &str) -> Result<Applied, StoreError> {
        fire_timer::fire_timer(self, task, owner).await
    }
    async fn fired_timer_call(&self, task: &Task) -> Result<Option<FiredTimer>, StoreError> {
        fired_execute::fired_timer_call(self, task).await
    }
    async fn complete_fired_execute(
        &self,
        task: &Task,
        owner: &str,
        fired: &FiredTimer,
        response: &AsyncStateExecuteResponse,
    ) -> Result<Applied, StoreError> {
        fired_execute::complete_fired_execute(self, task, owner, fired, response).await
    }
    async fn timeout_process(&self, task: &Task, owner: &str) -> Result<Applied, StoreError> {
        timeout_process::timeout_process(self, task, owner).await
    }
}
