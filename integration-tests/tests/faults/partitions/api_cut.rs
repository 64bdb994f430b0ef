//! An API instance cut off from the database (both directions blackholed) in the middle
//! of an RPC that holds the process's business row locked across its worker call. The
//! database keeps that transaction, and the lock, until it ends the orphaned session
//! (`xdb-persistence/src/session_limits.rs`: 70 s idle in a transaction); the test
//! measures how long an RPC on the same process, through another API instance, is
//! blocked, and asserts the bound. Once healed, the cut-off RPC's caller gets 503
//! `DATABASE_UNAVAILABLE` (its transaction is gone), nothing of it was written, and the
//! instance serves again.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use tokio::sync::watch;
use xdb_api_service::ApiServiceConfig;
use xdb_config::QueueMode;
use xdb_integration_tests::processes::entity::{EntityProcess, RPC_INCREMENT};
use xdb_integration_tests::tcp_proxy::{Direction, TcpProxy};
use xdb_integration_tests::{eventually, Database, EnvOptions, XdbTestEnv};
use xdb_sdk::protocol::paths;
use xdb_sdk::{Client, ClientError, ProcessDefinition, ProcessStartOptions, WorkerService};

use super::Report;

const PROCESS_ID: &str = "locked-by-a-lost-rpc";
/// The database ends the RPC's session 15 s after its last statement (the default RPC
/// timeout and the margin); the lock waiter then needs one more round trip, and a
/// loaded CI machine some slack. Far below the 70 s the session would have otherwise.
const BLOCKED_AT_MOST: Duration = Duration::from_secs(30);

/// Holds the worker's first RPC call until opened, so the cut comes while the RPC's
/// transaction holds the row lock.
#[derive(Clone)]
struct RpcGate {
    entered: Arc<AtomicBool>,
    open: Arc<watch::Sender<bool>>,
}

impl RpcGate {
    fn new() -> Self {
        Self {
            entered: Arc::default(),
            open: Arc::new(watch::channel(false).0),
        }
    }
}

async fn gate(State(gate): State<RpcGate>, request: Request, next: Next) -> Response {
    if request.uri().path() == paths::WORKER_RPC && !gate.entered.swap(true, Ordering::SeqCst) {
        let _ = gate.open.subscribe().wait_for(|open| *open).await;
    }
    next.run(request).await
}

/// Serves another API instance on the database at `database_url`; its base URL and the
/// sender that stops it.
async fn spawn_api(database_url: String) -> (String, tokio::sync::oneshot::Sender<()>) {
    let mut config = ApiServiceConfig::new(database_url);
    config.api.pool_size = 4;
    xdb_integration_tests::serve_api(config).await
}

pub async fn run(db: Database) -> Report {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            queue_mode: QueueMode::Database,
            ..Default::default()
        },
    )
    .await;
    let process = EntityProcess::default();
    let rpc_gate = RpcGate::new();
    let router = WorkerService::new()
        .register(process.clone())
        .router()
        .layer(axum::middleware::from_fn_with_state(rpc_gate.clone(), gate));
    let worker = env.start_worker(router).await;
    let definition = ProcessDefinition::new(process.clone());
    let execution = env
        .client
        .start_process_with(
            &definition,
            PROCESS_ID,
            Some(&worker),
            (),
            ProcessStartOptions::new().global_attribute_pk_value("lost-rpc"),
        )
        .await
        .expect("start");
    eventually(
        "the process to wait for its event",
        Duration::from_secs(30),
        || async {
            env.state_row(&execution, "AwaitEventState", 1)
                .await
                .is_some_and(|s| s.status == "WAITING_COMMANDS")
        },
    )
    .await;

    let proxy = TcpProxy::start_for_url(env.db().url()).await;
    let (cut_url, stop_cut_api) = spawn_api(proxy.url_to(env.db().url())).await;
    // Long client timeouts: the answers measured here must come from the services.
    let cut_client = Client::new(cut_url).with_request_timeout(Duration::from_secs(200));
    let other_client =
        Client::new(env.api_url().to_string()).with_request_timeout(Duration::from_secs(200));
    let lost_rpc = {
        let (client, definition) = (cut_client.clone(), ProcessDefinition::new(process.clone()));
        tokio::spawn(async move {
            client
                .invoke_rpc_with::<_, i32>(&definition, PROCESS_ID, RPC_INCREMENT, &())
                .await
        })
    };
    eventually(
        "the RPC to reach the worker",
        Duration::from_secs(20),
        || async { rpc_gate.entered.load(Ordering::SeqCst) },
    )
    .await;
    proxy.blackhole(Direction::Both);
    let cut = Instant::now();
    // The worker answers; the cut-off instance's writes and commit go into the blackhole.
    rpc_gate.open.send_replace(true);

    // The same RPC through the healthy instance waits for the row lock (MariaDB gives up
    // a lock wait after 50 s: then it is asked again).
    let mut refusals = Vec::new();
    let answer = loop {
        match other_client
            .invoke_rpc_with::<_, i32>(&definition, PROCESS_ID, RPC_INCREMENT, &())
            .await
        {
            Ok(answer) => break answer,
            Err(error) => {
                refusals.push(error.to_string());
                assert!(
                    cut.elapsed() < BLOCKED_AT_MOST,
                    "still blocked after {:?}: {refusals:?}",
                    cut.elapsed()
                );
            }
        }
    };
    let blocked = cut.elapsed();
    assert_eq!(
        answer, 1,
        "the lost RPC's increment is not committed (blocked {blocked:?}, refused: {refusals:?})"
    );
    assert!(
        blocked <= BLOCKED_AT_MOST,
        "other calls were blocked for {blocked:?}"
    );

    proxy.heal();
    let healed = Instant::now();
    let lost = tokio::time::timeout(Duration::from_secs(30), lost_rpc)
        .await
        .expect("the cut-off RPC answers once the path heals")
        .expect("the RPC task");
    // An answer from the service. The database ended the session: a lost connection
    // (503 DATABASE_UNAVAILABLE), not an error of the user's table (APP_DATABASE_ERROR)
    // although a business-table statement met it.
    match &lost {
        Err(ClientError::Api { status, error }) => {
            assert_eq!(*status, 503, "{error:?}");
            assert_eq!(
                error.sub_type,
                xdb_protocol::ErrorSubType::DatabaseUnavailable,
                "{status}: {error:?}"
            );
        }
        other => panic!("the cut-off RPC's caller must get a service error, got {other:?}"),
    }
    // The healed instance serves again, on new connections.
    let mut again = None;
    let deadline = Instant::now() + Duration::from_secs(20);
    while again.is_none() {
        assert!(
            Instant::now() < deadline,
            "the healed API instance stays wedged"
        );
        again = cut_client
            .invoke_rpc_with::<_, i32>(&definition, PROCESS_ID, RPC_INCREMENT, &())
            .await
            .ok();
    }
    let resumed = healed.elapsed();
    assert_eq!(again, Some(2));

    // Nothing half-written: two increments committed, each with its history event.
    let counter = env.entity_row("lost-rpc").await.expect("the row").counter;
    let completed = env
        .history_types(&execution)
        .await
        .iter()
        .filter(|t| *t == "RPC_COMPLETED")
        .count();
    assert_eq!((counter, completed), (2, 2), "committed RPCs");
    assert_eq!(
        process.rpc_calls.len(),
        3,
        "worker calls: the lost one and two"
    );
    println!(
        "partition api-db-blackhole-mid-rpc [{db:?}]: other calls blocked {:.1} s \
         ({} refused meanwhile: {refusals:?}); the lost RPC's caller got {:?}",
        blocked.as_secs_f64(),
        refusals.len(),
        lost.err().map(|e| e.to_string()),
    );
    let _ = stop_cut_api.send(());
    env.shutdown().await;
    Report {
        db,
        fault: "api-db-blackhole-mid-rpc",
        injected: 1,
        affected: 1,
        lost: 0,
        duplicated: usize::try_from(counter - 2).unwrap_or(0),
        recovery: vec![blocked],
        recovery_from: "cut",
        resumed_after_heal: Some(resumed),
    }
}
