//! The services' calls to each other: served on internal listeners only, signed with the
//! cluster's secret, so that nobody who reaches the API can forge a waiting client's
//! answer (docs/security.md).

use serde_json::{json, Value};
use xdb_api_service::ApiServiceConfig;
use xdb_integration_tests::metrics::{sample_sum, scrape_with};
use xdb_integration_tests::processes::park::{ParkProcess, QUEUE_GO};
use xdb_integration_tests::{eventually, serve_api, Database, EnvOptions, XdbTestEnv};
use xdb_sdk::protocol::*;
use xdb_sdk::{Client, ProcessDefinition, ProcessStartOptions};

use crate::common::*;

const TOKEN: &str = "test-token-0123456789";

both_databases!(
    forged_wake_ups_change_no_answer,
    unsigned_wake_ups_are_hints_only_during_an_upgrade_window,
);

/// A wake-up announcing that `exec` completed with a made-up result.
fn forged_close(exec: &str) -> Vec<u8> {
    let body = json!({
        "closedProcessExecutionIds": [exec],
        "closedOutcomes": [{
            "processExecutionId": exec,
            "status": "COMPLETED",
            "timedOut": false,
            "result": { "encoding": "json", "data": "\"forged\"" },
        }],
    });
    serde_json::to_vec(&body).unwrap()
}

async fn post(url: &str, body: &[u8], signature: Option<&str>) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .post(format!("{url}{}", paths::INTERNAL_NOTIFY))
        .header("content-type", "application/json")
        .body(body.to_vec());
    if let Some(signature) = signature {
        request = request.header("X-XDB-Signature", signature);
    }
    let response = request.send().await.expect("an answer");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// The internal URLs the API instances registered (MySQL).
async fn api_internal_urls(env: &XdbTestEnv) -> Vec<String> {
    env.query(
        "SELECT notify_url FROM xdb_sys_service_instances WHERE service = 'API' \
         ORDER BY notify_url",
        &[],
    )
    .await
    .iter()
    .map(|row| row.text(0))
    .collect()
}

async fn cluster_secret(env: &XdbTestEnv) -> String {
    env.query(
        "SELECT secret FROM xdb_sys_cluster_secrets WHERE name = 'internal'",
        &[],
    )
    .await[0]
        .text(0)
}

fn unix_now() -> u64 {
    u64::try_from(chrono::Utc::now().timestamp()).unwrap()
}

/// Starts `process_id` (waiting on its queue) and a client's wait for it, registered.
async fn waited_for(
    env: &XdbTestEnv,
    api_url: &str,
    worker: &str,
    process_id: &str,
) -> (
    String,
    tokio::task::JoinHandle<ProcessExecutionWaitForCompletionResponse>,
) {
    let client = Client::new(api_url).with_bearer_token(TOKEN);
    let exec = client
        .start_process_with(
            &ProcessDefinition::new(ParkProcess),
            process_id,
            Some(worker),
            (),
            ProcessStartOptions::new(),
        )
        .await
        .unwrap();
    wait_state(env, &exec, "ParkState", 1, "WAITING_COMMANDS").await;
    let registered_before = waits_registered(api_url).await;
    let id = process_id.to_string();
    let waiter = tokio::spawn(async move {
        client
            .wait_for_completion(&ProcessExecutionWaitForCompletionRequest {
                process_id: id,
                timeout_seconds: Some(4),
            })
            .await
            .unwrap()
    });
    eventually("the client's wait to be registered", SOON, || async {
        waits_registered(api_url).await > registered_before
    })
    .await;
    (exec, waiter)
}

async fn waits_registered(api_url: &str) -> f64 {
    let text = scrape_with(api_url, Some(TOKEN)).await;
    sample_sum(&text, "xdb_api_waits_registered", &[]).unwrap_or(0.0)
}

async fn assert_still_running(
    env: &XdbTestEnv,
    exec: &str,
    waiter: tokio::task::JoinHandle<ProcessExecutionWaitForCompletionResponse>,
) {
    let answer = waiter.await.unwrap();
    assert!(answer.timed_out, "the wait was answered: {answer:?}");
    assert_eq!(answer.status, ProcessStatus::Running, "{answer:?}");
    assert_eq!(answer.result, None, "{answer:?}");
    let row = env.process_row(exec).await.unwrap();
    assert_eq!(row.status, "RUNNING");
}

async fn forged_wake_ups_change_no_answer(db: Database) {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            api_tokens: vec![TOKEN.into()],
            ..Default::default()
        },
    )
    .await;
    let worker = serve(&mut env, &ParkProcess).await;
    let (exec, waiter) = waited_for(&env, env.api_url(), &worker, "forged").await;
    let forged = forged_close(&exec);

    // The public listener does not serve the internal path, with a token or without.
    let (status, _) = post(env.api_url(), &forged, None).await;
    assert_eq!(status, 404, "the public listener serves no internal path");
    let async_urls = env.async_urls();
    let secret = cluster_secret(&env).await;
    match db {
        Database::Postgres => {
            // LISTEN/NOTIFY carries every wake-up: no instance serves the path.
            assert!(api_internal_urls(&env).await.is_empty());
            for url in &async_urls {
                assert_eq!(post(url, &forged, None).await.0, 404, "{url}");
            }
        }
        Database::MySql => {
            let api_internal = api_internal_urls(&env).await;
            assert_eq!(api_internal.len(), 1, "{api_internal:?}");
            assert_ne!(
                api_internal[0],
                env.api_url(),
                "registered: the internal listener, not the public one"
            );
            let wrong_secret =
                xdb_worker_auth::sign(b"not-the-cluster-secret", unix_now(), &forged);
            let replayed = xdb_worker_auth::sign(
                secret.as_bytes(),
                unix_now() - xdb_cluster::SIGNATURE_WINDOW_SECONDS - 5,
                &forged,
            );
            let changed = xdb_worker_auth::sign(secret.as_bytes(), unix_now(), b"{}");
            for url in api_internal.iter().chain(&async_urls) {
                for (signature, what) in [
                    (None, "unsigned"),
                    (Some(wrong_secret.as_str()), "another secret"),
                    (Some(replayed.as_str()), "outside the window"),
                    (Some(changed.as_str()), "another body"),
                ] {
                    let (status, body) = post(url, &forged, signature).await;
                    assert_eq!(status, 401, "{what} at {url}: {body}");
                    assert_eq!(body["subType"], "UNAUTHORIZED", "{what}: {body}");
                }
            }
            // The same secret signs what the instances send each other: a signed call
            // is taken (about an execution nobody waits for).
            let harmless = serde_json::to_vec(&json!({
                "closedProcessExecutionIds": [uuid::Uuid::new_v4().to_string()],
            }))
            .unwrap();
            let signed = xdb_worker_auth::sign(secret.as_bytes(), unix_now(), &harmless);
            assert_eq!(
                post(&api_internal[0], &harmless, Some(&signed)).await.0,
                200
            );
            // Signed is not enough: the body still has to be a notify request (serde
            // would read a struct from an array field by field; found by schemathesis).
            for bad in [&b"[]"[..], br#"{"newTasks": []}"#] {
                let signed = xdb_worker_auth::sign(secret.as_bytes(), unix_now(), bad);
                let (status, body) = post(&api_internal[0], bad, Some(&signed)).await;
                assert_eq!(status, 400, "{body}");
            }
        }
    }
    assert_still_running(&env, &exec, waiter).await;

    // The real close still reaches a waiting client, through the signed wake-ups on
    // MySQL: the wait answers as soon as the process completes.
    let (exec, waiter) = waited_for(&env, env.api_url(), &worker, "real").await;
    env.client
        .publish_to_local_queue("real", QUEUE_GO, "go", None)
        .await
        .unwrap();
    let answer = waiter.await.unwrap();
    assert!(!answer.timed_out, "{answer:?}");
    assert_eq!(answer.status, ProcessStatus::Completed);
    assert_eq!(answer.process_execution_id, exec);
    if db == Database::MySql {
        let text = scrape_with(env.api_url(), Some(TOKEN)).await;
        let route = [("route", paths::INTERNAL_NOTIFY), ("status", "200")];
        let accepted = sample_sum(&text, "xdb_api_requests_total", &route).unwrap_or(0.0);
        assert!(accepted >= 1.0, "no signed wake-up was taken:\n{text}");
    }
    env.shutdown().await;
}

/// `security.accept_unsigned_internal_calls`, for the rolling upgrade from a release that
/// did not sign: an unsigned call is taken, but only as a hint to read the database.
async fn unsigned_wake_ups_are_hints_only_during_an_upgrade_window(db: Database) {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            api_tokens: vec![TOKEN.into()],
            ..Default::default()
        },
    )
    .await;
    let worker = serve(&mut env, &ParkProcess).await;
    let before = api_internal_urls(&env).await;
    let mut config = ApiServiceConfig::new(env.db().url());
    config.security.api_tokens = vec![TOKEN.into()];
    config.security.accept_unsigned_internal_calls = true;
    let (api_url, _stop) = serve_api(config).await;
    let (exec, waiter) = waited_for(&env, &api_url, &worker, "hinted").await;
    if db == Database::MySql {
        eventually("the upgraded instance to register", SOON, || async {
            api_internal_urls(&env).await.len() > before.len()
        })
        .await;
        let upgraded = api_internal_urls(&env).await;
        let internal = upgraded.iter().find(|url| !before.contains(url)).unwrap();
        let (status, body) = post(internal, &forged_close(&exec), None).await;
        assert_eq!(
            status, 200,
            "an unsigned call is a hint in the window: {body}"
        );
        let wrong = xdb_worker_auth::sign(b"not-the-cluster-secret", unix_now(), b"{}");
        let (status, _) = post(internal, &forged_close(&exec), Some(&wrong)).await;
        assert_eq!(status, 401, "a wrong signature is no older release's call");
    }
    // The hint made the waiter read the execution back: still running, so it waits on.
    assert_still_running(&env, &exec, waiter).await;
    env.shutdown().await;
}
