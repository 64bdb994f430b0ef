//! The operator's calls (`states`, `retry-now`, `give-up`, `pause`, `resume`), posted
//! the way the SDK's client posts the others: JSON in, JSON out, the bearer token, and
//! the service's error body as a [`ClientError`] (so exit codes and error text match).

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use xdb_protocol::{
    paths, ProcessExecutionControlRequest, ProcessExecutionControlResponse,
    ProcessExecutionStatesRequest, ProcessExecutionStatesResponse,
};
use xdb_sdk::ClientError;

/// One of the controls, with its path and how the CLI names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    RetryNow,
    GiveUp,
    Pause,
    Resume,
}

impl Control {
    pub fn path(self) -> &'static str {
        match self {
            Control::RetryNow => paths::RETRY_NOW,
            Control::GiveUp => paths::GIVE_UP,
            Control::Pause => paths::PAUSE,
            Control::Resume => paths::RESUME,
        }
    }
}

/// Posts the operator's calls to one service.
#[derive(Debug, Clone)]
pub struct OperatorClient {
    http: reqwest::Client,
    service_url: String,
    bearer_token: Option<String>,
    request_timeout: Duration,
}

impl OperatorClient {
    pub fn new(service_url: &str, bearer_token: Option<String>, request_timeout: Duration) -> Self {
        Self {
            http: reqwest::Client::new(),
            service_url: service_url.trim_end_matches('/').to_string(),
            bearer_token,
            request_timeout,
        }
    }

    pub async fn states(
        &self,
        request: &ProcessExecutionStatesRequest,
    ) -> Result<ProcessExecutionStatesResponse, ClientError> {
        self.call(paths::STATES, request).await
    }

    pub async fn control(
        &self,
        control: Control,
        request: &ProcessExecutionControlRequest,
    ) -> Result<ProcessExecutionControlResponse, ClientError> {
        self.call(control.path(), request).await
    }

    async fn call<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        path: &str,
        request: &Req,
    ) -> Result<Resp, ClientError> {
        let mut post = self
            .http
            .post(format!("{}{path}", self.service_url))
            .timeout(self.request_timeout)
            .json(request);
        if let Some(token) = &self.bearer_token {
            post = post.bearer_auth(token);
        }
        let response = post.send().await?;
        let status = response.status();
        let body = response.bytes().await?;
        if !status.is_success() {
            return Err(ClientError::from_response(status.as_u16(), &body));
        }
        serde_json::from_slice(&body)
            .map_err(|e| ClientError::InvalidResponse(format!("{path}: {e}")))
    }
}
