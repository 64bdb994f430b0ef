//! Pulsar settings that cannot work stop an async instance at start-up with a message
//! naming the setting and what was tried, instead of an instance that runs and never
//! gets work.

use std::time::{Duration, Instant};

use xdb_async_service::AsyncService;
use xdb_config::QueueMode;
use xdb_integration_tests::pulsar::admin_url;
use xdb_integration_tests::{Database, EnvOptions, XdbTestEnv};
use xdb_pulsar_io::{registration, start_capture, Capture, PulsarIoAdmin};

fn without_instances() -> EnvOptions {
    EnvOptions {
        queue_mode: QueueMode::Pulsar,
        async_instances: 0,
        cdc_capture: false,
        ..Default::default()
    }
}

async fn start_error(
    env: &XdbTestEnv,
    configure: impl FnOnce(&mut xdb_async_service::AsyncServiceConfig),
) -> String {
    let mut config = env.async_config("misconfigured");
    configure(&mut config);
    match AsyncService::start(config).await {
        Ok(service) => {
            service.shutdown().await.expect("shuts down");
            panic!("the async service started with settings that cannot work");
        }
        Err(error) => format!("{error:#}"),
    }
}

/// Nothing listens at `pulsar.service_url`: start-up gives up within its connect timeout
/// and says where it tried.
async fn an_unreachable_broker_stops_start_up_naming_the_url(db: Database) {
    let env = XdbTestEnv::start_with(db, without_instances()).await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let started = Instant::now();
    let error = start_error(&env, |config| {
        config.pulsar.service_url = Some(format!("pulsar://127.0.0.1:{closed}"));
    })
    .await;
    assert!(
        error.contains("pulsar.service_url") && error.contains(&format!("127.0.0.1:{closed}")),
        "{error}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    env.shutdown().await;
}

/// A tenant the broker does not have: the broker refuses the subscription, and the
/// message names the topic and the settings it is made of.
async fn a_missing_tenant_stops_start_up_naming_the_settings(db: Database) {
    let env = XdbTestEnv::start_with(db, without_instances()).await;
    let error = start_error(&env, |config| {
        config.pulsar.tenant = "no-such-tenant".into();
    })
    .await;
    assert!(
        error.contains("persistent://no-such-tenant/default/")
            && error.contains("pulsar.tenant")
            && error.contains("not found"),
        "{error}"
    );
    env.shutdown().await;
}

/// A connector that cannot reach its database: the capture gives up within its timeout
/// naming the source and what Pulsar IO reports, and removes the source again. On
/// PostgreSQL the capture creates the source's publication first, so it fails there, at
/// once, before anything is registered.
async fn a_connector_that_cannot_reach_its_database_is_reported_and_removed(db: Database) {
    let env = XdbTestEnv::start_with(db, without_instances()).await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut url = reqwest::Url::parse(env.db().url()).expect("a database URL");
    url.set_port(Some(closed)).expect("a port");
    let name = format!("{}_unreachable", env.db().name());
    let capture = Capture {
        name: name.clone(),
        database_url: url.to_string(),
        topic_prefix: format!("xdbtest-{name}"),
        throwaway: true,
    };
    let admin = PulsarIoAdmin::new(&admin_url());
    let error = start_capture(&admin, &capture, Duration::from_secs(20))
        .await
        .expect_err("a capture of an unreachable database cannot stream")
        .to_string();
    let fails_where = match env.database() {
        Database::Postgres => "creating its publication",
        Database::MySql => "within 20 s",
    };
    assert!(
        error.contains(&name) && error.contains(fails_where),
        "{error}"
    );
    let registration = registration(&capture).expect("a valid capture");
    let status = admin
        .source_status(&registration.tenant, &registration.namespace, &name)
        .await
        .expect("Pulsar answers");
    assert_eq!(status, None, "the failed source was removed");
    eprintln!("unreachable database: {error}");
    env.shutdown().await;
}

both_databases!(
    a_connector_that_cannot_reach_its_database_is_reported_and_removed,
    an_unreachable_broker_stops_start_up_naming_the_url,
    a_missing_tenant_stops_start_up_naming_the_settings,
);
