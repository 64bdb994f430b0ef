//! The calls of the service's process-execution, definitions and deployments
//! endpoints, one per endpoint: the request as the caller built it, the answer as is.

use std::time::Duration;

use xdb_protocol::paths;
use xdb_protocol::*;

use super::retry::Repeat;
use super::{Client, ClientError};

impl Client {
    pub async fn start(
        &self,
        request: &ProcessExecutionStartRequest,
    ) -> Result<ProcessExecutionStartResponse, ClientError> {
        self.call_idempotent(paths::START, request).await
    }

    /// Registers a worker deployment's process definitions (the `deploy` role); see
    /// `WorkerService::register_with` for a worker's own registration.
    pub async fn register_definitions(
        &self,
        request: &RegisterDefinitionsRequest,
    ) -> Result<RegisterDefinitionsResponse, ClientError> {
        self.call(paths::DEFINITIONS_REGISTER, request, Repeat::Unsafe)
            .await
    }

    /// The current definition of every registered process type.
    pub async fn list_definitions(&self) -> Result<DefinitionsListResponse, ClientError> {
        self.call(
            paths::DEFINITIONS_LIST,
            &DefinitionsListRequest {},
            Repeat::Safe,
        )
        .await
    }

    /// One process type's definition and its revisions.
    pub async fn describe_definition(
        &self,
        request: &DefinitionDescribeRequest,
    ) -> Result<DefinitionDescribeResponse, ClientError> {
        self.call(paths::DEFINITIONS_DESCRIBE, request, Repeat::Safe)
            .await
    }

    /// Every worker deployment, the types it is current for and its running executions.
    pub async fn list_deployments(&self) -> Result<DeploymentsListResponse, ClientError> {
        self.call(
            paths::DEPLOYMENTS_LIST,
            &DeploymentsListRequest {},
            Repeat::Safe,
        )
        .await
    }

    /// Makes a deployment current again for every type it registered (the `deploy` role).
    pub async fn set_current_deployment(
        &self,
        request: &DeploymentSetCurrentRequest,
    ) -> Result<RegisterDefinitionsResponse, ClientError> {
        self.call(paths::DEPLOYMENTS_SET_CURRENT, request, Repeat::Unsafe)
            .await
    }

    /// Moves running executions of a type to another deployment (the `operate` role).
    pub async fn move_executions(
        &self,
        request: &ExecutionsMoveRequest,
    ) -> Result<ExecutionsMoveResponse, ClientError> {
        self.call(paths::DEPLOYMENTS_MOVE, request, Repeat::Unsafe)
            .await
    }

    pub async fn stop(&self, request: &ProcessExecutionStopRequest) -> Result<(), ClientError> {
        self.send_idempotent(paths::STOP, request).await
    }

    pub async fn describe(
        &self,
        request: &ProcessExecutionDescribeRequest,
    ) -> Result<ProcessExecutionDescribeResponse, ClientError> {
        self.call(paths::DESCRIBE, request, Repeat::Safe).await
    }

    pub async fn list(
        &self,
        request: &ProcessExecutionListRequest,
    ) -> Result<ProcessExecutionListResponse, ClientError> {
        self.call(paths::LIST, request, Repeat::Safe).await
    }

    /// Exact counts of the executions `request` matches, optionally per group.
    pub async fn count(
        &self,
        request: &ProcessExecutionCountRequest,
    ) -> Result<ProcessExecutionCountResponse, ClientError> {
        self.call(paths::COUNT, request, Repeat::Safe).await
    }

    pub async fn history(
        &self,
        request: &ProcessExecutionHistoryRequest,
    ) -> Result<ProcessExecutionHistoryResponse, ClientError> {
        self.call(paths::HISTORY, request, Repeat::Safe).await
    }

    pub async fn publish_to_local_queue_raw(
        &self,
        request: &PublishToLocalQueueRequest,
    ) -> Result<(), ClientError> {
        self.send_idempotent(paths::PUBLISH_TO_LOCAL_QUEUE, request)
            .await
    }

    pub async fn rpc(
        &self,
        request: &ProcessExecutionRpcRequest,
    ) -> Result<ProcessExecutionRpcResponse, ClientError> {
        // The service waits for the worker, so allow the worker's timeout on top of ours.
        let worker = Duration::from_secs(u64::from(request.timeout_seconds.unwrap_or(10)));
        self.call_with_timeout(
            paths::RPC,
            request,
            self.request_timeout + worker,
            Repeat::Unsafe,
        )
        .await
    }

    /// One long poll; the HTTP timeout covers the requested wait plus a margin.
    pub async fn wait_for_completion(
        &self,
        request: &ProcessExecutionWaitForCompletionRequest,
    ) -> Result<ProcessExecutionWaitForCompletionResponse, ClientError> {
        let wait = Duration::from_secs(u64::from(request.timeout_seconds.unwrap_or(30)));
        self.call_with_timeout(
            paths::WAIT_FOR_COMPLETION,
            request,
            wait + self.request_timeout,
            Repeat::Safe,
        )
        .await
    }
}
