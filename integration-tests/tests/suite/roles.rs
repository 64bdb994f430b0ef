//! Scoped tokens (`security.tokens`): each role may call its paths and no other. A
//! refused call answers 403 `FORBIDDEN`, names the role the path needs and changes
//! nothing; `security.api_tokens` keep every role; the internal notify path, health and
//! the OpenAPI document take no token.
//!
//! The environment's own API service stays open (its client takes the snapshots); the
//! tokens guard a second API service over the same database.

use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use xdb_api_service::ApiServiceConfig;
use xdb_config::ApiToken;
use xdb_integration_tests::processes::entity::{EntityProcess, QUEUE_EVENTS, RPC_INCREMENT};
use xdb_integration_tests::processes::park::ParkProcess;
use xdb_integration_tests::{Database, XdbTestEnv};
use xdb_sdk::protocol::paths::{self, Role};
use xdb_sdk::protocol::*;
use xdb_sdk::{Client, ClientError, ProcessDefinition, ProcessStartOptions};

use crate::common::*;

const LEGACY: &str = "legacy-token-0123456789";

/// The tokens under test: a name, its secret and its roles.
const TOKENS: [(&str, &str, &[Role]); 4] = [
    ("reader", "reader-token-0123456789", &[Role::Read]),
    ("operator", "operator-token-0123456789", &[Role::Operate]),
    ("app", "app-token-0123456789", &[Role::Client]),
    (
        "oncall",
        "oncall-token-0123456789",
        &[Role::Read, Role::Operate],
    ),
];

/// Every guarded path, in an order whose calls all work when allowed (pause before
/// resume, the RPC before the publish that completes its process, then the wait).
const PATHS: [&str; 16] = [
    paths::DESCRIBE,
    paths::LIST,
    paths::HISTORY,
    paths::STATES,
    paths::CONSOLE_ATTRIBUTES,
    paths::CONSOLE_ASYNC_METRICS,
    paths::PAUSE,
    paths::RESUME,
    paths::REPRIORITIZE,
    paths::RETRY_NOW,
    paths::GIVE_UP,
    paths::STOP,
    paths::START,
    paths::RPC,
    paths::PUBLISH_TO_LOCAL_QUEUE,
    paths::WAIT_FOR_COMPLETION,
];

/// An API service with scoped and legacy tokens over the environment's database.
struct GuardedApi {
    url: String,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl GuardedApi {
    async fn start(env: &XdbTestEnv) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut config = ApiServiceConfig::new(env.db().url());
        config.api.listen = listener.local_addr().unwrap();
        config.api.pool_size = 4;
        config.api.console_async_metrics_url = Some(format!("{}/metrics", env.async_urls()[0]));
        config.security.api_tokens = vec![LEGACY.into()];
        config.security.tokens = TOKENS
            .iter()
            .map(|(name, token, roles)| ApiToken {
                name: name.to_string(),
                token: token.to_string(),
                roles: roles.to_vec(),
            })
            .collect();
        let url = format!("http://{}", config.api.listen);
        let state = xdb_api_service::connect(config).await.unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            xdb_api_service::serve(state, listener, async {
                let _ = stopped.await;
            })
            .await
            .expect("the guarded API service serves");
        });
        Self { url, stop, task }
    }

    async fn shutdown(self) {
        let _ = self.stop.send(());
        let _ = tokio::time::timeout(Duration::from_secs(10), self.task).await;
    }
}

/// The processes one token's calls act on, each waiting on a local queue.
struct Fixtures {
    worker_park: String,
    /// Read, the controls and the wait's target.
    park: String,
    /// Stop's target.
    victim: String,
    /// The RPC's and the publish's target (the publish completes it).
    entity: String,
    /// The process id a start would create.
    started: String,
}

impl Fixtures {
    async fn start(env: &XdbTestEnv, workers: &Workers, name: &str) -> Self {
        let fixtures = Self {
            worker_park: workers.park.clone(),
            park: format!("park-{name}"),
            victim: format!("victim-{name}"),
            entity: format!("entity-{name}"),
            started: format!("started-{name}"),
        };
        for id in [&fixtures.park, &fixtures.victim] {
            let exec = start(
                env,
                &ParkProcess,
                &workers.park,
                id,
                ProcessStartOptions::new(),
            )
            .await
            .unwrap();
            wait_state(env, &exec, "ParkState", 1, "WAITING_COMMANDS").await;
        }
        let exec = start(
            env,
            &EntityProcess::default(),
            &workers.entity,
            &fixtures.entity,
            ProcessStartOptions::new().global_attribute_pk_value(&fixtures.entity),
        )
        .await
        .unwrap();
        wait_state(env, &exec, "AwaitEventState", 1, "WAITING_COMMANDS").await;
        fixtures
    }

    /// Everything a call could change about these processes.
    async fn snapshot(&self, env: &XdbTestEnv) -> Vec<String> {
        let mut seen = Vec::new();
        for id in [&self.park, &self.victim, &self.entity, &self.started] {
            let rows = env.process_rows_of(id).await;
            for row in &rows {
                let exec = row.id.to_string();
                seen.push(format!("{:?}", env.history_types(&exec).await));
                seen.push(format!("{:?}", env.messages(&exec).await));
            }
            seen.push(format!("{rows:?}"));
        }
        seen.push(format!("{:?}", env.entity_row(&self.entity).await));
        seen
    }
}

struct Workers {
    park: String,
    entity: String,
}

/// What a call answered: success, or the status and error body.
type Outcome = Result<(), (u16, Option<ApiErrorResponse>)>;

fn outcome<T>(result: Result<T, ClientError>) -> Outcome {
    match result {
        Ok(_) => Ok(()),
        Err(ClientError::Api { status, error }) => Err((status, Some(error))),
        Err(ClientError::Http { status, .. }) => Err((status, None)),
        Err(other) => panic!("no answer: {other}"),
    }
}

/// Calls `path` through `client` (holding a token) with a request that works when the
/// token has the path's role.
async fn call(
    client: &Client,
    api_url: &str,
    token: Option<&str>,
    path: &str,
    f: &Fixtures,
) -> Outcome {
    let control = |id: &str| ProcessExecutionControlRequest {
        process_id: id.into(),
        reason: Some("role test".into()),
        ..Default::default()
    };
    let entity = ProcessDefinition::new(EntityProcess::default());
    match path {
        paths::DESCRIBE => outcome(client.describe_process(&f.park).await),
        paths::LIST => outcome(client.list(&ProcessExecutionListRequest::default()).await),
        paths::HISTORY => outcome(
            client
                .history(&ProcessExecutionHistoryRequest {
                    process_id: f.park.clone(),
                    ..Default::default()
                })
                .await,
        ),
        paths::STATES => outcome(
            client
                .states(&ProcessExecutionStatesRequest {
                    process_id: f.park.clone(),
                    process_execution_id: None,
                })
                .await,
        ),
        paths::CONSOLE_ATTRIBUTES | paths::CONSOLE_ASYNC_METRICS => {
            console_call(api_url, token, path, &f.park).await
        }
        paths::PAUSE => outcome(client.pause(&control(&f.park)).await),
        paths::RESUME => outcome(client.resume(&control(&f.park)).await),
        paths::REPRIORITIZE => outcome(
            client
                .reprioritize(&ProcessExecutionControlRequest {
                    reprioritize: Some(Reprioritization {
                        priority: Some(2),
                        ..Default::default()
                    }),
                    ..control(&f.park)
                })
                .await,
        ),
        // Nothing is failing: answered by the control itself, which finds nothing to do.
        paths::RETRY_NOW => not_applicable_is_fine(client.retry_now(&control(&f.park)).await),
        paths::GIVE_UP => not_applicable_is_fine(client.give_up(&control(&f.park)).await),
        paths::STOP => outcome(
            client
                .stop_process(&f.victim, ProcessExecutionStopType::Terminate, None)
                .await,
        ),
        paths::START => outcome(
            client
                .start_process_with(
                    &ProcessDefinition::new(ParkProcess),
                    &f.started,
                    Some(&f.worker_park),
                    (),
                    ProcessStartOptions::new(),
                )
                .await,
        ),
        paths::RPC => outcome(
            client
                .invoke_rpc_with::<_, i32>(&entity, &f.entity, RPC_INCREMENT, &())
                .await,
        ),
        paths::PUBLISH_TO_LOCAL_QUEUE => outcome(
            client
                .publish_to_local_queue(&f.entity, QUEUE_EVENTS, "from the role test", None)
                .await,
        ),
        paths::WAIT_FOR_COMPLETION => {
            let done = client.wait_for_process_completion(&f.entity, SOON).await;
            if let Ok(done) = &done {
                assert_eq!(done.status, ProcessStatus::Completed);
            }
            outcome(done)
        }
        other => unreachable!("no call for {other}"),
    }
}

fn not_applicable_is_fine<T>(result: Result<T, ClientError>) -> Outcome {
    match outcome(result) {
        Err((409, Some(error))) if error.sub_type == ErrorSubType::ControlNotApplicable => Ok(()),
        other => other,
    }
}

/// The console's read (POST) or its metrics proxy (GET), with `token` if any.
async fn console_call(api_url: &str, token: Option<&str>, path: &str, park: &str) -> Outcome {
    let http = reqwest::Client::new();
    let url = format!("{api_url}{path}");
    let mut request = if path == paths::CONSOLE_ASYNC_METRICS {
        http.get(url)
    } else {
        http.post(url)
            .json(&serde_json::json!({ "processId": park }))
    };
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let body = response.bytes().await.unwrap();
    if (200..300).contains(&status) {
        Ok(())
    } else {
        Err((status, serde_json::from_slice(&body).ok()))
    }
}

/// For each token: every path outside its roles is refused with 403 and changes
/// nothing; then every path within them works.
async fn each_role_calls_its_paths_and_no_other(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let workers = Workers {
        park: serve(&mut env, &ParkProcess).await,
        entity: serve(&mut env, &EntityProcess::default()).await,
    };
    let api = GuardedApi::start(&env).await;
    let every_role: &[Role] = &Role::ALL;
    let all_tokens = TOKENS
        .iter()
        .copied()
        .chain([("legacy", LEGACY, every_role)]);
    for (name, token, roles) in all_tokens {
        let client = Client::new(&api.url)
            .with_bearer_token(token)
            .with_request_timeout(SOON);
        let fixtures = Fixtures::start(&env, &workers, name).await;
        let (allowed, refused): (Vec<&str>, Vec<&str>) = PATHS
            .iter()
            .partition(|path| roles.contains(&paths::role_of(path).unwrap()));
        let before = fixtures.snapshot(&env).await;
        for path in &refused {
            let needed = paths::role_of(path).unwrap();
            match call(&client, &api.url, Some(token), path, &fixtures).await {
                Err((403, Some(error))) => {
                    assert_eq!(error.sub_type, ErrorSubType::Forbidden, "{name} {path}");
                    assert!(
                        error.message.contains(&format!("`{needed}`")),
                        "{name} {path}: {}",
                        error.message
                    );
                    assert!(!error.message.contains(token), "the secret is echoed");
                }
                other => panic!("{name} may not call {path}, got {other:?}"),
            }
        }
        assert_eq!(
            fixtures.snapshot(&env).await,
            before,
            "{name}: a refused call changed something"
        );
        assert!(env.process_rows_of(&fixtures.started).await.is_empty());
        for path in &allowed {
            let answered = call(&client, &api.url, Some(token), path, &fixtures).await;
            assert!(answered.is_ok(), "{name} may call {path}: {answered:?}");
        }
        if allowed.contains(&paths::STOP) {
            let stopped = env.client.describe_process(&fixtures.victim).await.unwrap();
            assert_eq!(stopped.status, ProcessStatus::Terminated);
        }
        if allowed.contains(&paths::START) {
            assert_eq!(env.process_rows_of(&fixtures.started).await.len(), 1);
        }
        if allowed.contains(&paths::RPC) {
            let row = env.entity_row(&fixtures.entity).await.unwrap();
            assert_eq!(row.counter, 1, "the RPC ran once");
        }
    }
    api.shutdown().await;
    env.shutdown().await;
}

/// No token or an unknown one is 401 on every guarded path, whatever its role; the
/// probes, the OpenAPI document, the console's page and the internal notify path need
/// none.
async fn tokens_are_needed_only_where_a_role_is(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let workers = Workers {
        park: serve(&mut env, &ParkProcess).await,
        entity: serve(&mut env, &EntityProcess::default()).await,
    };
    let api = GuardedApi::start(&env).await;
    let fixtures = Fixtures::start(&env, &workers, "anonymous").await;
    let before = fixtures.snapshot(&env).await;
    for token in [None, Some("unknown-token-0123456789")] {
        let mut client = Client::new(&api.url).with_request_timeout(SOON);
        if let Some(token) = token {
            client = client.with_bearer_token(token);
        }
        for path in PATHS {
            let answered = call(&client, &api.url, token, path, &fixtures).await;
            match answered {
                Err((401, Some(error))) => {
                    assert_eq!(error.sub_type, ErrorSubType::Unauthorized, "{path}")
                }
                other => panic!("{path} with {token:?}: expected 401, got {other:?}"),
            }
        }
    }
    assert_eq!(fixtures.snapshot(&env).await, before);
    assert!(env.process_rows_of(&fixtures.started).await.is_empty());

    let http = reqwest::Client::new();
    for path in [
        "/health/live",
        "/health/ready",
        paths::OPENAPI,
        "/ui/",
        "/ui/app.js",
    ] {
        let response = http.get(format!("{}{path}", api.url)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path} needs no token");
    }
    // What the service did is data: its metrics take the read role.
    let metrics = http
        .get(format!("{}{}", api.url, paths::METRICS))
        .send()
        .await
        .unwrap();
    assert_eq!(metrics.status(), 401, "/metrics needs a token");
    // The internal path is not on this listener (internal_calls.rs).
    let notified = http
        .post(format!("{}{}", api.url, paths::INTERNAL_NOTIFY))
        .json(&serde_json::json!({ "closedProcessExecutionIds": [] }))
        .send()
        .await
        .unwrap();
    assert_eq!(
        notified.status(),
        404,
        "the public listener has no internal path"
    );
    api.shutdown().await;
    env.shutdown().await;
}

both_databases!(
    each_role_calls_its_paths_and_no_other,
    tokens_are_needed_only_where_a_role_is,
);
