//! The web console's own read (an execution's business row and local attributes) and
//! its assets, served by the API service.

use serde_json::{json, Value};
use xdb_integration_tests::processes::park::{ParkProcess, LOCAL_TAG};
use xdb_integration_tests::{Database, EnvOptions, XdbTestEnv};
use xdb_protocol::paths;
use xdb_samples::email::EmailOutbox;
use xdb_samples::sample_router;
use xdb_samples::user_signup::{process_id, start_user_signup, Form};
use xdb_sdk::ProcessStartOptions;

use crate::common::*;

const TOKEN: &str = "console-token-0123456789";

async fn attributes(env: &XdbTestEnv, body: Value) -> (u16, Value) {
    post_raw(
        env,
        paths::CONSOLE_ATTRIBUTES,
        body.to_string(),
        Some("application/json"),
    )
    .await
}

/// The whole business row, converted to JSON by the column types (the `form` column is
/// JSONB on PostgreSQL, JSON text on MariaDB: an object either way); null once the row
/// is gone; the local attributes as kept; and the usual errors.
async fn console_attributes_read_the_business_row_and_local_attributes(db: Database) {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            async_instances: 0, // nothing moves: the rows stay as the start wrote them
            ..Default::default()
        },
    )
    .await;
    let worker = env
        .start_worker(sample_router(
            EmailOutbox::new(),
            std::time::Duration::from_secs(3600),
        ))
        .await;
    let form = Form {
        email: "ann@example.com".into(),
        name: Some("Ann".into()),
    };
    let exec = start_user_signup(&env.client, Some(&worker), "ann", &form)
        .await
        .expect("start");

    let (status, body) = attributes(&env, json!({ "processId": process_id("ann") })).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["processExecutionId"], json!(exec));
    let global = &body["globalAttributes"];
    assert_eq!(global["tableName"], "user");
    assert_eq!(
        global["primaryKey"],
        json!({"column": "user_id", "value": "ann"})
    );
    assert_eq!(
        global["row"],
        json!({
            "user_id": "ann",
            "form": {"email": "ann@example.com", "name": "Ann"},
            "status": "waiting",
            "source": null,
        })
    );
    assert_eq!(body["localAttributes"], json!([]));

    // The same execution named by its id; then the row deleted behind XDB's back.
    env.execute_sql("DELETE FROM \"user\" WHERE user_id = 'ann'")
        .await;
    let (status, body) = attributes(
        &env,
        json!({ "processId": process_id("ann"), "processExecutionId": exec }),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["globalAttributes"]["row"], Value::Null);
    assert_eq!(body["globalAttributes"]["tableName"], "user");

    // A process without a business table: local attributes only.
    let park = serve(&mut env, &ParkProcess).await;
    let parked = start(
        &env,
        &ParkProcess,
        &park,
        "parked",
        ProcessStartOptions::new().initial_local_attribute(LOCAL_TAG, "blue"),
    )
    .await
    .expect("start");
    let (status, body) = attributes(&env, json!({ "processId": "parked" })).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["processExecutionId"], json!(parked));
    assert!(body.get("globalAttributes").is_none(), "{body}");
    assert_eq!(
        body["localAttributes"],
        json!([{"key": LOCAL_TAG, "value": {"encoding": "json", "data": "\"blue\""}}])
    );

    let (status, body) = attributes(&env, json!({ "processId": "nobody" })).await;
    assert_eq!(
        (status, &body["subType"]),
        (404, &json!("PROCESS_NOT_FOUND"))
    );
    let (status, body) = attributes(&env, json!({ "processId": "parked", "extra": 1 })).await;
    assert_eq!((status, &body["subType"]), (400, &json!("INVALID_REQUEST")));
    let (status, body) = attributes(
        &env,
        json!({ "processId": "parked", "processExecutionId": "not-a-uuid" }),
    )
    .await;
    assert_eq!(
        (status, &body["subType"]),
        (400, &json!("INVALID_REQUEST")),
        "{body}"
    );
    env.shutdown().await;
}

/// The console's read takes the service's bearer tokens; its assets are public, typed,
/// and served under a Content-Security-Policy that admits this origin only.
async fn console_is_served_and_its_read_takes_the_tokens(db: Database) {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            api_tokens: vec![TOKEN.into()],
            ..Default::default()
        },
    )
    .await;
    let park = serve(&mut env, &ParkProcess).await;
    start(
        &env,
        &ParkProcess,
        &park,
        "guarded",
        ProcessStartOptions::new(),
    )
    .await
    .expect("start with the environment's token");
    let (status, body) = attributes(&env, json!({ "processId": "guarded" })).await;
    assert_eq!((status, &body["subType"]), (401, &json!("UNAUTHORIZED")));
    let answered = reqwest::Client::new()
        .post(format!("{}{}", env.api_url(), paths::CONSOLE_ATTRIBUTES))
        .bearer_auth(TOKEN)
        .json(&json!({ "processId": "guarded" }))
        .send()
        .await
        .expect("the API service answers");
    assert_eq!(answered.status(), 200);

    let http = reqwest::Client::new();
    for (path, content_type) in [
        ("/ui/", "text/html; charset=utf-8"),
        ("/ui/app.js", "text/javascript; charset=utf-8"),
        ("/ui/app.css", "text/css; charset=utf-8"),
    ] {
        let response = http
            .get(format!("{}{path}", env.api_url()))
            .send()
            .await
            .expect("the API service answers");
        assert_eq!(response.status(), 200, "{path} needs no token");
        let headers = response.headers();
        assert_eq!(headers["content-type"], content_type, "{path}");
        let policy = headers["content-security-policy"].to_str().unwrap();
        assert!(
            policy.contains("default-src 'none'") && policy.contains("script-src 'self'"),
            "{policy}"
        );
        assert_eq!(headers["x-content-type-options"], "nosniff");
    }
    let index = http
        .get(format!("{}/ui/", env.api_url()))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        !index.contains("<script>") && index.contains("src=\"/ui/app.js\""),
        "no inline script: {index}"
    );
    env.shutdown().await;
}

both_databases!(
    console_attributes_read_the_business_row_and_local_attributes,
    console_is_served_and_its_read_takes_the_tokens,
);
