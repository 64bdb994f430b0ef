//! The client of the XDB service API.

use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Serialize;
use xdb_protocol::paths;
use xdb_protocol::*;

use crate::encoding;
use crate::error::XdbError;
use crate::process::Process;
use crate::registry::ProcessDefinition;
use crate::start_options::{build_start_request, ProcessStartOptions};

mod retry;
#[cfg(test)]
mod retry_tests;

pub use retry::{is_valid_request_id, new_request_id, IdempotentRequest, MAX_REQUEST_ID_CHARS};
use retry::{retryable, with_request_id, Backoff, Repeat, Retryable};

/// A failed service call.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The service refused the request with its JSON error body.
    #[error("XDB service answered HTTP {status} {:?}: {}", error.sub_type, error.message)]
    Api {
        status: u16,
        error: ApiErrorResponse,
    },
    /// A non-2xx answer without a readable error body (a proxy, a crash).
    #[error("XDB service answered HTTP {status}: {body}")]
    Http { status: u16, body: String },
    /// The request did not get an answer.
    #[error("request to the XDB service failed: {0}")]
    Transport(#[from] reqwest::Error),
    /// A 2xx answer whose body is not what the protocol says.
    #[error("unreadable XDB service response: {0}")]
    InvalidResponse(String),
    /// Encoding, decoding or schema checks in the SDK.
    #[error(transparent)]
    Sdk(#[from] XdbError),
}

impl ClientError {
    /// Sorts an answer by status and body: only a non-2xx answer is an error.
    pub fn from_response(status: u16, body: &[u8]) -> Self {
        match serde_json::from_slice::<ApiErrorResponse>(body) {
            Ok(error) => ClientError::Api { status, error },
            Err(_) => ClientError::Http {
                status,
                body: String::from_utf8_lossy(body).into_owned(),
            },
        }
    }

    /// The service's error body, if it sent one.
    pub fn api_error(&self) -> Option<&ApiErrorResponse> {
        match self {
            ClientError::Api { error, .. } => Some(error),
            _ => None,
        }
    }

    pub fn sub_type(&self) -> Option<ErrorSubType> {
        self.api_error().map(|e| e.sub_type)
    }

    /// The HTTP status of a non-2xx answer.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Api { status, .. } | ClientError::Http { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// Talks to one XDB service; cheap to clone, and clones share the connection pool.
///
/// **Retries.** Each call is sent again, up to [`Client::with_retries`] times (default
/// 3), when sending it again cannot do more than sending it once:
/// - reads (describe, list, count, history, states, wait, the definitions', deployments'
///   and batches' reads), and the writes that carry a `requestId` (start, stop, publish,
///   the operator's controls, reset, batch start), are sent again when no answer came
///   (connection refused or reset, a timeout) and on any 503. Each such write gets the
///   caller's `requestId`, else a fresh one, set once per call: every attempt sends the
///   same id and the same body, so the service does it at most once and answers a repeat
///   with the first answer;
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

/// The longest pause before a retry, whatever `Retry-After` says.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

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

    // ---- raw calls, one per service endpoint ----

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

    // ---- the operator's calls ----

    /// The state executions of an execution: the call each waits on and in which phase
    /// (scheduled, running, parked, paused), its last failure, what its commands wait for.
    pub async fn states(
        &self,
        request: &ProcessExecutionStatesRequest,
    ) -> Result<ProcessExecutionStatesResponse, ClientError> {
        self.call(paths::STATES, request, Repeat::Safe).await
    }

    /// Calls waiting out a retry backoff become due at once (attempt counts kept); parked
    /// tasks go back to the queue. `CONTROL_NOT_APPLICABLE` when none waits so, an
    /// attempt is running, or the execution is paused.
    pub async fn retry_now(
        &self,
        request: &ProcessExecutionControlRequest,
    ) -> Result<ProcessExecutionControlResponse, ClientError> {
        self.call_idempotent(paths::RETRY_NOW, request).await
    }

    /// A state whose call failed and waits for its next attempt (or is parked) goes to its
    /// failure recovery now, as if its retries ran out.
    pub async fn give_up(
        &self,
        request: &ProcessExecutionControlRequest,
    ) -> Result<ProcessExecutionControlResponse, ClientError> {
        self.call_idempotent(paths::GIVE_UP, request).await
    }

    /// Holds the execution: none of its states' calls or timers run until [`Self::resume`].
    pub async fn pause(
        &self,
        request: &ProcessExecutionControlRequest,
    ) -> Result<ProcessExecutionControlResponse, ClientError> {
        self.call_idempotent(paths::PAUSE, request).await
    }

    /// Releases a paused execution: what fell due meanwhile runs now.
    pub async fn resume(
        &self,
        request: &ProcessExecutionControlRequest,
    ) -> Result<ProcessExecutionControlResponse, ClientError> {
        self.call_idempotent(paths::RESUME, request).await
    }

    /// Restarts an execution from a named state: a running one in place (its open
    /// states aborted, their calls, timers and waits cancelled), a closed one as a new
    /// execution of its process id; answers the execution that continues.
    pub async fn reset(
        &self,
        request: &ProcessExecutionResetRequest,
    ) -> Result<ProcessExecutionResetResponse, ClientError> {
        self.call_idempotent(paths::RESET, request).await
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

    // ---- batches ----

    /// Starts a batch: `request.operation` on every execution its selection matches, at
    /// its rate, driven by the service until done. Preview the selection with
    /// [`Client::count`] and the same `processType`, `where` and `businessTable` first.
    pub async fn batch_start(
        &self,
        request: &BatchStartRequest,
    ) -> Result<BatchStartResponse, ClientError> {
        self.call_idempotent(paths::BATCH_START, request).await
    }

    /// Batches, newest first, a page at a time.
    pub async fn batch_list(
        &self,
        request: &BatchListRequest,
    ) -> Result<BatchListResponse, ClientError> {
        self.call(paths::BATCH_LIST, request, Repeat::Safe).await
    }

    /// A batch's progress and the latest executions it skipped or failed on
    /// (`BATCH_NOT_FOUND` when no batch has the id).
    pub async fn batch_describe(
        &self,
        request: &BatchDescribeRequest,
    ) -> Result<BatchDescribeResponse, ClientError> {
        self.call(paths::BATCH_DESCRIBE, request, Repeat::Safe)
            .await
    }

    /// Cancels a running batch after the execution in hand; what it did stays done.
    /// Answers the batch as it closed.
    pub async fn batch_cancel(
        &self,
        request: &BatchCancelRequest,
    ) -> Result<BatchDescribeResponse, ClientError> {
        self.call(paths::BATCH_CANCEL, request, Repeat::Unsafe)
            .await
    }

    /// One attempt: the answer's body, or the failure and the pause its answer asks for.
    async fn attempt(
        &self,
        path: &str,
        body: &[u8],
        timeout: Duration,
    ) -> Result<Vec<u8>, (ClientError, Duration)> {
        // The caller's current span becomes the parent of the service's request span.
        let mut headers = reqwest::header::HeaderMap::new();
        xdb_telemetry::inject_headers(&tracing::Span::current(), &mut headers);
        let mut post = self
            .http
            .post(format!("{}{path}", self.service_url))
            .headers(headers)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .timeout(timeout)
            .body(body.to_vec());
        if let Some(token) = &self.bearer_token {
            post = post.bearer_auth(token);
        }
        let no_answer = |e: reqwest::Error| (ClientError::Transport(e), Duration::ZERO);
        let response = post.send().await.map_err(no_answer)?;
        let status = response.status();
        let pause = retry_after(response.headers());
        let answer = response.bytes().await.map_err(no_answer)?;
        if status.is_success() {
            return Ok(answer.to_vec());
        }
        Err((ClientError::from_response(status.as_u16(), &answer), pause))
    }

    /// Sends `request` (serialized once: every attempt sends the same bytes) until it
    /// is answered, a failure is final, or the retries run out.
    async fn send<Req: Serialize + ?Sized>(
        &self,
        path: &str,
        request: &Req,
        timeout: Duration,
        repeat: Repeat,
    ) -> Result<Vec<u8>, ClientError> {
        let body = serde_json::to_vec(request).map_err(|e| {
            ClientError::Sdk(XdbError::Encode {
                what: format!("request to {path}"),
                message: e.to_string(),
            })
        })?;
        let mut retry = 0;
        loop {
            let (error, retry_after) = match self.attempt(path, &body, timeout).await {
                Ok(answer) => return Ok(answer),
                Err(failure) => failure,
            };
            let Some(why) = retryable(repeat, &error).filter(|_| retry < self.retries) else {
                return Err(error);
            };
            let pause = match why {
                Retryable::NoAnswer => self.backoff.pause(retry),
                Retryable::Unavailable => retry_after,
            };
            retry += 1;
            tracing::debug!(path, ?pause, retry, %error, "sending the call again");
            tokio::time::sleep(pause).await;
        }
    }

    async fn call_with_timeout<Req: Serialize + ?Sized, Resp: DeserializeOwned>(
        &self,
        path: &str,
        request: &Req,
        timeout: Duration,
        repeat: Repeat,
    ) -> Result<Resp, ClientError> {
        let body = self.send(path, request, timeout, repeat).await?;
        serde_json::from_slice(&body)
            .map_err(|e| ClientError::InvalidResponse(format!("{path}: {e}")))
    }

    async fn call<Req: Serialize + ?Sized, Resp: DeserializeOwned>(
        &self,
        path: &str,
        request: &Req,
        repeat: Repeat,
    ) -> Result<Resp, ClientError> {
        self.call_with_timeout(path, request, self.request_timeout, repeat)
            .await
    }

    /// A write with a request id (the caller's, else a fresh one): safe to send again.
    async fn call_idempotent<Req: IdempotentRequest, Resp: DeserializeOwned>(
        &self,
        path: &str,
        request: &Req,
    ) -> Result<Resp, ClientError> {
        let body = self.send_idempotent_body(path, request).await?;
        serde_json::from_slice(&body)
            .map_err(|e| ClientError::InvalidResponse(format!("{path}: {e}")))
    }

    /// [`Client::call_idempotent`] of a call whose answer has nothing to read.
    async fn send_idempotent<Req: IdempotentRequest>(
        &self,
        path: &str,
        request: &Req,
    ) -> Result<(), ClientError> {
        self.send_idempotent_body(path, request).await.map(drop)
    }

    /// Sends `request` with a request id. A service of a release before request ids
    /// refuses the field (every request is checked against its document): when the id
    /// is the client's own, not the caller's, the request goes again without it, as
    /// that service would have taken it, so a rolling upgrade of the services can come
    /// after the clients'.
    async fn send_idempotent_body<Req: IdempotentRequest>(
        &self,
        path: &str,
        request: &Req,
    ) -> Result<Vec<u8>, ClientError> {
        let with_id = with_request_id(request);
        let sent = self
            .send(path, &with_id, self.request_timeout, Repeat::Safe)
            .await;
        match sent {
            Err(error)
                if predates_request_ids(&error) && request.clone().request_id_mut().is_none() =>
            {
                self.send(path, request, self.request_timeout, Repeat::Unsafe)
                    .await
            }
            sent => sent,
        }
    }
}

/// Whether `error` is a service's refusal of the `requestId` field itself: a release
/// before request ids.
fn predates_request_ids(error: &ClientError) -> bool {
    error.sub_type() == Some(ErrorSubType::InvalidRequest)
        && error
            .api_error()
            .is_some_and(|e| e.message.contains("unknown field") && e.message.contains("requestId"))
}

/// The pause a refusal asks for: `Retry-After` in seconds (the service never sends an
/// HTTP date), 1 s when absent or unreadable, at most [`MAX_RETRY_AFTER`].
fn retry_after(headers: &reqwest::header::HeaderMap) -> Duration {
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.trim().parse::<u64>().ok())
        .map_or(Duration::from_secs(1), Duration::from_secs)
        .min(MAX_RETRY_AFTER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_read_in_seconds_and_bounded() {
        let mut headers = reqwest::header::HeaderMap::new();
        assert_eq!(retry_after(&headers), Duration::from_secs(1));
        headers.insert(reqwest::header::RETRY_AFTER, "2".parse().unwrap());
        assert_eq!(retry_after(&headers), Duration::from_secs(2));
        headers.insert(reqwest::header::RETRY_AFTER, "86400".parse().unwrap());
        assert_eq!(retry_after(&headers), MAX_RETRY_AFTER);
        headers.insert(
            reqwest::header::RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&headers), Duration::from_secs(1));
    }

    #[test]
    fn maps_error_bodies_to_typed_errors() {
        let body = br#"{"subType":"PROCESS_ALREADY_STARTED","message":"id p1 is running"}"#;
        let err = ClientError::from_response(409, body);
        assert_eq!(err.status(), Some(409));
        assert_eq!(err.sub_type(), Some(ErrorSubType::ProcessAlreadyStarted));
        assert_eq!(err.api_error().unwrap().message, "id p1 is running");
        assert!(err.to_string().contains("id p1 is running"));

        let err = ClientError::from_response(502, b"<html>bad gateway</html>");
        assert_eq!(err.status(), Some(502));
        assert_eq!(err.sub_type(), None);
        assert!(matches!(err, ClientError::Http { ref body, .. } if body.contains("bad gateway")));
    }

    /// A service whose stop path refuses `refusals` times with OVERLOADED, then
    /// answers 200; its URL and the count of calls it got.
    async fn overloaded_service(
        refusals: usize,
    ) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        let app = axum::Router::new().route(
            paths::STOP,
            axum::routing::post(move || {
                let call = counted.fetch_add(1, Ordering::SeqCst);
                async move {
                    use axum::http::StatusCode;
                    use axum::response::IntoResponse;
                    if call < refusals {
                        let body = r#"{"subType":"OVERLOADED","message":"busy"}"#;
                        let status = StatusCode::SERVICE_UNAVAILABLE;
                        (status, [("retry-after", "0")], body).into_response()
                    } else {
                        (StatusCode::OK, "{}").into_response()
                    }
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (url, calls)
    }

    fn stop_request() -> ProcessExecutionStopRequest {
        ProcessExecutionStopRequest {
            process_execution_id: None,
            request_id: None,
            process_id: "p1".into(),
            stop_type: Default::default(),
            reason: None,
        }
    }

    #[tokio::test]
    async fn overloaded_calls_are_sent_again_a_bounded_number_of_times() {
        use std::sync::atomic::Ordering;
        let (url, calls) = overloaded_service(2).await;
        Client::new(&url).stop(&stop_request()).await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 3);

        let (url, calls) = overloaded_service(5).await;
        let client = Client::new(&url).with_overload_retries(1);
        let error = client.stop(&stop_request()).await.unwrap_err();
        assert_eq!(error.sub_type(), Some(ErrorSubType::Overloaded));
        assert_eq!(error.status(), Some(503));
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn trims_trailing_slash_of_service_url() {
        assert_eq!(Client::new("http://h:1/").service_url(), "http://h:1");
    }
}
