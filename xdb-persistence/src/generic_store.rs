//! The state transitions of every dialect: each [`Transitions`] method is an operation
//! of `operations/`, written once.

use async_trait::async_trait;
use xdb_engine::decide::StateApi;
use xdb_engine::Task;
use xdb_protocol::{AsyncStateExecuteResponse, AsyncStateWaitUntilResponse};

use crate::operations;
use crate::tables::Dialect;
use crate::{Applied, FiredTimer, Retry, StateCall, StoreError, Transitions};

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
        error: &str,
    ) -> Result<Applied, StoreError> {
        operations::state_api_failed(self, task, owner, call, api, error, Retry::ByPolicy).await
    }
    async fn state_api_given_up(
        &self,
        task: &Task,
        owner: &str,
        call: &StateCall,
        api: StateApi,
        error: &str,
    ) -> Result<Applied, StoreError> {
        operations::state_api_failed(self, task, owner, call, api, error, Retry::Never).await
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
}
