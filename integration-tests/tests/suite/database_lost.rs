//! A service that loses its database answers 503 `DATABASE_UNAVAILABLE` with
//! `Retry-After`, for reads and writes alike, rather than 500 `INTERNAL_ERROR`: the
//! client learns that the database is away (not that XDB failed) and that a write may
//! have taken effect.

use std::time::Duration;

use serde_json::{json, Value};
use xdb_api_service::ApiServiceConfig;
use xdb_integration_tests::processes::park::ParkProcess;
use xdb_integration_tests::tcp_proxy::TcpProxy;
use xdb_integration_tests::{serve_api, Database, XdbTestEnv};
use xdb_sdk::protocol::{paths, ErrorSubType};
use xdb_sdk::{Client, ClientError, ProcessDefinition, ProcessStartOptions};

both_databases!(a_service_without_its_database_answers_database_unavailable);

async fn a_service_without_its_database_answers_database_unavailable(db: Database) {
    let env = XdbTestEnv::start(db).await;
    let proxy = TcpProxy::start_for_url(env.db().url()).await;
    let mut config = ApiServiceConfig::new(proxy.url_to(env.db().url()));
    config.api.pool_size = 2;
    let (url, _stop) = serve_api(config).await;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("an HTTP client");
    let describe = || {
        http.post(format!("{url}{}", paths::DESCRIBE))
            .json(&json!({ "processId": "nobody" }))
            .send()
    };
    let found = describe().await.expect("an answer");
    assert_eq!(
        found.status(),
        404,
        "the database answers through the proxy"
    );

    // Stops accepting and resets every open connection: the database is gone.
    drop(proxy);
    let lost = describe().await.expect("an answer");
    assert_eq!(lost.status(), 503);
    assert_eq!(
        lost.headers().get("retry-after").map(|v| v.as_bytes()),
        Some(&b"1"[..])
    );
    let body: Value = lost.json().await.expect("a JSON answer");
    assert_eq!(body["subType"], "DATABASE_UNAVAILABLE", "{body}");
    let message = body["message"].as_str().expect("a message");
    assert!(message.contains("may have taken effect"), "{message}");

    // A write says the same, and the SDK leaves sending it again to its caller.
    let client = Client::new(url).with_request_timeout(Duration::from_secs(30));
    let started = client
        .start_process_with(
            &ProcessDefinition::new(ParkProcess),
            "never-started",
            Some("http://127.0.0.1:9"),
            (),
            ProcessStartOptions::new(),
        )
        .await;
    match started {
        Err(ClientError::Api { status, error }) => {
            assert_eq!(status, 503);
            assert_eq!(
                error.sub_type,
                ErrorSubType::DatabaseUnavailable,
                "{error:?}"
            );
        }
        other => panic!("a start without the database must be refused, got {other:?}"),
    }
    assert!(
        env.process_rows_of("never-started").await.is_empty(),
        "nothing of the start reached the database"
    );
    env.shutdown().await;
}
