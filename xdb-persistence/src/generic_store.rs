//! The process API and the state transitions of every dialect: each method is an
//! operation of `operations/`, written once (each dialect's task queue is its own).

use async_trait::async_trait;
use std::time::Duration;
use xdb_engine::decide::{AttemptFailure, StateApi};
use xdb_engine::Task;

use uuid::Uuid;
use xdb_protocol::*;

use crate::conflict_retry::retrying_conflicts;
use crate::operations;
use crate::receipts::{ClientRequest, Control, Receipt, RequestAnswer};
use crate::tables::Dialect;
use crate::{
    Applied, FiredTimer, ProcessApi, QueryTable, Retry, RpcWorker, SetAside, StateCall, StoreError,
    Transitions,
};

#[async_trait]
impl<D: Dialect> ProcessApi for D {
    async fn start_process(
        &self,
        request: &ProcessExecutionStartRequest,
    ) -> Result<Uuid, StoreError> {
        retrying_conflicts(|| operations::start_process(self, request, None)).await
    }
    async fn describe_process(
        &self,
        request: &ProcessExecutionDescribeRequest,
    ) -> Result<ProcessExecutionDescribeResponse, StoreError> {
        operations::describe_process(self, request, true).await
    }
    async fn process_outcome(
        &self,
        request: &ProcessExecutionDescribeRequest,
    ) -> Result<ProcessExecutionDescribeResponse, StoreError> {
        operations::describe_process(self, request, false).await
    }
    async fn stop_process(
        &self,
        request: &ProcessExecutionStopRequest,
    ) -> Result<Option<Box<ProcessExecutionWaitForCompletionResponse>>, StoreError> {
        retrying_conflicts(|| operations::stop_process(self, request, None)).await
    }
    async fn publish_to_local_queue(
        &self,
        request: &PublishToLocalQueueRequest,
    ) -> Result<(), StoreError> {
        retrying_conflicts(|| operations::publish_to_local_queue(self, request, None)).await
    }
    async fn list_processes(
        &self,
        request: &ProcessExecutionListRequest,
    ) -> Result<ProcessExecutionListResponse, StoreError> {
        operations::list_processes(self, request).await
    }
    async fn list_matching(
        &self,
        request: &ProcessExecutionListRequest,
        table: Option<&QueryTable>,
        limit: Duration,
    ) -> Result<ProcessExecutionListResponse, StoreError> {
        operations::list_matching(self, request, table, limit).await
    }
    async fn count_matching(
        &self,
        request: &ProcessExecutionCountRequest,
        table: Option<&QueryTable>,
        limit: Duration,
    ) -> Result<ProcessExecutionCountResponse, StoreError> {
        operations::count_matching(self, request, table, limit).await
    }
    async fn process_history(
        &self,
        request: &ProcessExecutionHistoryRequest,
    ) -> Result<ProcessExecutionHistoryResponse, StoreError> {
        operations::process_history(self, request).await
    }
    async fn rpc(
        &self,
        request: &ProcessExecutionRpcRequest,
        worker: &dyn RpcWorker,
        timeout: Duration,
    ) -> Result<ProcessExecutionRpcResponse, StoreError> {
        operations::rpc(self, request, worker, timeout).await
    }
    async fn process_attributes(
        &self,
        request: &ProcessExecutionAttributesRequest,
    ) -> Result<ProcessExecutionAttributesResponse, StoreError> {
        operations::process_attributes(self, request).await
    }
    async fn process_states(
        &self,
        request: &ProcessExecutionStatesRequest,
    ) -> Result<ProcessExecutionStatesResponse, StoreError> {
        operations::process_states(self, request).await
    }
    async fn retry_now(
        &self,
        request: &ProcessExecutionControlRequest,
    ) -> Result<ProcessExecutionControlResponse, StoreError> {
        retrying_conflicts(|| operations::control(self, Control::RetryNow, request, None)).await
    }
    async fn give_up(
        &self,
        request: &ProcessExecutionControlRequest,
    ) -> Result<ProcessExecutionControlResponse, StoreError> {
        retrying_conflicts(|| operations::control(self, Control::GiveUp, request, None)).await
    }
    async fn pause(
        &self,
        request: &ProcessExecutionControlRequest,
    ) -> Result<ProcessExecutionControlResponse, StoreError> {
        retrying_conflicts(|| operations::control(self, Control::Pause, request, None)).await
    }
    async fn resume(
        &self,
        request: &ProcessExecutionControlRequest,
    ) -> Result<ProcessExecutionControlResponse, StoreError> {
        retrying_conflicts(|| operations::control(self, Control::Resume, request, None)).await
    }
    async fn reprioritize(
        &self,
        request: &ProcessExecutionControlRequest,
    ) -> Result<ProcessExecutionControlResponse, StoreError> {
        retrying_conflicts(|| operations::control(self, Control::Reprioritize, request, None)).await
    }
    async fn reset(
        &self,
        request: &ProcessExecutionResetRequest,
    ) -> Result<ProcessExecutionResetResponse, StoreError> {
        retrying_conflicts(|| operations::reset(self, request, None)).await
    }
    async fn apply(
        &self,
        request: ClientRequest<'_>,
        receipt: Option<&Receipt>,
    ) -> Result<RequestAnswer, StoreError> {
        operations::apply_request(self, request, receipt).await
    }
    async fn expire_receipts(&self, retention: Duration, limit: i64) -> Result<u64, StoreError> {
        let retention = chrono::Duration::from_std(retention).unwrap_or(chrono::Duration::MAX);
        let now = self.database_clock().now();
        let before = now
            .checked_sub_signed(retention)
            .unwrap_or(chrono::DateTime::<chrono::Utc>::MIN_UTC);
        let mut session = self.session(crate::tables::Lane::Main).await?;
        crate::tables::ReceiptRows::delete_receipts_before(&mut session, before, limit).await
    }
    async fn record_batch_item(
        &self,
        receipt: &Receipt,
        outcome: BatchItemOutcome,
        reason: &str,
    ) -> Result<bool, StoreError> {
        operations::record_batch_item(self, receipt, outcome, reason).await
    }
}

#[async_trait]
impl<D: Dialect> Transitions for D {
    async fn load_state_call(
        &self,
        task: &Task,
        owner: &str,
    ) -> Result<Option<StateCall>, StoreError> {
        operations::load_state_call(self, task, owner).await
    }
    async fn complete_wait_until(
        &self,
        task: &Task,
        owner: &str,
        call: &StateCall,
        response: &AsyncStateWaitUntilResponse,
    ) -> Result<Applied, StoreError> {
        operations::complete_wait_until(self, task, owner, call, response).await
    }
    async fn complete_execute(
        &self,
        task: &Task,
        owner: &str,
        call: &StateCall,
        response: &AsyncStateExecuteResponse,
    ) -> Result<Applied, StoreError> {
        operations::complete_execute(self, task, owner, call, response).await
    }
    async fn state_api_failed(
        &self,
        task: &Task,
        owner: &str,
        call: &StateCall,
        api: StateApi,
        failure: &AttemptFailure,
    ) -> Result<Applied, StoreError> {
        operations::state_api_failed(self, task, owner, call, api, failure, Retry::ByPolicy).await
    }
    async fn state_api_given_up(
        &self,
        task: &Task,
        owner: &str,
        call: &StateCall,
        api: StateApi,
        error: &str,
    ) -> Result<Applied, StoreError> {
        let failure = AttemptFailure::retryable(error);
        operations::state_api_failed(self, task, owner, call, api, &failure, Retry::Never).await
    }
    async fn fire_timer(&self, task: &Task, owner: &str) -> Result<Applied, StoreError> {
        operations::fire_timer(self, task, owner).await
    }
    async fn fired_timer_call(&self, task: &Task) -> Result<Option<FiredTimer>, StoreError> {
        operations::fired_timer_call(self, task).await
    }
    async fn complete_fired_execute(
        &self,
        task: &Task,
        owner: &str,
        fired: &FiredTimer,
        response: &AsyncStateExecuteResponse,
    ) -> Result<Applied, StoreError> {
        operations::complete_fired_execute(self, task, owner, fired, response).await
    }
    async fn timeout_process(&self, task: &Task, owner: &str) -> Result<Applied, StoreError> {
        operations::timeout_process(self, task, owner).await
    }
    async fn set_aside(
        &self,
        task: &Task,
        owner: &str,
        why: &SetAside,
    ) -> Result<bool, StoreError> {
        operations::set_aside(self, task, owner, why).await
    }
    async fn hold_back(
        &self,
        task: &Task,
        owner: &str,
        delay: Duration,
    ) -> Result<bool, StoreError> {
        operations::hold_back(self, task, owner, delay).await
    }
    async fn take_call_slot(
        &self,
        task: &Task,
        owner: &str,
        process_type: &str,
        state_id: &str,
        limits: crate::CallSlotLimits,
    ) -> Result<bool, StoreError> {
        crate::sql_tables::call_slots::take_call_slot(
            self,
            task,
            owner,
            process_type,
            state_id,
            limits,
        )
        .await
    }
    async fn admit_pending_executions(&self) -> Result<usize, StoreError> {
        operations::admit_pending(self).await
    }
    async fn forget_closed_run_slots(&self) -> Result<usize, StoreError> {
        operations::forget_closed(self).await
    }
}
