//! The worker host: an axum router serving the worker API for registered processes.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tracing::Instrument;
use xdb_protocol::paths;
use xdb_protocol::{
    AsyncStateExecuteRequest, AsyncStateExecuteResponse, AsyncStateWaitUntilRequest,
    AsyncStateWaitUntilResponse, ProcessRpcWorkerRequest, ProcessRpcWorkerResponse,
    WorkerErrorResponse,
};

use crate::command::CommandResults;
use crate::communication::Communication;
use crate::error::{InvokeError, XdbError};
use crate::persistence::Persistence;
use crate::process::Process;
use crate::registry::ProcessDefinition;

/// `errorType` of a worker error body: the request names an unregistered process type.
pub const ERROR_UNKNOWN_PROCESS_TYPE: &str = "UNKNOWN_PROCESS_TYPE";
/// `errorType`: the request names a state the process does not register.
pub const ERROR_UNKNOWN_STATE: &str = "UNKNOWN_STATE";
/// `errorType`: the request names an RPC the process does not register.
pub const ERROR_UNKNOWN_RPC: &str = "UNKNOWN_RPC";
/// `errorType`: the state's (or RPC's) input could not be decoded into its type.
pub const ERROR_UNDECODABLE_INPUT: &str = "UNDECODABLE_INPUT";
/// `errorType`: waitUntil was called for a state that has none.
pub const ERROR_NOT_IMPLEMENTED: &str = "NOT_IMPLEMENTED";
/// `errorType`: the request body could not be decoded.
pub const ERROR_INVALID_REQUEST: &str = "INVALID_REQUEST";
/// `errorType`: user code failed, or returned something the SDK cannot send.
pub const ERROR_USER_CODE: &str = "USER_CODE_ERROR";

/// A failed worker call: the HTTP status and the JSON body the worker answers with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCallError {
    pub status: StatusCode,
    pub body: WorkerErrorResponse,
}

impl WorkerCallError {
    fn new(status: StatusCode, error_type: &str, detail: impl Into<String>) -> Self {
        Self {
            status,
            body: WorkerErrorResponse {
                detail: detail.into(),
                error_type: Some(error_type.to_string()),
            },
        }
    }

    fn bad_request(error_type: &str, detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, error_type, detail)
    }

    fn user(err: impl std::fmt::Display) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ERROR_USER_CODE,
            err.to_string(),
        )
    }
}

impl From<InvokeError> for WorkerCallError {
    fn from(err: InvokeError) -> Self {
        match err {
            InvokeError::UndecodableInput(detail) => {
                Self::bad_request(ERROR_UNDECODABLE_INPUT, detail)
            }
            InvokeError::NotImplemented(detail) => Self::bad_request(ERROR_NOT_IMPLEMENTED, detail),
            InvokeError::User(err) => Self::user(err),
        }
    }
}

impl IntoResponse for WorkerCallError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body)).into_response()
    }
}

/// Connections the kernel queues for a listener until it accepts them. At the 128 that
/// std and tokio ask for, a burst of new connections (an async service calling 500
/// states whose timers fired together, 500 clients starting processes at once) overflows
/// the queue while the accept loop waits for a core, and each SYN dropped costs its call
/// a second before it is sent again. The kernel caps the figure at `net.core.somaxconn`
/// (4,096 by default since Linux 5.4).
pub const LISTEN_BACKLOG: u32 = 1024;

/// A listener on `address` with a queue of [`LISTEN_BACKLOG`], its address reusable at
/// once after a restart (as `TcpListener::bind`'s is), and Nagle's algorithm off on the
/// connections it accepts. Workers should use it rather than
/// `tokio::net::TcpListener::bind`, whose queue is 128; XDB's own services do.
///
/// With Nagle's algorithm on, an answer written in two parts waits for the peer's ACK
/// of the first before the second leaves, and a peer that delays its ACKs makes that up
/// to 40 ms. hyper writes most answers at once, but streamed and long answers go out
/// in parts. The kernel copies `TCP_NODELAY` from the listening socket onto every
/// connection it accepts, so one call here covers them all.
pub fn bind_listener(address: std::net::SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = match address {
        std::net::SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        std::net::SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.set_nodelay(true)?;
    socket.bind(address)?;
    socket.listen(LISTEN_BACKLOG)
}

/// The processes one worker hosts, and the router that serves them.
///
/// ```text
/// let app: axum::Router = WorkerService::new().register(UserSignupProcess::default()).router();
/// let listener = xdb_sdk::worker::bind_listener("0.0.0.0:8803".parse()?)?;
/// axum::serve(listener, app).await?;
/// ```
#[derive(Clone, Default)]
pub struct WorkerService {
    processes: HashMap<String, Arc<ProcessDefinition>>,
    /// When set, calls without XDB's valid signature are refused with 401.
    signing_secret: Option<Arc<[u8]>>,
}

impl WorkerService {
    pub fn new() -> Self {
        Self::default()
    }

    /// Hosts `process`.
    ///
    /// # Panics
    /// When a process of the same type is already registered, or the definition is
    /// inconsistent (see [`ProcessDefinition::new`]).
    pub fn register<P: Process>(self, process: P) -> Self {
        self.register_definition(ProcessDefinition::new(process))
    }

    /// Hosts an already built definition. Panics like [`WorkerService::register`].
    pub fn register_definition(mut self, definition: ProcessDefinition) -> Self {
        let process_type = definition.process_type().to_string();
        assert!(
            !self.processes.contains_key(&process_type),
            "process type {process_type:?} is registered twice"
        );
        self.processes.insert(process_type, Arc::new(definition));
        self
    }

    /// The definitions of every hosted process type, as the service receives them, by
    /// type.
    pub fn wire_definitions(&self) -> Vec<xdb_protocol::ProcessDefinition> {
        let mut types: Vec<&String> = self.processes.keys().collect();
        types.sort();
        types
            .into_iter()
            .map(|t| self.processes[t].wire_definition())
            .collect()
    }

    /// Registers the hosted process types with the service as `deployment`, so the
    /// service checks requests against them and routes starts that name no worker URL
    /// here. Idempotent: call it each time the worker starts (the client's token needs
    /// the `deploy` role). Refused with `DEFINITION_INCOMPATIBLE` when a state running
    /// executions wait in was removed, unless `force`.
    pub async fn register_with(
        &self,
        client: &crate::Client,
        deployment: xdb_protocol::WorkerDeployment,
        force: bool,
    ) -> Result<xdb_protocol::RegisterDefinitionsResponse, crate::ClientError> {
        client
            .register_definitions(&xdb_protocol::RegisterDefinitionsRequest {
                deployment,
                definitions: self.wire_definitions(),
                force,
            })
            .await
    }

    /// The definition of `process_type`, if hosted.
    pub fn definition(&self, process_type: &str) -> Option<&Arc<ProcessDefinition>> {
        self.processes.get(process_type)
    }

    /// Routes for the three worker API paths, to merge into the user's own app. Each call
    /// is handled in a span continuing the XDB service's trace (its `traceparent`).
    pub fn router(&self) -> Router {
        let router = Router::new()
            .route(paths::WORKER_WAIT_UNTIL, post(wait_until_route))
            .route(paths::WORKER_EXECUTE, post(execute_route))
            .route(paths::WORKER_RPC, post(rpc_route))
            .route_layer(axum::middleware::from_fn(traced))
            .with_state(Arc::new(self.clone()));
        match &self.signing_secret {
            Some(secret) => router.layer(axum::middleware::from_fn_with_state(
                secret.clone(),
                crate::signature::require_signature,
            )),
            None => router,
        }
    }

    /// Refuses calls that do not carry XDB's signature made with `secret` (the
    /// services' `security.worker_signing_secret`), so only XDB can drive this worker.
    pub fn with_signing_secret(mut self, secret: impl AsRef<[u8]>) -> Self {
        self.signing_secret = Some(Arc::from(secret.as_ref()));
        self
    }

    /// Serves one waitUntil call.
    pub async fn wait_until(
        &self,
        req: AsyncStateWaitUntilRequest,
    ) -> Result<AsyncStateWaitUntilResponse, WorkerCallError> {
        let def = self.process(&req.process_type)?;
        let state = def
            .state(&req.state_id)
            .ok_or_else(|| unknown_state(def, &req.state_id))?;
        let (mut persistence, mut communication) = call_scope(def, req.attributes, false);
        let request = state
            .wait_until(
                &req.context,
                req.state_input.as_ref(),
                &mut persistence,
                &mut communication,
            )
            .await?;
        for queue in request.queue_names() {
            communication
                .check_queue(queue)
                .map_err(WorkerCallError::user)?;
        }
        let (publish_to_local_queue, _) = communication.into_parts();
        Ok(AsyncStateWaitUntilResponse {
            command_request: request.to_protocol(),
            writes: persistence.into_writes(),
            publish_to_local_queue,
        })
    }

    /// Serves one execute call.
    pub async fn execute(
        &self,
        req: AsyncStateExecuteRequest,
    ) -> Result<AsyncStateExecuteResponse, WorkerCallError> {
        let def = self.process(&req.process_type)?;
        let state = def
            .state(&req.state_id)
            .ok_or_else(|| unknown_state(def, &req.state_id))?;
        let (mut persistence, mut communication) = call_scope(def, req.attributes, false);
        let results = CommandResults::new(req.command_results);
        let decision = state
            .execute(
                &req.context,
                req.state_input.as_ref(),
                &results,
                &mut persistence,
                &mut communication,
            )
            .await?;
        let state_decision = def
            .state_decision(&decision)
            .map_err(WorkerCallError::user)?;
        let (publish_to_local_queue, _) = communication.into_parts();
        Ok(AsyncStateExecuteResponse {
            state_decision,
            writes: persistence.into_writes(),
            publish_to_local_queue,
        })
    }

    /// Serves one RPC call.
    pub async fn rpc(
        &self,
        req: ProcessRpcWorkerRequest,
    ) -> Result<ProcessRpcWorkerResponse, WorkerCallError> {
        let def = self.process(&req.process_type)?;
        let rpc = def.rpc(&req.rpc_name).ok_or_else(|| {
            WorkerCallError::bad_request(
                ERROR_UNKNOWN_RPC,
                format!(
                    "process {:?} has no rpc {:?}",
                    def.process_type(),
                    req.rpc_name
                ),
            )
        })?;
        let (mut persistence, mut communication) = call_scope(def, req.attributes, true);
        let output = rpc
            .rpc
            .invoke(
                &req.context,
                req.input.as_ref(),
                &mut persistence,
                &mut communication,
            )
            .await?;
        let (publish_to_local_queue, movements) = communication.into_parts();
        let append_next_states = movements
            .iter()
            .map(|m| def.state_movement(m))
            .collect::<Result<_, XdbError>>()
            .map_err(WorkerCallError::user)?;
        Ok(ProcessRpcWorkerResponse {
            output,
            writes: persistence.into_writes(),
            publish_to_local_queue,
            append_next_states,
        })
    }

    fn process(&self, process_type: &str) -> Result<&ProcessDefinition, WorkerCallError> {
        self.processes
            .get(process_type)
            .map(|d| d.as_ref())
            .ok_or_else(|| {
                WorkerCallError::bad_request(
                    ERROR_UNKNOWN_PROCESS_TYPE,
                    format!("this worker hosts no process type {process_type:?}"),
                )
            })
    }
}

impl std::fmt::Debug for WorkerService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut types: Vec<&String> = self.processes.keys().collect();
        types.sort();
        f.debug_struct("WorkerService")
            .field("processes", &types)
            .finish()
    }
}

fn unknown_state(def: &ProcessDefinition, state_id: &str) -> WorkerCallError {
    WorkerCallError::bad_request(
        ERROR_UNKNOWN_STATE,
        format!("process {:?} has no state {state_id:?}", def.process_type()),
    )
}

fn call_scope(
    def: &ProcessDefinition,
    attributes: xdb_protocol::LoadedAttributes,
    in_rpc: bool,
) -> (Persistence, Communication) {
    (
        Persistence::new(
            def.process_type(),
            Arc::clone(def.persistence_schema()),
            attributes,
        ),
        Communication::new(
            def.process_type(),
            Arc::clone(def.communication_schema()),
            in_rpc,
        ),
    )
}

/// Decodes the body ourselves: axum's `Json` extractor answers bad bodies with plain
/// text, and the protocol promises a JSON error body.
fn decode_body<T: DeserializeOwned>(body: &Bytes) -> Result<T, WorkerCallError> {
    serde_json::from_slice(body).map_err(|e| {
        WorkerCallError::bad_request(
            ERROR_INVALID_REQUEST,
            format!("malformed request body: {e}"),
        )
    })
}

fn respond<T: Serialize>(api: &str, result: Result<T, WorkerCallError>) -> Response {
    match result {
        Ok(body) => Json(body).into_response(),
        Err(err) => {
            tracing::warn!(api, status = err.status.as_u16(), detail = %err.body.detail, "worker call failed");
            err.into_response()
        }
    }
}

/// Runs a worker call in a server span, a child of the caller's span when OpenTelemetry
/// is installed, so the state's own spans join the process's trace.
async fn traced(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let span = tracing::info_span!(
        "xdb.worker.handle",
        otel.name = %format!("{} {}", request.method(), request.uri().path()),
        otel.kind = "server",
    );
    xdb_telemetry::set_parent_from_headers(&span, request.headers());
    next.run(request).instrument(span).await
}

async fn wait_until_route(State(worker): State<Arc<WorkerService>>, body: Bytes) -> Response {
    let result = match decode_body(&body) {
        Ok(req) => worker.wait_until(req).await,
        Err(err) => Err(err),
    };
    respond("wait-until", result)
}

async fn execute_route(State(worker): State<Arc<WorkerService>>, body: Bytes) -> Response {
    let result = match decode_body(&body) {
        Ok(req) => worker.execute(req).await,
        Err(err) => Err(err),
    };
    respond("execute", result)
}

async fn rpc_route(State(worker): State<Arc<WorkerService>>, body: Bytes) -> Response {
    let result = match decode_body(&body) {
        Ok(req) => worker.rpc(req).await,
        Err(err) => Err(err),
    };
    respond("rpc", result)
}
