//! The sample worker's HTTP app: worker API, health, and the email and site listings.

use std::time::Duration;

use serde_json::{json, Value};
use xdb_samples::email::EmailOutbox;
use xdb_samples::site_services::ExternalServices;
use xdb_samples::{
    sample_router, sample_router_with, SampleWorkerConfig, EMAILS_PATH, HEALTH_PATH, SITES_PATH,
};
use xdb_sdk::protocol::paths;

#[tokio::test]
async fn serves_worker_api_and_lists_sent_emails() {
    let outbox = EmailOutbox::new();
    let app = sample_router(outbox.clone(), Duration::from_secs(5));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let http = reqwest::Client::new();

    let health = http
        .get(format!("{base}{HEALTH_PATH}"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.text().await.unwrap(), "ok");

    let req = json!({
        "context": {
            "processId": "user-signup-bob", "processExecutionId": "e", "processType": "UserSignupProcess",
            "stateExecutionId": "SubmitState-1", "attempt": 1, "firstAttemptTimestampMs": 0,
            "processStartedTimestampMs": 0, "idempotencyKey": "e/SubmitState-1/execute"
        },
        "processType": "UserSignupProcess", "stateId": "SubmitState",
        "attributes": {"globalAttributes": [{"column": "form", "value": {"email": "bob@x.org"}}]}
    });
    let resp = http
        .post(format!("{base}{}", paths::WORKER_EXECUTE))
        .json(&req)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body["stateDecision"]["nextStates"][0]["stateId"],
        "VerifyState"
    );

    let emails: Value = http
        .get(format!("{base}{EMAILS_PATH}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        emails,
        json!([{"to": "bob@x.org", "kind": "VERIFICATION", "idempotencyKey": "e/SubmitState-1/execute"}])
    );
}

#[tokio::test]
async fn serves_site_creation_and_lists_the_site_services() {
    let services = ExternalServices::reliable();
    let config = SampleWorkerConfig {
        site_services: services.clone(),
        ..SampleWorkerConfig::new(EmailOutbox::new(), Duration::from_secs(5))
    };
    let app = sample_router_with(config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let http = reqwest::Client::new();

    let req = json!({
        "context": {
            "processId": "site-creation-s9", "processExecutionId": "e", "processType": "SiteCreationProcess",
            "stateExecutionId": "CreateFs-1", "attempt": 1, "firstAttemptTimestampMs": 0,
            "processStartedTimestampMs": 0, "idempotencyKey": "e/CreateFs-1/execute"
        },
        "processType": "SiteCreationProcess", "stateId": "CreateFs",
        "attributes": {"globalAttributes": [
            {"column": "site_id", "value": "s9"}, {"column": "status", "value": "creating"}
        ]}
    });
    let resp = http
        .post(format!("{base}{}", paths::WORKER_EXECUTE))
        .json(&req)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body["stateDecision"]["threadCloseDecision"]["closeType"],
        "DEAD_END"
    );
    assert_eq!(body["publishToLocalQueue"][0]["queueName"], "fs-ready");

    let sites: Value = http
        .get(format!("{base}{SITES_PATH}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        sites,
        json!([{
            "siteId": "s9",
            "resources": {"fileSystem": true, "database": false, "bootstrapped": false},
            "effects": {"CREATE_FILE_SYSTEM": 1}
        }])
    );
}
