//! The client of the XDB service API.
//!
//! [`Client`], its settings and its typed calls are here; the rest by concern: the calls
//! one per service endpoint (`endpoints`), the operator's calls (`operate`), batches
//! (`batch`), schedules (`schedule`), flow limits (`flow_limits`), how a call is sent
//! and sent again (`transport`, `retry`), and its failures (`error`).

use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Serialize;
use xdb_protocol::*;

use crate::encoding;
use crate::error::XdbError;
use crate::process::Process;
use crate::registry::ProcessDefinition;
use crate::start_options::{build_start_request, ProcessStartOptions};

mod batch;
mod endpoints;
mod error;
mod flow_limits;
mod operate;
mod retry;
#[cfg(test)]
mod retry_tests;
mod schedule;
mod transport;

pub use error::ClientError;
use retry::Backoff;
pub use retry::{is_valid_request_id, new_request_id, IdempotentRequest, MAX_REQUEST_ID_CHARS};

/// Talks to one XDB service; cheap to clone, and clones share the connection pool.
///
/// **Retries.** Each call is sent again, up to [`Client::with_retries`] times (default
/// 3), when sending it again cannot do more than sending it once:
/// - reads (describe, list, count, history, states, wait, the definitions', deployments'
///   and batches' reads), the writes that carry a `requestId` (start, stop, publish,
///   the operator's controls, reset, batch start), and the writes whose repeat leaves
///   the same state (schedule update, pause, resume and backfill, setting a flow limit)
///   are sent again when no answer came (connection refused or reset, a timeout) and on
///   any 503. Each write with a `requestId` gets the caller's, else a fresh one, set once
///   per call: every attempt sends the same id and the same body, so the service does it
///   at most once and answers a repeat with the first answer;
/// - other writes (RPC, registration, set-current, move, batch cancel) are sent again only
///   when they surely did nothing: the connection never opened, or 503 `OVERLOADED`.
///
/// After a 503 the pause is the answer's `Retry-After` seconds (1 s when absent, at most
/// 30 s); after no answer it starts at 250 ms and doubles, at most 5 s. Any other status
/// is returned at once; after the last attempt its error is returned.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    service_url: String,
    worker_url: Option<String>,
    request_timeout: Duration,
    /// Sent as `Authorization: Bearer …` when the service requires a token.
    bearer_token: Option<String>,
    retries: u32,
    backoff: Backoff,
}

/// Retries of a call (see [`Client`]), unless set otherwise.
const DEFAULT_RETRIES: u32 = 3;

/// The longest wait the service grants one wait-for-completion call.
const MAX_WAIT_SECONDS: u32 = 300;

impl Client {
    /// A client of the service at `service_url` (e.g. `http://127.0.0.1:8801`).
    pub fn new(service_url: impl Into<String>) -> Self {
        Self::with_http_client(service_url, reqwest::Client::new())
    }

    /// A client that uses `http`, e.g. one configured with TLS roots or proxies.
    pub fn with_http_client(service_url: impl Into<String>, http: reqwest::Client) -> Self {
        Self {
            http,
            service_url: service_url.into().trim_end_matches('/').to_string(),
            worker_url: None,
            request_timeout: Duration::from_secs(60),
            bearer_token: None,
            retries: DEFAULT_RETRIES,
            backoff: Backoff::default(),
        }
    }

    /// How many times a call is sent again when it may be (see [`Client`]); 0 returns
    /// the first failure.
    pub fn with_retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// The same as [`Client::with_retries`]: one bound covers every retry.
    pub fn with_overload_retries(self, retries: u32) -> Self {
        self.with_retries(retries)
    }

    /// The pause before the first retry of a call that got no answer (default 250 ms),
    /// doubled on each further retry up to `max` (default 5 s).
    pub fn with_retry_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.backoff = Backoff { initial, max };
        self
    }

    /// Authenticates every call with `token` (the service's `security.api_tokens`).
    pub fn with_bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }

    /// The worker URL typed starts use when given none.
    pub fn with_worker_url(mut self, worker_url: impl Into<String>) -> Self {
        self.worker_url = Some(worker_url.into());
        self
    }

    /// Timeout of each call other than wait-for-completion (default 60 s).
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    pub fn service_url(&self) -> &str {
        &self.service_url
    }

    // ---- typed calls ----

    /// Starts process `P` as `process_id`, filling type, starting state (input and
    /// config) and global-attribute table from `P`'s definition. `worker_url` defaults
    /// to the client's; with neither, the service routes the start to the deployment
    /// that registered the process type. Returns the process execution id.
    pub async fn start_process<P: Process + Default>(
        &self,
        process_id: &str,
        worker_url: Option<&str>,
        input: impl Serialize,
        options: ProcessStartOptions,
    ) -> Result<String, ClientError> {
        let definition = ProcessDefinition::new(P::default());
        self.start_process_with(&definition, process_id, worker_url, input, options)
            .await
    }

    /// [`Client::start_process`] for a definition at hand.
    pub async fn start_process_with(
        &self,
        definition: &ProcessDefinition,
        process_id: &str,
        worker_url: Option<&str>,
        input: impl Serialize,
        options: ProcessStartOptions,
    ) -> Result<String, ClientError> {
        let worker_url = worker_url
            .or(self.worker_url.as_deref())
            .unwrap_or_default();
        let input = encoding::encode_optional("start state input", &input)?;
        let request = build_start_request(definition, process_id, worker_url, input, options)?;
        Ok(self.start(&request).await?.process_execution_id)
    }

    /// Calls RPC `rpc_name` of process `P` on the current execution of `process_id`,
    /// with the RPC's registered options (default: load every declared attribute).
    pub async fn invoke_rpc<P, I, O>(
        &self,
        process_id: &str,
        rpc_name: &str,
        input: &I,
    ) -> Result<O, ClientError>
    where
        P: Process + Default,
        I: Serialize + ?Sized,
        O: DeserializeOwned,
    {
        let definition = ProcessDefinition::new(P::default());
        self.invoke_rpc_with(&definition, process_id, rpc_name, input)
            .await
    }

    /// [`Client::invoke_rpc`] for a definition at hand.
    pub async fn invoke_rpc_with<I, O>(
        &self,
        definition: &ProcessDefinition,
        process_id: &str,
        rpc_name: &str,
        input: &I,
    ) -> Result<O, ClientError>
    where
        I: Serialize + ?Sized,
        O: DeserializeOwned,
    {
        let options = definition.rpc_options(rpc_name).ok_or_else(|| {
            XdbError::NotAllowed(format!(
                "process {} has no rpc {rpc_name:?}",
                definition.process_type()
            ))
        })?;
        let schema = definition.persistence_schema();
        let request = ProcessExecutionRpcRequest {
            process_id: process_id.to_string(),
            rpc_name: rpc_name.to_string(),
            input: encoding::encode_optional(&format!("input of rpc {rpc_name:?}"), input)?,
            timeout_seconds: options.timeout_seconds,
            global_attribute_loading: options
                .global_attribute_loading
                .clone()
                .or_else(|| crate::registry::default_global_loading(schema)),
            local_attribute_loading: options
                .local_attribute_loading
                .clone()
                .or_else(|| crate::registry::default_local_loading(schema)),
        };
        let response = self.rpc(&request).await?;
        Ok(encoding::decode(
            &format!("output of rpc {rpc_name:?}"),
            response.output.as_ref(),
        )?)
    }

    /// Publishes `payload` to local queue `queue_name` of the current execution.
    pub async fn publish_to_local_queue(
        &self,
        process_id: &str,
        queue_name: &str,
        payload: impl Serialize,
        dedup_id: Option<String>,
    ) -> Result<(), ClientError> {
        let payload =
            encoding::encode_optional(&format!("message to local queue {queue_name:?}"), &payload)?;
        self.publish_to_local_queue_raw(&PublishToLocalQueueRequest {
            process_execution_id: None,
            request_id: None,
            process_id: process_id.to_string(),
            messages: vec![LocalQueueMessage {
                queue_name: queue_name.to_string(),
                dedup_id,
                payload,
            }],
        })
        .await
    }

    /// Ends the current execution of `process_id`.
    pub async fn stop_process(
        &self,
        process_id: &str,
        stop_type: ProcessExecutionStopType,
        reason: Option<String>,
    ) -> Result<(), ClientError> {
        self.stop(&ProcessExecutionStopRequest {
            process_execution_id: None,
            request_id: None,
            process_id: process_id.to_string(),
            stop_type,
            reason,
        })
        .await
    }

    /// Describes the current execution of `process_id`.
    pub async fn describe_process(
        &self,
        process_id: &str,
    ) -> Result<ProcessExecutionDescribeResponse, ClientError> {
        self.describe(&ProcessExecutionDescribeRequest {
            process_id: process_id.to_string(),
            process_execution_id: None,
        })
        .await
    }

    /// Waits up to `timeout` for the current execution of `process_id` to close, long
    /// polling as often as the service's per-call limit requires. On timeout the last
    /// answer comes back with `timed_out: true`.
    pub async fn wait_for_process_completion(
        &self,
        process_id: &str,
        timeout: Duration,
    ) -> Result<ProcessExecutionWaitForCompletionResponse, ClientError> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let secs = u32::try_from(left.as_secs().max(1)).unwrap_or(MAX_WAIT_SECONDS);
            let response = self
                .wait_for_completion(&ProcessExecutionWaitForCompletionRequest {
                    process_id: process_id.to_string(),
                    timeout_seconds: Some(secs.min(MAX_WAIT_SECONDS)),
                })
                .await?;
            if !response.timed_out || Instant::now() >= deadline {
                return Ok(response);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_trailing_slash_of_service_url() {
        assert_eq!(Client::new("http://h:1/").service_url(), "http://h:1");
    }
}
