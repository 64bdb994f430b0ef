//! Who may call XDB and whom XDB calls: bearer tokens on the service API, the worker URL
//! policy, and signed worker calls that workers built with the SDK verify.

use xdb_integration_tests::processes::park::{ParkProcess, QUEUE_GO};
use xdb_integration_tests::{eventually, Database, EnvOptions, XdbTestEnv};
use xdb_sdk::protocol::*;
use xdb_sdk::{Client, ClientError, ProcessDefinition, ProcessStartOptions, WorkerService};

use crate::common::*;

const TOKEN: &str = "test-token-0123456789";
const SECRET: &str = "worker-secret-0123456789";

async fn start_park(client: &Client, worker: &str, id: &str) -> Result<String, ClientError> {
    client
        .start_process_with(
            &ProcessDefinition::new(ParkProcess),
            id,
            Some(worker),
            (),
            ProcessStartOptions::new(),
        )
        .await
}

async fn finish_park(env: &XdbTestEnv, id: &str) -> ProcessStatus {
    env.client
        .publish_to_local_queue(id, QUEUE_GO, "go", None)
        .await
        .unwrap();
    let done = env
        .client
        .wait_for_process_completion(id, SOON)
        .await
        .unwrap();
    done.status
}

async fn bearer_tokens_guard_the_service_api(db: Database) {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            api_tokens: vec!["old-token-0123456789".into(), TOKEN.into()],
            ..Default::default()
        },
    )
    .await;
    let worker = serve(&mut env, &ParkProcess).await;
    let anonymous = Client::new(env.api_url());
    let wrong = Client::new(env.api_url()).with_bearer_token("not-the-token-0123456");
    for (client, what) in [(&anonymous, "no token"), (&wrong, "a wrong token")] {
        let refused = start_park(client, &worker, "guarded").await;
        let error = expect_api_error(refused, 401, ErrorSubType::Unauthorized);
        assert!(!error.message.is_empty(), "{what}");
        expect_api_error(
            client.describe_process("guarded").await,
            401,
            ErrorSubType::Unauthorized,
        );
    }
    assert!(
        env.process_rows_of("guarded").await.is_empty(),
        "a refused start wrote rows"
    );
    // Either configured token works (rotation), and probes stay open for orchestrators.
    let rotated = Client::new(env.api_url()).with_bearer_token("old-token-0123456789");
    start_park(&rotated, &worker, "guarded").await.unwrap();
    assert_eq!(finish_park(&env, "guarded").await, ProcessStatus::Completed);
    let http = reqwest::Client::new();
    for path in ["/health/live", "/health/ready", paths::OPENAPI] {
        let status = http
            .get(format!("{}{path}", env.api_url()))
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, 200, "{path} needs no token");
    }
    env.shutdown().await;
}

async fn the_worker_url_policy_refuses_other_hosts(db: Database) {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            worker_url_prefixes: vec!["http://127.0.0.1:".into()],
            ..Default::default()
        },
    )
    .await;
    let worker = serve(&mut env, &ParkProcess).await;
    for elsewhere in [
        "http://169.254.169.254/latest/meta-data",
        "http://localhost:9/",
        "https://127.0.0.1.evil.example/",
    ] {
        let refused = start_park(&env.client, elsewhere, "policy").await;
        let error = expect_api_error(refused, 400, ErrorSubType::InvalidRequest);
        assert!(error.message.contains("worker URL policy"), "{elsewhere}");
    }
    assert!(env.process_rows_of("policy").await.is_empty());
    start_park(&env.client, &worker, "policy").await.unwrap();
    assert_eq!(finish_park(&env, "policy").await, ProcessStatus::Completed);
    env.shutdown().await;
}

async fn workers_verify_that_calls_come_from_xdb(db: Database) {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            worker_signing_secret: Some(SECRET.into()),
            ..Default::default()
        },
    )
    .await;
    let signed = env
        .start_worker(
            WorkerService::new()
                .register(ParkProcess)
                .with_signing_secret(SECRET)
                .router(),
        )
        .await;
    // XDB signs its calls: the state APIs and the process complete.
    start_park(&env.client, &signed, "signed").await.unwrap();
    assert_eq!(finish_park(&env, "signed").await, ProcessStatus::Completed);

    // Anyone else is refused by the worker.
    let forged = reqwest::Client::new()
        .post(format!("{signed}{}", paths::WORKER_WAIT_UNTIL))
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 401);
    let body: WorkerErrorResponse = forged.json().await.unwrap();
    assert_eq!(body.error_type.as_deref(), Some("UNAUTHORIZED"));

    // A worker holding another secret refuses XDB too: the attempt fails, visibly.
    let other = env
        .start_worker(
            WorkerService::new()
                .register(ParkProcess)
                .with_signing_secret("another-secret-0123456789")
                .router(),
        )
        .await;
    let exec = start_park(&env.client, &other, "mismatch").await.unwrap();
    eventually("the refused attempt to be recorded", SOON, || async {
        env.client
            .history(&ProcessExecutionHistoryRequest {
                process_id: "mismatch".into(),
                process_execution_id: Some(exec.clone()),
                ..Default::default()
            })
            .await
            .unwrap()
            .events
            .iter()
            .any(|e| {
                e.event_type == "STATE_API_FAILED"
                    && e.details.to_string().contains("signature does not match")
            })
    })
    .await;
    let row = env.process_row(&exec).await.unwrap();
    assert_eq!(row.status, "RUNNING", "nothing moved on without the worker");
    env.shutdown().await;
}

both_databases!(
    bearer_tokens_guard_the_service_api,
    the_worker_url_policy_refuses_other_hosts,
    workers_verify_that_calls_come_from_xdb,
);
