//! Layering (file < environment < command line) and the start-up checks, through the
//! public `load`. `figment::Jail` isolates environment variables and files per test.

// Jail's closures must return figment's own (large) error type.
#![allow(clippy::result_large_err)]

use figment::Jail;
use xdb_config::{
    load, parse_assignment, LogFormat, Overrides, QueueMode, Service, Settings, SubscriptionType,
};

const FILE: &str = r#"
[database]
url = "postgres://xdb@db:5432/app"

[log]
format = "json"

[api]
listen = "0.0.0.0:9000"
pool_size = 4

[async]
pool_size = 6
lease_seconds = 12.5
"#;

#[test]
fn file_then_environment_then_command_line() {
    Jail::expect_with(|jail| {
        jail.create_file("xdb.toml", FILE)?;
        jail.set_env("XDB_ASYNC_POOL_SIZE", "9");
        jail.set_env("XDB_API_MAX_WAIT_SECONDS", "60");
        // Not a section: ignored, like the test suite's own variables.
        jail.set_env("XDB_TEST_POSTGRES_URL", "whatever");
        let mut overrides = Overrides::default();
        overrides.set("async.lease_seconds", Some(7.0));
        overrides.set::<u32>("async.max_in_flight", None);
        let settings = load(Service::Async, Some("xdb.toml".as_ref()), &overrides).unwrap();
        assert_eq!(
            settings.database.url.as_deref(),
            Some("postgres://xdb@db:5432/app")
        );
        assert_eq!(settings.log.format, LogFormat::Json);
        assert_eq!(settings.api.listen.to_string(), "0.0.0.0:9000");
        assert_eq!(settings.api.pool_size, 4, "from the file");
        assert_eq!(settings.api.max_wait_seconds, 60, "from the environment");
        assert_eq!(settings.async_service.pool_size, 9, "environment over file");
        assert_eq!(settings.async_service.lease_seconds, 7.0, "flag over file");
        assert_eq!(settings.async_service.max_in_flight, 256, "default");
        assert_eq!(settings.queue.mode, QueueMode::Database, "default");
        Ok(())
    });
}

#[test]
fn config_file_named_by_environment() {
    Jail::expect_with(|jail| {
        jail.create_file("from-env.toml", FILE)?;
        jail.set_env("XDB_CONFIG", "from-env.toml");
        let settings = load(Service::Api, None, &Overrides::default()).unwrap();
        assert_eq!(settings.api.pool_size, 4);
        Ok(())
    });
}

#[test]
fn environment_alone_is_enough() {
    Jail::expect_with(|jail| {
        jail.set_env("XDB_DATABASE_URL", "mysql://root@127.0.0.1:3306/app");
        jail.set_env("XDB_ASYNC_LISTEN", "127.0.0.1:0");
        jail.set_env("XDB_ASYNC_INSTANCE_ID", "async-7");
        let settings = load(Service::Async, None, &Overrides::default()).unwrap();
        assert_eq!(settings.async_service.listen.port(), 0);
        assert_eq!(
            settings.async_service.instance_id.as_deref(),
            Some("async-7")
        );
        Ok(())
    });
}

#[test]
fn unknown_keys_are_rejected_with_their_origin() {
    Jail::expect_with(|jail| {
        jail.create_file(
            "typo.toml",
            "[database]\nurl = \"postgres://h/db\"\n[async]\npool_sise = 3\n",
        )?;
        let error = load(
            Service::Async,
            Some("typo.toml".as_ref()),
            &Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("async.pool_sise: unknown field"), "{error}");
        assert!(error.contains("typo.toml"), "names the file: {error}");

        jail.create_file("section.toml", "[asyn]\npool_size = 3\n")?;
        let error = load(
            Service::Async,
            Some("section.toml".as_ref()),
            &Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("asyn"), "{error}");
        Ok(())
    });
}

#[test]
fn unknown_environment_keys_in_a_section_are_rejected() {
    Jail::expect_with(|jail| {
        jail.set_env("XDB_DATABASE_URL", "postgres://h/db");
        jail.set_env("XDB_ASYNC_POOLSIZE", "3");
        let error = load(Service::Async, None, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("async.poolsize: unknown field"),
            "names the key: {error}"
        );
        assert!(
            error.contains("(from environment variable XDB_ASYNC_POOLSIZE)"),
            "names the variable: {error}"
        );
        Ok(())
    });
}

#[test]
fn wrong_types_are_rejected() {
    Jail::expect_with(|jail| {
        jail.set_env("XDB_DATABASE_URL", "postgres://h/db");
        jail.set_env("XDB_API_POOL_SIZE", "many");
        let error = load(Service::Api, None, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("api.pool_size: invalid type: found string \"many\""),
            "{error}"
        );
        assert!(
            error.contains("from environment variable XDB_API_POOL_SIZE"),
            "{error}"
        );

        jail.set_env("XDB_API_POOL_SIZE", "8");
        jail.set_env("XDB_QUEUE_MODE", "kafka");
        let error = load(Service::Api, None, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(error.contains("queue.mode"), "{error}");
        assert!(error.contains("kafka"), "{error}");
        Ok(())
    });
}

#[test]
fn missing_file_is_an_error() {
    Jail::expect_with(|_| {
        let error = load(
            Service::Api,
            Some("nope.toml".as_ref()),
            &Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.starts_with("cannot read config file nope.toml"),
            "{error}"
        );
        Ok(())
    });
}

#[test]
fn every_invalid_value_is_reported_at_once_without_the_password() {
    Jail::expect_with(|jail| {
        jail.set_env("XDB_DATABASE_URL", "oracle://scott:tiger@h/db");
        jail.set_env("XDB_ASYNC_POOL_SIZE", "0");
        jail.set_env("XDB_ASYNC_LEASE_SECONDS", "0.5");
        jail.set_env("XDB_LOG_LEVEL", "info,[");
        let error = load(Service::Async, None, &Overrides::default())
            .unwrap_err()
            .to_string();
        for expected in [
            "database.url: unknown scheme",
            "async.pool_size must be at least 1",
            "async.lease_seconds must be at least 1",
            "log.level",
        ] {
            assert!(error.contains(expected), "{expected}: {error}");
        }
        assert!(!error.contains("tiger"), "{error}");
        Ok(())
    });
}

#[test]
fn database_url_is_required() {
    Jail::expect_with(|_| {
        let error = load(Service::Api, None, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(error.contains("database.url is required"), "{error}");
        Ok(())
    });
}

#[test]
fn pulsar_mode_needs_a_broker_url_and_valid_names() {
    Jail::expect_with(|jail| {
        jail.set_env("XDB_DATABASE_URL", "postgres://h/db");
        jail.set_env("XDB_QUEUE_MODE", "pulsar");
        jail.set_env("XDB_PULSAR_SUBSCRIPTION", "bad name");
        jail.set_env("XDB_PULSAR_HOLD_MS", "0");
        jail.set_env("XDB_PULSAR_SWEEP_AFTER_MS", "5");
        jail.set_env("XDB_PULSAR_MAX_DELIVERIES", "0");
        jail.set_env("XDB_PULSAR_NACK_DELAY_MS", "0");
        let error = load(Service::Async, None, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(error.contains("pulsar.service_url is required"), "{error}");
        assert!(error.contains("pulsar.subscription"), "{error}");
        assert!(error.contains("pulsar.hold_ms must be between"), "{error}");
        assert!(error.contains("pulsar.sweep_after_ms must be 0"), "{error}");
        assert!(
            error.contains("pulsar.max_deliveries must be between"),
            "{error}"
        );
        assert!(
            error.contains("pulsar.nack_delay_ms must be between"),
            "{error}"
        );
        // The API service has no queue: the same settings are fine for it.
        load(Service::Api, None, &Overrides::default()).unwrap();

        jail.set_env("XDB_PULSAR_SUBSCRIPTION", "xdb-async");
        jail.set_env("XDB_PULSAR_SERVICE_URL", "pulsar://pulsar:6650");
        jail.set_env("XDB_PULSAR_HOLD_MS", "2500");
        jail.set_env("XDB_PULSAR_SWEEP_AFTER_MS", "0");
        jail.set_env("XDB_PULSAR_MAX_DELIVERIES", "5");
        jail.set_env("XDB_PULSAR_NACK_DELAY_MS", "400");
        jail.set_env("XDB_PULSAR_SUBSCRIPTION_TYPE", "key_shared");
        let settings = load(Service::Async, None, &Overrides::default()).unwrap();
        assert_eq!(settings.queue.mode, QueueMode::Pulsar);
        assert_eq!(settings.pulsar.tenant, "public");
        assert_eq!(settings.pulsar.hold_ms, 2500);
        assert_eq!(settings.pulsar.max_deliveries, 5);
        assert_eq!(settings.pulsar.nack_delay_ms, 400);
        assert_eq!(
            settings.pulsar.subscription_type,
            SubscriptionType::KeyShared
        );
        jail.set_env("XDB_PULSAR_SUBSCRIPTION_TYPE", "exclusive");
        let error = load(Service::Async, None, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(error.contains("subscription_type"), "{error}");
        Ok(())
    });
}

#[test]
fn set_assignments_override_everything() {
    Jail::expect_with(|jail| {
        jail.set_env("XDB_DATABASE_URL", "postgres://h/db");
        jail.set_env("XDB_ASYNC_MAX_IN_FLIGHT", "10");
        let mut overrides = Overrides::default();
        let (key, value) = parse_assignment("async.max_in_flight=20").unwrap();
        overrides.assign(key, value);
        let (key, value) = parse_assignment("log.format=json").unwrap();
        overrides.assign(key, value);
        let settings = load(Service::Async, None, &overrides).unwrap();
        assert_eq!(settings.async_service.max_in_flight, 20);
        assert_eq!(settings.log.format, LogFormat::Json);
        assert!(parse_assignment("pool_size=3").is_err());
        assert!(parse_assignment("nosuch.key=3").is_err());
        assert!(parse_assignment("async.pool_size").is_err());
        Ok(())
    });
}

#[test]
fn the_example_file_parses_and_documents_the_defaults() {
    Jail::expect_with(|jail| {
        jail.set_env("XDB_DATABASE_URL", "postgres://h/db");
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/xdb.example.toml");
        let settings = load(Service::Async, Some(path.as_ref()), &Overrides::default()).unwrap();
        let mut expected = Settings::default();
        expected.database.url = Some("postgres://h/db".into());
        assert_eq!(settings, expected);
        Ok(())
    });
}

#[test]
fn security_settings_come_from_the_environment_and_are_checked_without_echoing_secrets() {
    Jail::expect_with(|jail| {
        jail.set_env("XDB_DATABASE_URL", "postgres://db/app");
        jail.set_env(
            "XDB_SECURITY_API_TOKENS",
            r#"["token-aaaaaaaaaaaaaaaa", "token-bbbbbbbbbbbbbbbb"]"#,
        );
        jail.set_env("XDB_SECURITY_WORKER_SIGNING_SECRET", "s3cret-s3cret-s3cret");
        let settings = load(Service::Api, None, &Overrides::default()).unwrap();
        assert_eq!(settings.security.api_tokens.len(), 2);
        let debug = format!("{settings:?}");
        assert!(
            !debug.contains("token-aaaa") && !debug.contains("s3cret"),
            "{debug}"
        );

        jail.set_env("XDB_SECURITY_API_TOKENS", r#"["short"]"#);
        jail.set_env("XDB_SECURITY_WORKER_URL_PREFIXES", r#"["ftp://x/"]"#);
        jail.set_env("XDB_SECURITY_WORKER_SIGNING_SECRET", "tiny-secret");
        let error = load(Service::Async, None, &Overrides::default())
            .unwrap_err()
            .to_string();
        for key in [
            "security.api_tokens",
            "security.worker_url_prefixes",
            "security.worker_signing_secret",
        ] {
            assert!(error.contains(key), "{key} not named in: {error}");
        }
        assert!(
            !error.contains("tiny-secret") && !error.contains("short\""),
            "{error}"
        );
        Ok(())
    });
}

#[test]
fn telemetry_is_off_by_default_and_checked_when_on() {
    Jail::expect_with(|jail| {
        jail.set_env("XDB_DATABASE_URL", "postgres://h/db");
        let settings = load(Service::Api, None, &Overrides::default()).unwrap();
        assert!(!settings.telemetry.enabled);

        jail.set_env("XDB_TELEMETRY_ENABLED", "true");
        jail.set_env("XDB_TELEMETRY_OTLP_ENDPOINT", "otel-collector:4318");
        jail.set_env("XDB_TELEMETRY_SAMPLE_RATIO", "1.5");
        jail.set_env("XDB_TELEMETRY_SERVICE_NAME", " ");
        let error = load(Service::Async, None, &Overrides::default())
            .unwrap_err()
            .to_string();
        for expected in [
            "telemetry.otlp_endpoint must be an http:// or https:// URL",
            "telemetry.sample_ratio must be between 0 and 1",
            "telemetry.service_name must not be empty",
        ] {
            assert!(error.contains(expected), "{expected}: {error}");
        }

        jail.set_env("XDB_TELEMETRY_OTLP_ENDPOINT", "http://otel-collector:4318");
        jail.set_env("XDB_TELEMETRY_SAMPLE_RATIO", "0.25");
        jail.set_env("XDB_TELEMETRY_SERVICE_NAME", "xdb-async-eu");
        let settings = load(Service::Async, None, &Overrides::default()).unwrap();
        let telemetry = settings.telemetry;
        assert!(telemetry.enabled);
        assert_eq!(telemetry.otlp_endpoint, "http://otel-collector:4318");
        assert_eq!(telemetry.sample_ratio, 0.25);
        assert_eq!(telemetry.service_name.as_deref(), Some("xdb-async-eu"));
        Ok(())
    });
}

#[test]
fn limits_come_from_the_environment_and_stay_within_what_the_tables_hold() {
    Jail::expect_with(|jail| {
        jail.set_env("XDB_DATABASE_URL", "postgres://db/app");
        jail.set_env("XDB_LIMITS_MAX_ID_CHARS", "64");
        jail.set_env("XDB_LIMITS_MAX_ATTRIBUTE_VALUE_BYTES", "1024");
        let settings = load(Service::Api, None, &Overrides::default()).unwrap();
        assert_eq!(settings.limits.max_id_chars, 64);
        assert_eq!(settings.limits.max_attribute_value_bytes, 1024);
        assert_eq!(
            settings.limits.max_queue_message_bytes,
            256 * 1024,
            "default"
        );

        jail.set_env("XDB_LIMITS_MAX_ID_CHARS", "256");
        jail.set_env("XDB_LIMITS_MAX_PAGE_SIZE", "0");
        let error = load(Service::Async, None, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("limits.max_id_chars must be between 1 and 255"),
            "{error}"
        );
        assert!(
            error.contains("limits.max_page_size must be between 1 and 1000"),
            "{error}"
        );
        Ok(())
    });
}

#[test]
fn a_binarys_own_defaults_yield_to_the_file_and_the_environment() {
    Jail::expect_with(|jail| {
        jail.set_env("XDB_DATABASE_URL", "postgres://h/db");
        let mut overrides = Overrides::default();
        overrides.default_value("async.listen", "127.0.0.1:0");
        overrides.default_value("api.pool_size", 3);
        let settings = load(Service::Both, None, &overrides).unwrap();
        assert_eq!(
            settings.async_service.listen.port(),
            0,
            "the binary's default"
        );
        assert_eq!(settings.api.pool_size, 3);

        jail.create_file("xdb.toml", "[async]\nlisten = \"127.0.0.1:9802\"\n")?;
        jail.set_env("XDB_API_POOL_SIZE", "5");
        let settings = load(Service::Both, Some("xdb.toml".as_ref()), &overrides).unwrap();
        assert_eq!(settings.async_service.listen.port(), 9802, "the file wins");
        assert_eq!(settings.api.pool_size, 5, "the environment wins");
        Ok(())
    });
}

#[test]
fn both_services_in_one_process_get_the_checks_of_both() {
    Jail::expect_with(|jail| {
        jail.set_env("XDB_DATABASE_URL", "postgres://h/db");
        jail.set_env("XDB_API_POOL_SIZE", "0");
        jail.set_env("XDB_ASYNC_POOL_SIZE", "0");
        let error = load(Service::Both, None, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("api.pool_size must be at least 1"),
            "{error}"
        );
        assert!(
            error.contains("async.pool_size must be at least 1"),
            "{error}"
        );
        Ok(())
    });
}

#[test]
fn database_urls_are_parsed_at_start_up() {
    Jail::expect_with(|jail| {
        for url in [
            "mariadb://root:hunter2@127.0.0.1:3306/app",
            "postgresql://u@h",
            "host=h dbname=app password=hunter2",
        ] {
            jail.set_env("XDB_DATABASE_URL", url);
            let settings = load(Service::Api, None, &Overrides::default()).unwrap();
            assert!(settings.database.parsed_url().is_ok(), "{url}");
        }
        for (url, expected) in [
            (
                "mysql://root:hunter2@127.0.0.1:3306",
                "must name the database",
            ),
            ("postgres://u:hunter2@h:port/db", "port must be a number"),
            ("hunter2", "expected a URL such as postgres://"),
        ] {
            jail.set_env("XDB_DATABASE_URL", url);
            let error = load(Service::Api, None, &Overrides::default())
                .unwrap_err()
                .to_string();
            assert!(error.contains("database.url: "), "{error}");
            assert!(error.contains(expected), "{expected}: {error}");
            assert!(!error.contains("hunter2"), "{error}");
        }
        Ok(())
    });
}

#[test]
fn tls_files_are_read_at_start_up_and_named_by_their_setting() {
    Jail::expect_with(|jail| {
        jail.create_file("garbage.pem", "not PEM at all\n")?;
        let garbage = jail.directory().join("garbage.pem");
        jail.set_env(
            "XDB_DATABASE_URL",
            format!(
                "mysql://u:s3cret@db/app?ssl-mode=VERIFY_IDENTITY&ssl-ca={}",
                garbage.display()
            ),
        );
        jail.set_env("XDB_SECURITY_WORKER_CA_FILE", garbage.display().to_string());
        jail.set_env("XDB_SECURITY_WORKER_CLIENT_CERT_FILE", "/nowhere/xdb.pem");
        jail.set_env("XDB_QUEUE_MODE", "pulsar");
        jail.set_env("XDB_PULSAR_SERVICE_URL", "pulsar://broker:6650");
        jail.set_env("XDB_PULSAR_TLS_CA_FILE", garbage.display().to_string());
        let error = load(Service::Async, None, &Overrides::default())
            .unwrap_err()
            .to_string();
        for expected in [
            "database.url: ssl-ca: ",
            "holds no PEM certificate",
            "security.worker_ca_file: ",
            "security.worker_client_cert_file and security.worker_client_key_file go together",
            "security.worker_client_cert_file: cannot read /nowhere/xdb.pem",
            "pulsar.tls_ca_file is for a pulsar+ssl:// service_url",
            "pulsar.tls_ca_file: ",
        ] {
            assert!(error.contains(expected), "`{expected}` not in: {error}");
        }
        assert!(!error.contains("s3cret"), "{error}");
        // The API service reads no Pulsar setting.
        let error = load(Service::Api, None, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(!error.contains("pulsar.tls_ca_file: "), "{error}");
        Ok(())
    });
}
