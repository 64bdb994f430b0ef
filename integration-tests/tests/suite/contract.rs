//! The served OpenAPI document is the contract, both ways: the worker calls the services
//! really make, and the workers' answers, validate against its worker schemas; the
//! service's answers, successes and errors alike, validate against the schema the
//! document gives their operation and status; and every history event type is written
//! with the details the document types.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use jsonschema::Validator;
use serde_json::{json, Value};
use tokio::sync::Notify;
use xdb_integration_tests::processes::flaky::{FlakyConfig, FlakyProcess};
use xdb_integration_tests::processes::park::ParkProcess;
use xdb_integration_tests::processes::Recorder;
use xdb_integration_tests::{Database, EnvOptions, XdbTestEnv};
use xdb_samples::email::{EmailKind, EmailOutbox};
use xdb_samples::user_signup::{self, Form, UserSignupProcess};
use xdb_sdk::protocol::{paths, ErrorSubType, HistoryEventType, ProcessExecutionStopType};
use xdb_sdk::*;

use crate::common::*;

both_databases!(
    worker_calls_and_answers_match_the_served_document,
    error_bodies_match_the_served_document,
    an_rpc_whose_execution_closes_meanwhile_is_its_own_error,
);

const SECRET: &str = "contract-test-signing-secret";
const TOKEN: &str = "contract-test-token";

/// The document an API service serves, and calls checked against it.
struct Served {
    doc: Value,
    api_url: String,
    token: Option<String>,
    http: reqwest::Client,
}

impl Served {
    async fn fetch(env: &XdbTestEnv, token: Option<&str>) -> Self {
        let http = reqwest::Client::new();
        let doc = http
            .get(format!("{}{}", env.api_url(), paths::OPENAPI))
            .send()
            .await
            .expect("the document is served")
            .json()
            .await
            .expect("the document is JSON");
        Self {
            doc,
            api_url: env.api_url().to_string(),
            token: token.map(str::to_string),
            http,
        }
    }

    fn operation(&self, path: &str) -> &Value {
        let operation = &self.doc["paths"][path]["post"];
        assert!(operation.is_object(), "the document has no POST {path}");
        operation
    }

    fn request_schema(&self, path: &str) -> &Value {
        &self.operation(path)["requestBody"]["content"]["application/json"]["schema"]
    }

    /// The schema of `path`'s answer with `status` (or its `default`).
    fn response_schema(&self, path: &str, status: u16) -> &Value {
        let responses = &self.operation(path)["responses"];
        let response = match &responses[status.to_string()] {
            Value::Null => &responses["default"],
            response => response,
        };
        let schema = &response["content"]["application/json"]["schema"];
        assert!(
            schema.is_object(),
            "the document gives POST {path} no JSON answer with status {status}"
        );
        schema
    }

    fn validator(&self, schema: &Value) -> Validator {
        let mut root = schema.clone();
        root["components"] = self.doc["components"].clone();
        jsonschema::draft202012::options()
            .should_validate_formats(false)
            .build(&root)
            .expect("the document's schemas compile")
    }

    /// Panics, naming every problem, unless `instance` matches `schema`.
    #[track_caller]
    fn check(&self, what: &str, schema: &Value, instance: &Value) {
        let validator = self.validator(schema);
        let problems: Vec<String> = validator
            .iter_errors(instance)
            .map(|e| format!("at '{}': {e}", e.instance_path()))
            .collect();
        assert!(
            problems.is_empty(),
            "{what} does not match the served document:\n{}\n{instance:#}",
            problems.join("\n")
        );
    }

    /// POSTs `body` to `path` and checks the answer against the document.
    async fn call(&self, path: &str, body: impl Into<reqwest::Body>) -> (u16, Value) {
        let mut request = self
            .http
            .post(format!("{}{path}", self.api_url))
            .header("content-type", "application/json")
            .body(body);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.expect("the API service answers");
        let status = response.status().as_u16();
        let text = response.text().await.expect("a body");
        let body: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("POST {path} answered {status} with no JSON ({e}): {text}"));
        if let Some(schema) = self.has_schema(path, status) {
            self.check(&format!("POST {path} -> {status}"), &schema, &body);
        }
        (status, body)
    }

    /// The answer's schema, or none for a success without a body schema (stop, publish).
    fn has_schema(&self, path: &str, status: u16) -> Option<Value> {
        if status == 200 && self.operation(path)["responses"]["200"]["content"].is_null() {
            return None;
        }
        Some(self.response_schema(path, status).clone())
    }

    /// A valid request: checked against the document before it is sent.
    async fn ok(&self, path: &str, body: Value) -> Value {
        self.check(
            &format!("request to {path}"),
            self.request_schema(path),
            &body,
        );
        let (status, answer) = self.call(path, body.to_string()).await;
        assert_eq!(status, 200, "POST {path}: {answer}");
        answer
    }

    /// A request refused with `sub_type`, at its status; the body is checked too.
    async fn refused(
        &self,
        path: &str,
        body: impl Into<reqwest::Body>,
        sub_type: ErrorSubType,
    ) -> Value {
        let (status, answer) = self.call(path, body).await;
        assert_eq!(
            (status, answer["subType"].as_str()),
            (sub_type.http_status(), Some(sub_type.as_str())),
            "POST {path}: {answer}"
        );
        answer
    }
}

/// One worker call as the worker saw it.
#[derive(Debug, Clone)]
struct Exchange {
    path: String,
    idempotency_key: Option<String>,
    signed: bool,
    request: Value,
    status: u16,
    response: Value,
}

/// Records every call of the worker it wraps, bodies as sent and answered.
async fn record(State(log): State<Recorder<Exchange>>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_string();
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let idempotency_key = header("idempotency-key");
    let signed = header("x-xdb-signature").is_some();
    let bytes = to_bytes(body, usize::MAX).await.expect("the request body");
    let request_json = serde_json::from_slice(&bytes).expect("XDB sends JSON");
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    let (parts, body) = response.into_parts();
    let bytes = to_bytes(body, usize::MAX).await.expect("the response body");
    log.push(Exchange {
        path,
        idempotency_key,
        signed,
        request: request_json,
        status: parts.status.as_u16(),
        response: serde_json::from_slice(&bytes).expect("the worker answers JSON"),
    });
    Response::from_parts(parts, Body::from(bytes))
}

async fn wait_closed(served: &Served, process_id: &str) -> Value {
    let done = served
        .ok(
            paths::WAIT_FOR_COMPLETION,
            json!({"processId": process_id, "timeoutSeconds": 20}),
        )
        .await;
    assert_eq!(done["timedOut"], false, "{process_id}: {done}");
    done
}

async fn worker_calls_and_answers_match_the_served_document(db: Database) {
    let options = EnvOptions {
        worker_signing_secret: Some(SECRET.into()),
        ..EnvOptions::default()
    };
    let mut env = XdbTestEnv::start_with(db, options).await;
    let served = Served::fetch(&env, None).await;
    let outbox = EmailOutbox::new();
    let flaky = FlakyProcess::new(FlakyConfig {
        failing_attempts: u32::MAX,
        maximum_attempts: 2,
        initial_interval: Duration::from_millis(100),
        recover: true,
        after_timer: None,
    });
    let exchanges = Recorder::new();
    let router = WorkerService::new()
        .register(UserSignupProcess::new(
            outbox.clone(),
            Duration::from_secs(1),
        ))
        .register(flaky.clone())
        .register(ParkProcess)
        .with_signing_secret(SECRET)
        .router()
        .layer(axum::middleware::from_fn_with_state(
            exchanges.clone(),
            record,
        ));
    let worker = env.start_worker(router).await;

    // Sign-up: a timer reminder, then the RPC (which publishes to the waiting state).
    let form = Form {
        email: "ann@example.com".into(),
        name: None,
    };
    user_signup::start_user_signup(&env.client, Some(&worker), "ann", &form)
        .await
        .unwrap();
    xdb_integration_tests::eventually("a reminder", SOON, || async {
        outbox.count("ann@example.com", EmailKind::Reminder) > 0
    })
    .await;
    let answer = user_signup::verify_by_rpc(&env.client, "ann", "email")
        .await
        .unwrap();
    assert_eq!(answer, "done");
    // A state whose attempts fail (500) until its recovery state takes over.
    start(
        &env,
        &flaky,
        &worker,
        "flaky",
        ProcessStartOptions::new().global_attribute_pk_value("f1"),
    )
    .await
    .unwrap();
    // A state woken by a message a client publishes.
    let park = start(
        &env,
        &ParkProcess,
        &worker,
        "park",
        ProcessStartOptions::new(),
    )
    .await
    .unwrap();
    wait_state(&env, &park, "ParkState", 1, "WAITING_COMMANDS").await;
    // The operator's view and controls, on the waiting state.
    let views = json!({"processId": "park"});
    let view = served.ok(paths::STATES, views.clone()).await;
    assert_eq!(view["states"][0]["status"], "WAITING_COMMANDS", "{view}");
    served
        .refused(
            paths::RESUME,
            views.to_string(),
            ErrorSubType::ControlNotApplicable,
        )
        .await;
    let control = json!({"processId": "park", "reason": "checking", "identity": "contract"});
    served.ok(paths::PAUSE, control.clone()).await;
    served.ok(paths::DESCRIBE, views.clone()).await;
    served.ok(paths::STATES, views.clone()).await;
    served.ok(paths::RESUME, control).await;
    // Reordered: a weight alone needs a key, which the change then gives.
    let weight_only = json!({"processId": "park", "reprioritize": {"fairnessWeight": 2}});
    served
        .refused(
            paths::REPRIORITIZE,
            weight_only.to_string(),
            ErrorSubType::ControlNotApplicable,
        )
        .await;
    served
        .ok(
            paths::REPRIORITIZE,
            json!({"processId": "park", "reason": "checking", "identity": "contract",
                   "reprioritize": {"priority": 2, "fairnessKey": "contract",
                                    "fairnessWeight": 2}}),
        )
        .await;
    served
        .ok(
            paths::PUBLISH_TO_LOCAL_QUEUE,
            json!({"processId": "park", "messages": [{"queueName": "go", "dedupId": "m1",
                   "payload": {"encoding": "json", "data": "\"go!\""}}]}),
        )
        .await;

    let mut event_types = BTreeSet::new();
    for process_id in [
        user_signup::process_id("ann"),
        "flaky".into(),
        "park".into(),
    ] {
        let done = wait_closed(&served, &process_id).await;
        assert_eq!(done["status"], "COMPLETED", "{process_id}: {done}");
        let execution = done["processExecutionId"].clone();
        let body = json!({"processId": process_id, "processExecutionId": execution});
        served.ok(paths::DESCRIBE, body.clone()).await;
        let history = served.ok(paths::HISTORY, body).await;
        for event in history["events"].as_array().unwrap() {
            event_types.insert(event["eventType"].as_str().unwrap().to_string());
        }
    }
    let listed = served
        .ok(
            paths::LIST,
            json!({"filter": {"status": "COMPLETED"}, "pageSize": 2}),
        )
        .await;
    assert_eq!(listed["executions"].as_array().unwrap().len(), 2);
    // Retry-now, give-up and parking need failing or refused states: the operate tests
    // write those events (their details are checked there); the reset tests write
    // PROCESS_RESET and check its details.
    let elsewhere = [
        HistoryEventType::RetryRequested,
        HistoryEventType::GiveUpRequested,
        HistoryEventType::TaskParked,
        HistoryEventType::ProcessReset,
    ];
    let all: BTreeSet<String> = HistoryEventType::ALL
        .iter()
        .filter(|t| !elsewhere.contains(t))
        .map(|t| t.as_str().to_string())
        .collect();
    assert_eq!(event_types, all, "every event type was written and typed");

    let exchanges = exchanges.all();
    let worker_paths: BTreeSet<&str> = exchanges.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        worker_paths,
        BTreeSet::from([
            paths::WORKER_WAIT_UNTIL,
            paths::WORKER_EXECUTE,
            paths::WORKER_RPC
        ])
    );
    assert!(
        exchanges.iter().any(|e| e.status == 500),
        "a failed attempt"
    );
    for exchange in &exchanges {
        let what = format!("{} ({})", exchange.path, exchange.status);
        served.check(
            &format!("XDB's call to {what}"),
            served.request_schema(&exchange.path),
            &exchange.request,
        );
        served.check(
            &format!("the worker's answer to {what}"),
            served.response_schema(&exchange.path, exchange.status),
            &exchange.response,
        );
        assert!(exchange.signed, "{what} carries X-XDB-Signature");
        assert_eq!(
            exchange.idempotency_key.as_deref(),
            exchange.request["context"]["idempotencyKey"].as_str(),
            "{what}: the Idempotency-Key header is the context's"
        );
    }
    env.shutdown().await;
}

async fn error_bodies_match_the_served_document(db: Database) {
    let options = EnvOptions {
        api_tokens: vec![TOKEN.into()],
        ..EnvOptions::default()
    };
    let env = XdbTestEnv::start_with(db, options).await;
    let served = Served::fetch(&env, Some(TOKEN)).await;
    let start_body = |process_id: &str, extra: Value| {
        let mut body = json!({"processId": process_id, "processType": "Anything",
                              "workerUrl": "http://127.0.0.1:1"});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body.to_string()
    };
    use ErrorSubType::*;

    // 400: a plain value where a payload belongs, named with the expected shape.
    let refusal = served
        .refused(
            paths::START,
            start_body("p", json!({"startStateInput": {"email": "a@b.c"}})),
            InvalidRequest,
        )
        .await;
    let message = refusal["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "invalid request body at startStateInput: expected a payload {\"encoding\": \"json\""
        ),
        "{message}"
    );
    served.refused(paths::LIST, "[]", InvalidRequest).await;
    // 401: the service wants the token.
    let anonymous = Served {
        token: None,
        ..Served::fetch(&env, None).await
    };
    anonymous
        .refused(
            paths::DESCRIBE,
            json!({"processId": "p"}).to_string(),
            Unauthorized,
        )
        .await;
    // 404, 413.
    served
        .refused(
            paths::DESCRIBE,
            json!({"processId": "nobody"}).to_string(),
            ProcessNotFound,
        )
        .await;
    let huge = json!({"processId": "x".repeat(1024 * 1024 + 1)}).to_string();
    served.refused(paths::DESCRIBE, huge, PayloadTooLarge).await;
    // 424 APP_DATABASE_ERROR: the business table is missing; nothing starts.
    let missing_table = json!({"processStartConfig": {"globalAttributeConfig": {
        "tableName": "no_such_table", "primaryKey": {"column": "id", "value": "1"}}}});
    served
        .refused(
            paths::START,
            start_body("t", missing_table),
            AppDatabaseError,
        )
        .await;
    served
        .refused(
            paths::DESCRIBE,
            json!({"processId": "t"}).to_string(),
            ProcessNotFound,
        )
        .await;
    // 409 PROCESS_ALREADY_STARTED, by the id-reuse policy.
    let disallow = json!({"processStartConfig": {"idReusePolicy": "DISALLOW_REUSE"}});
    served
        .ok(
            paths::START,
            serde_json::from_str(&start_body("idle", disallow.clone())).unwrap(),
        )
        .await;
    served
        .refused(
            paths::START,
            start_body("idle", disallow),
            ProcessAlreadyStarted,
        )
        .await;
    // 424 WORKER_API_ERROR: the RPC's worker cannot be reached; its error is named.
    let rpc = json!({"processId": "idle", "rpcName": "r", "timeoutSeconds": 5}).to_string();
    let refusal = served
        .refused(paths::RPC, rpc.clone(), WorkerApiError)
        .await;
    assert!(refusal["workerError"].is_string(), "{refusal}");
    // 409 PROCESS_NOT_RUNNING once stopped: for stop, publish and RPC alike.
    let stop = json!({"processId": "idle", "reason": "done"}).to_string();
    let (status, _) = served.call(paths::STOP, stop.clone()).await;
    assert_eq!(status, 200);
    served.refused(paths::STOP, stop, ProcessNotRunning).await;
    served.refused(paths::RPC, rpc, ProcessNotRunning).await;
    let publish = json!({"processId": "idle", "messages": [{"queueName": "q"}]}).to_string();
    served
        .refused(paths::PUBLISH_TO_LOCAL_QUEUE, publish, ProcessNotRunning)
        .await;
    env.shutdown().await;
}

/// A process whose RPC `pass` waits at a gate the test opens, then writes a local
/// attribute and publishes, so a test can close the execution while the worker runs.
#[derive(Clone, Default)]
struct GateProcess {
    entered: Arc<Notify>,
    open: Arc<Notify>,
}

impl GateProcess {
    async fn pass(
        &self,
        _ctx: &Context,
        _input: (),
        persistence: &mut Persistence,
        communication: &mut Communication,
    ) -> Result<String> {
        self.entered.notify_one();
        self.open.notified().await;
        persistence.set_local_attribute("touched", "by the rpc")?;
        communication.publish_to_local_queue("go", "from the rpc")?;
        Ok("passed".into())
    }
}

impl Process for GateProcess {
    fn state_schema(&self) -> StateSchema {
        StateSchema::with_starting_state(xdb_integration_tests::processes::park::ParkState)
    }

    fn persistence_schema(&self) -> PersistenceSchema {
        PersistenceSchema::new()
            .local_attribute("touched")
            .local_attribute(xdb_integration_tests::processes::park::LOCAL_TAG)
    }

    fn communication_schema(&self) -> CommunicationSchema {
        CommunicationSchema::new().local_queue("go")
    }

    fn rpc_schema(&self) -> RpcSchema<Self> {
        RpcSchema::new().rpc("pass", Self::pass)
    }
}

async fn an_rpc_whose_execution_closes_meanwhile_is_its_own_error(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let served = Arc::new(Served::fetch(&env, None).await);
    let gate = GateProcess::default();
    let worker = serve(&mut env, &gate).await;
    let exec = start(&env, &gate, &worker, "gated", ProcessStartOptions::new())
        .await
        .unwrap();
    wait_state(&env, &exec, "ParkState", 1, "WAITING_COMMANDS").await;

    let call = {
        let served = served.clone();
        let rpc = json!({"processId": "gated", "rpcName": "pass", "timeoutSeconds": 30});
        tokio::spawn(async move { served.call(paths::RPC, rpc.to_string()).await })
    };
    tokio::time::timeout(SOON, gate.entered.notified())
        .await
        .expect("the worker receives the RPC");
    // The RPC holds no lock on the execution while its worker runs: a stop goes through.
    env.client
        .stop_process("gated", ProcessExecutionStopType::Terminate, None)
        .await
        .unwrap();
    gate.open.notify_one();
    let (status, refusal) = tokio::time::timeout(SOON, call)
        .await
        .expect("the RPC answers")
        .unwrap();
    let sub_type = ErrorSubType::ProcessClosedDuringRpc;
    assert_eq!(
        (status, refusal["subType"].as_str()),
        (sub_type.http_status(), Some(sub_type.as_str())),
        "{refusal}"
    );
    assert!(
        refusal["message"].as_str().unwrap().contains("'pass'"),
        "{refusal}"
    );
    // The worker's writes and message were discarded with its answer.
    assert!(env.local_attributes(&exec).await.is_empty());
    assert!(env.messages(&exec).await.is_empty());
    let history = env.history_types(&exec).await;
    assert!(
        !history.contains(&"RPC_COMPLETED".to_string()),
        "{history:?}"
    );
    assert_eq!(env.process_row(&exec).await.unwrap().status, "TERMINATED");
    env.shutdown().await;
}
