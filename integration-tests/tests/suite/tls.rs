//! TLS to every server XDB talks to, against servers of the test's own (never the shared
//! ones on 5432/3306, except where a server *without* TLS is the point): a PostgreSQL
//! and a MariaDB that take TLS connections only, with certificates of a CA the test
//! made, and workers served over HTTPS.
//!
//! Each database test: XDB connects with `verify-full` / `VERIFY_IDENTITY` and runs the
//! sign-up sample end to end over TLS (its worker over HTTPS with the test CA); it
//! refuses a server whose certificate names another host, with a message naming the
//! setting; the server refuses plaintext; XDB refuses plaintext where its URL requires
//! TLS.

use std::time::Duration;

use xdb_api_service::ApiServiceConfig;
use xdb_async_service::{AsyncService, AsyncServiceConfig};
use xdb_integration_tests::tls::{serve_https, TestCa, TlsMariaDb, TlsPostgres};
use xdb_integration_tests::{Database, EnvOptions, XdbTestEnv};
use xdb_samples::email::{EmailKind, EmailOutbox};
use xdb_samples::sample_router;
use xdb_samples::user_signup::{process_id, publish_verification, start_user_signup, Form};
use xdb_test_util::TestDatabase;
use xdb_worker_client::{WorkerCallError, WorkerClient, WorkerTls};

use crate::common::*;

/// The sign-up sample from start to completion, its worker at `worker_url`.
async fn run_signup(env: &XdbTestEnv, worker_url: &str, outbox: &EmailOutbox) {
    let form = Form {
        email: "ann@example.com".into(),
        name: Some("Ann".into()),
    };
    let exec = start_user_signup(&env.client, Some(worker_url), "ann", &form)
        .await
        .expect("start");
    wait_state(env, &exec, "VerifyState", 1, "WAITING_COMMANDS").await;
    publish_verification(&env.client, "ann", "email-link")
        .await
        .expect("publish");
    let done = env
        .client
        .wait_for_process_completion(&process_id("ann"), Duration::from_secs(20))
        .await
        .expect("wait for completion");
    assert!(!done.timed_out, "the sign-up completes");
    assert_eq!(done.process_execution_id, exec);
    let user = env.user_row("ann").await.expect("the user row");
    assert_eq!(user.status.as_deref(), Some("verified"));
    assert_eq!(
        outbox.kinds_sent_to("ann@example.com"),
        vec![EmailKind::Verification, EmailKind::Welcome]
    );
}

/// Why the services refuse to start on `database_url`: the API service's and the async
/// service's messages, with their causes.
async fn start_up_errors(database_url: &str) -> [String; 2] {
    let api = match xdb_api_service::connect(ApiServiceConfig::new(database_url)).await {
        Ok(_) => panic!("the API service started on {database_url}"),
        Err(error) => format!("{error:#}"),
    };
    let mut config = AsyncServiceConfig::new(database_url);
    config.async_service.listen = "127.0.0.1:0".parse().unwrap();
    let async_service = match AsyncService::start(config).await {
        Ok(_) => panic!("the async service started on {database_url}"),
        Err(error) => format!("{error:#}"),
    };
    [api, async_service]
}

/// Sign-up over TLS to the database (`tls_url`) with its worker over HTTPS, then what
/// the database test checks of every connection: none in plaintext.
async fn signup_over_tls(db: Database, ca: &TestCa, tls_url: &str) -> TestDatabase {
    let outbox = EmailOutbox::new();
    let worker_certificate = ca.server("worker", &["localhost", "127.0.0.1"]);
    let worker = serve_https(
        sample_router(outbox.clone(), Duration::from_secs(60)),
        &worker_certificate,
        None,
    )
    .await;
    let env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            server_url: Some(tls_url.to_string()),
            worker_ca_file: Some(ca.ca_file().to_path_buf()),
            // The database queue: the Pulsar standalone has no TLS listener here.
            queue_mode: xdb_config::QueueMode::Database,
            ..Default::default()
        },
    )
    .await;
    run_signup(&env, &worker.url, &outbox).await;
    let name = env.db().name().to_string();
    match db {
        Database::Postgres => {
            let client = env.db().client().await;
            let row = client
                .query_one(
                    "SELECT count(*) FILTER (WHERE ssl), count(*) FILTER (WHERE NOT ssl) \
                     FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) WHERE datname = $1",
                    &[&name],
                )
                .await
                .expect("read pg_stat_ssl");
            let (encrypted, plaintext): (i64, i64) = (row.get(0), row.get(1));
            // The services' pools and LISTEN connections, and this one.
            assert!(encrypted >= 3, "{encrypted} sessions over TLS");
            assert_eq!(plaintext, 0, "no session in plaintext");
        }
        Database::MySql => {
            use xdb_test_util::mysql_async::prelude::Queryable;
            let mut conn = env.db().mysql_conn().await;
            let cipher: Option<(String, String)> = conn
                .query_first("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
                .await
                .expect("read Ssl_cipher");
            let cipher = cipher.map(|(_, value)| value).unwrap_or_default();
            assert!(!cipher.is_empty(), "the session is encrypted");
            let _ = conn.disconnect().await;
        }
    }
    // The environment's own database outlives it, for the checks that follow.
    let database = TestDatabase::create_on(tls_url).await;
    env.shutdown().await;
    database
}

fn assert_names(messages: &[String], expected: &[&str]) {
    for message in messages {
        for part in expected {
            assert!(message.contains(part), "`{part}` in: {message}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_over_tls() {
    let ca = TestCa::new();
    let good = ca.server("server", &["localhost", "127.0.0.1"]);
    let wrong_host = ca.server("wrong-host", &["wrong.example"]);
    let cert_user = ca.client("cert-user", xdb_integration_tests::tls::CERT_USER);
    let server = TlsPostgres::start(&ca, &good);
    let ca_file = ca.ca_file().display().to_string();
    let full = server.url(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={ca_file}"),
    );

    let database = signup_over_tls(Database::Postgres, &ca, &full).await;
    let on_database = |query: &str| {
        let url = xdb_config::DatabaseUrl::parse(&server.url("localhost", query)).unwrap();
        url.with_database(database.name())
            .unwrap()
            .as_str()
            .to_string()
    };
    // The default (`prefer`) takes the TLS the server offers, unchecked.
    xdb_sys_schema::check(&on_database(""))
        .await
        .expect("prefer connects over TLS")
        .ensure_current()
        .unwrap();

    // The server takes no plaintext (`hostssl` only).
    let refused = start_up_errors(&on_database("sslmode=disable")).await;
    assert_names(&refused, &["no pg_hba.conf entry", "no encryption"]);

    // A client certificate of the test CA logs in as its common name (`cert` auth).
    let with_certificate = format!(
        "postgres://xdb_cert@localhost:{}/{}?sslmode=verify-full&sslrootcert={ca_file}\
         &sslcert={}&sslkey={}",
        server.port(),
        database.name(),
        cert_user.cert_file.display(),
        cert_user.key_file.display()
    );
    xdb_sys_schema::check(&with_certificate)
        .await
        .expect("the client certificate is taken");
    let without = with_certificate.split("&sslcert").next().unwrap();
    let error = xdb_sys_schema::check(without).await.unwrap_err();
    let chain = error_chain(&error);
    assert!(chain.contains("certificate"), "{chain}");

    // A certificate that does not name the host: refused under verify-full, naming the
    // setting; verify-ca checks the chain only, as libpq does.
    server.present(&wrong_host);
    let refused = start_up_errors(&on_database(&format!(
        "sslmode=verify-full&sslrootcert={ca_file}"
    )))
    .await;
    assert_names(
        &refused,
        &[
            "sslmode=verify-full",
            "refused the server's certificate",
            "localhost",
        ],
    );
    xdb_sys_schema::check(&on_database(&format!(
        "sslmode=verify-ca&sslrootcert={ca_file}"
    )))
    .await
    .expect("verify-ca takes a good chain whatever names it holds");
    // A chain of another CA is refused even under verify-ca.
    let other_ca = TestCa::new();
    let error = xdb_sys_schema::check(&on_database(&format!(
        "sslmode=verify-ca&sslrootcert={}",
        other_ca.ca_file().display()
    )))
    .await
    .unwrap_err();
    let chain = error_chain(&error);
    assert!(chain.contains("sslmode=verify-ca"), "{chain}");

    // A server that offers no TLS: `require` refuses plaintext, naming the setting.
    server.turn_tls_off();
    let refused = start_up_errors(&on_database("sslmode=require")).await;
    assert_names(
        &refused,
        &["sslmode=require", "the server does not offer TLS"],
    );
    drop(database);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_over_tls() {
    let ca = TestCa::new();
    let good = ca.server("server", &["localhost", "127.0.0.1"]);
    let wrong_host = ca.server("wrong-host", &["wrong.example"]);
    let server = TlsMariaDb::start(&ca, &good);
    let ca_file = ca.ca_file().display().to_string();
    let identity = server.url(
        "127.0.0.1",
        &format!("ssl-mode=VERIFY_IDENTITY&ssl-ca={ca_file}"),
    );

    let database = signup_over_tls(Database::MySql, &ca, &identity).await;
    let on_database = |query: &str| {
        let url = xdb_config::DatabaseUrl::parse(&server.url("127.0.0.1", query)).unwrap();
        url.with_database(database.name())
            .unwrap()
            .as_str()
            .to_string()
    };
    // The default (`PREFERRED`) takes the TLS the server offers, unchecked.
    xdb_sys_schema::check(&on_database(""))
        .await
        .expect("PREFERRED connects over TLS")
        .ensure_current()
        .unwrap();

    // The server takes no plaintext (`require_secure_transport`); MariaDB 10.11 says
    // so as a refused login, for the user that just logged in over TLS.
    let refused = start_up_errors(&on_database("ssl-mode=DISABLED")).await;
    assert_names(&refused, &["ERROR 1045", "Access denied for user 'root'"]);

    // A certificate that does not name the host: refused, naming the setting.
    server.present(&wrong_host);
    let refused = start_up_errors(&on_database(&format!(
        "ssl-mode=VERIFY_IDENTITY&ssl-ca={ca_file}"
    )))
    .await;
    assert_names(
        &refused,
        &[
            "ssl-mode=VERIFY_IDENTITY",
            "not valid for name",
            "127.0.0.1",
        ],
    );
    // REQUIRED without a CA encrypts without checking (as the MySQL client does).
    xdb_sys_schema::check(&on_database("ssl-mode=REQUIRED"))
        .await
        .expect("REQUIRED takes any certificate");

    // A server that offers no TLS (the shared one): REQUIRED refuses plaintext, naming
    // the setting, where the default falls back to it.
    let shared = TestDatabase::create(Database::MySql).await;
    let shared_url = |query: &str| format!("{}?{query}", shared.url());
    let refused = start_up_errors(&shared_url("ssl-mode=REQUIRED")).await;
    assert_names(
        &refused,
        &["ssl-mode=REQUIRED", "the server does not offer TLS"],
    );
    xdb_sys_schema::check(&shared_url("ssl-mode=PREFERRED"))
        .await
        .expect("PREFERRED falls back to plaintext");
    drop(database);
}

/// A worker that asks for a client certificate: XDB shows the one configured in
/// `security.worker_client_cert_file` (the sign-up runs through); without one, or
/// without `security.worker_ca_file`, the call is refused and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_over_mutual_tls() {
    let ca = TestCa::new();
    let worker_certificate = ca.server("worker", &["localhost", "127.0.0.1"]);
    let xdb_certificate = ca.client("xdb", "xdb");
    let outbox = EmailOutbox::new();
    let worker = serve_https(
        sample_router(outbox.clone(), Duration::from_secs(60)),
        &worker_certificate,
        Some(&ca),
    )
    .await;

    let call = |tls: WorkerTls| {
        let url = worker.url.clone();
        async move {
            let client = WorkerClient::with_tls(1 << 20, &tls).expect("the worker client");
            client
                .call::<_, serde_json::Value>(
                    &url,
                    "/api/v1/xdb/worker/async-state/execute",
                    &serde_json::json!({}),
                    Duration::from_secs(5),
                    "key",
                )
                .await
        }
    };
    let unknown_ca = call(WorkerTls::default()).await.unwrap_err();
    assert!(
        matches!(&unknown_ca, WorkerCallError::Unreachable(m) if m.contains("UnknownIssuer")),
        "{unknown_ca}"
    );
    let no_certificate = call(WorkerTls {
        ca_file: Some(ca.ca_file().to_path_buf()),
        client_certificate: None,
    })
    .await
    .unwrap_err();
    assert!(
        matches!(&no_certificate, WorkerCallError::Unreachable(_)),
        "the worker refuses a caller without a certificate: {no_certificate}"
    );
    // With both, the handshake passes and the worker answers (here: a bad request).
    let answered = call(WorkerTls {
        ca_file: Some(ca.ca_file().to_path_buf()),
        client_certificate: Some((
            xdb_certificate.cert_file.clone(),
            xdb_certificate.key_file.clone(),
        )),
    })
    .await;
    assert!(
        !matches!(answered, Err(WorkerCallError::Unreachable(_))),
        "{answered:?}"
    );

    let env = XdbTestEnv::start_with(
        Database::Postgres,
        EnvOptions {
            worker_ca_file: Some(ca.ca_file().to_path_buf()),
            worker_client_certificate: Some((
                xdb_certificate.cert_file.clone(),
                xdb_certificate.key_file.clone(),
            )),
            ..Default::default()
        },
    )
    .await;
    run_signup(&env, &worker.url, &outbox).await;
    env.shutdown().await;
}

/// The async service in Pulsar mode over `pulsar+ssl://`, against a standalone of the
/// test's own with a TLS listener: it starts with `pulsar.tls_ca_file` naming the test
/// CA, and without it is refused naming the settings.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pulsar_over_tls() {
    let ca = TestCa::new();
    let broker_certificate = ca.server("broker", &["localhost", "127.0.0.1"]);
    let broker =
        xdb_integration_tests::pulsar::TestBroker::start_with_tls(&ca, &broker_certificate).await;
    let db = TestDatabase::create(Database::Postgres).await;
    let config = |tls_ca_file: Option<std::path::PathBuf>| {
        let mut config = AsyncServiceConfig::new(db.url());
        config.async_service.listen = "127.0.0.1:0".parse().unwrap();
        xdb_integration_tests::pulsar::configure(&mut config, &db);
        config.pulsar.service_url = Some(broker.tls_url());
        config.pulsar.tls_ca_file = tls_ca_file;
        config
    };
    let refused = match AsyncService::start(config(None)).await {
        Ok(_) => panic!("the async service took a broker certificate of an unknown CA"),
        Err(error) => format!("{error:#}"),
    };
    // The Pulsar client does not say why (the broker logs TLSV1_ALERT_UNKNOWN_CA).
    assert!(
        refused.contains("pulsar.service_url, pulsar.tls_ca_file"),
        "{refused}"
    );
    let service = AsyncService::start(config(Some(ca.ca_file().to_path_buf())))
        .await
        .expect("the async service connects over pulsar+ssl:// with the test CA");
    service.shutdown().await.expect("the async service stops");
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
