//! Start-up checks that need no IO. Each problem names its key; values that may hold a
//! password (the database URL) are never echoed.

use crate::database_url::{DatabaseUrl, Dialect};
use std::collections::{HashMap, HashSet};

use crate::settings::{QueueMode, SecuritySettings, Settings};

/// Which service is starting: each checks the sections it uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    Api,
    Async,
    /// Both in one process (`xdb-server`): the checks of both.
    Both,
}

impl Service {
    fn runs_api(self) -> bool {
        matches!(self, Service::Api | Service::Both)
    }

    fn runs_async(self) -> bool {
        matches!(self, Service::Async | Service::Both)
    }
}

/// Every problem of `settings` for `service`; empty when it can start.
pub(crate) fn problems(settings: &Settings, service: Service) -> Vec<String> {
    let mut problems = Vec::new();
    let mut check = |ok: bool, problem: &str| {
        if !ok {
            problems.push(problem.to_string());
        }
    };
    match settings.database.url.as_deref().map(str::trim) {
        None | Some("") => check(
            false,
            "database.url is required: set it in the config file, as XDB_DATABASE_URL or \
             with --database-url",
        ),
        Some(url) => match DatabaseUrl::parse(url) {
            // MySQL has no default database, and every XDB statement needs one.
            Ok(url) if url.dialect() == Dialect::MySql => {
                if let Err(error) = url.require_database() {
                    check(false, &format!("database.url: {error}"));
                }
            }
            Ok(_) => {}
            Err(error) => check(false, &format!("database.url: {error}")),
        },
    }
    check(
        tracing_subscriber::EnvFilter::try_new(&settings.log.level).is_ok(),
        "log.level: not a tracing filter (e.g. `info` or `info,xdb_async_service=debug`)",
    );
    let security = &settings.security;
    check(
        security
            .api_tokens
            .iter()
            .all(|t| t.len() >= 16 && t.is_ascii() && !t.chars().any(char::is_whitespace)),
        "security.api_tokens: every token must be at least 16 ASCII characters, no spaces",
    );
    for problem in token_problems(security) {
        check(false, &problem);
    }
    check(
        security
            .worker_url_prefixes
            .iter()
            .all(|p| is_http_url(p) && p.len() > "https://".len()),
        "security.worker_url_prefixes: every prefix must be an http:// or https:// URL \
         with a host (end it with `/` or `:port/` so no other host shares the prefix)",
    );
    check(
        security
            .worker_signing_secret
            .as_deref()
            .is_none_or(|s| s.len() >= xdb_worker_auth::MIN_SECRET_BYTES),
        "security.worker_signing_secret must be at least 16 bytes",
    );
    check(
        security
            .internal_secret
            .as_deref()
            .is_none_or(|s| s.len() >= xdb_worker_auth::MIN_SECRET_BYTES),
        "security.internal_secret must be at least 16 bytes",
    );
    check(
        security.worker_client_cert_file.is_some() == security.worker_client_key_file.is_some(),
        "security.worker_client_cert_file and security.worker_client_key_file go together: \
         set both for mutual TLS with workers, or neither",
    );
    let telemetry = &settings.telemetry;
    if telemetry.enabled {
        check(
            is_http_url(telemetry.otlp_endpoint.trim()),
            "telemetry.otlp_endpoint must be an http:// or https:// URL \
             (e.g. http://otel-collector:4318)",
        );
    }
    check(
        (0.0..=1.0).contains(&telemetry.sample_ratio),
        "telemetry.sample_ratio must be between 0 and 1",
    );
    check(
        telemetry
            .service_name
            .as_deref()
            .is_none_or(|name| !name.trim().is_empty()),
        "telemetry.service_name must not be empty (leave it out for the default)",
    );
    let limits = &settings.limits;
    use xdb_protocol::limits::{ID_CHARS_CEILING, PAGE_SIZE_CEILING, WORKER_URL_CHARS_CEILING};
    check(
        (1..=ID_CHARS_CEILING).contains(&limits.max_id_chars),
        &format!("limits.max_id_chars must be between 1 and {ID_CHARS_CEILING} (the system tables' columns)"),
    );
    check(
        (16..=WORKER_URL_CHARS_CEILING).contains(&limits.max_worker_url_chars),
        &format!("limits.max_worker_url_chars must be between 16 and {WORKER_URL_CHARS_CEILING} (the system tables' column)"),
    );
    check(
        limits.max_attribute_value_bytes >= 1,
        "limits.max_attribute_value_bytes must be at least 1",
    );
    check(
        limits.max_queue_message_bytes >= 1,
        "limits.max_queue_message_bytes must be at least 1",
    );
    check(
        (1..=PAGE_SIZE_CEILING).contains(&limits.max_page_size),
        &format!("limits.max_page_size must be between 1 and {PAGE_SIZE_CEILING}"),
    );
    if service.runs_api() {
        let api = &settings.api;
        check(api.pool_size >= 1, "api.pool_size must be at least 1");
        check(
            api.max_request_bytes >= 1024,
            "api.max_request_bytes must be at least 1024",
        );
        check(
            api.max_wait_seconds >= 1,
            "api.max_wait_seconds must be at least 1",
        );
        check(
            api.query_timeout_ms >= 1,
            "api.query_timeout_ms must be at least 1",
        );
        check(
            api.request_id_retention_seconds >= 1,
            "api.request_id_retention_seconds must be at least 1",
        );
        check(
            api.advertise_url.as_deref().is_none_or(is_http_url),
            "api.advertise_url must be an http:// or https:// URL",
        );
        check(
            api.console_async_metrics_url
                .as_deref()
                .is_none_or(is_http_url),
            "api.console_async_metrics_url must be an http:// or https:// URL",
        );
        check(
            api.max_in_flight_requests.is_none_or(|n| n >= 1),
            "api.max_in_flight_requests must be at least 1 (leave it out for 8 x pool_size)",
        );
        check(
            api.admission_wait_ms <= 60_000,
            "api.admission_wait_ms must be at most 60000",
        );
        check(
            api.max_waiting_requests >= 1,
            "api.max_waiting_requests must be at least 1",
        );
        check(
            (1..=60_000).contains(&api.pool_wait_ms),
            "api.pool_wait_ms must be between 1 and 60000",
        );
    }
    if service.runs_async() {
        let a = &settings.async_service;
        check(a.pool_size >= 1, "async.pool_size must be at least 1");
        check(
            a.max_in_flight >= 1,
            "async.max_in_flight must be at least 1",
        );
        check(
            a.lower_priority_max_in_flight >= 1,
            "async.lower_priority_max_in_flight must be at least 1",
        );
        check(
            a.lease_seconds.is_finite() && a.lease_seconds >= 1.0,
            "async.lease_seconds must be at least 1",
        );
        check(
            a.liveness_timeout_ms == 0 || (100..=600_000).contains(&a.liveness_timeout_ms),
            "async.liveness_timeout_ms must be 0 (off) or between 100 and 600000",
        );
        check(
            a.poll_interval_ms >= 10,
            "async.poll_interval_ms must be at least 10",
        );
        check(
            a.default_api_timeout_seconds >= 1,
            "async.default_api_timeout_seconds must be at least 1",
        );
        check(
            a.max_worker_response_bytes >= 1024,
            "async.max_worker_response_bytes must be at least 1024",
        );
        check(
            a.shutdown_grace_seconds.is_finite() && a.shutdown_grace_seconds >= 0.0,
            "async.shutdown_grace_seconds must be 0 or more",
        );
        check(
            a.instance_id
                .as_deref()
                .is_none_or(|id| !id.trim().is_empty() && id.len() <= 200),
            "async.instance_id must be 1 to 200 characters",
        );
        check(
            a.advertise_url.as_deref().is_none_or(is_http_url),
            "async.advertise_url must be an http:// or https:// URL",
        );
        check(
            (1..=1_000_000).contains(&a.attempts_alert_threshold),
            "async.attempts_alert_threshold must be between 1 and 1000000",
        );
        if settings.queue.mode == QueueMode::Pulsar {
            let p = &settings.pulsar;
            match p.service_url.as_deref() {
                None | Some("") => check(
                    false,
                    "pulsar.service_url is required when queue.mode = \"pulsar\" \
                     (e.g. pulsar://pulsar:6650)",
                ),
                Some(url) => {
                    check(
                        url.starts_with("pulsar://") || url.starts_with("pulsar+ssl://"),
                        "pulsar.service_url must start with pulsar:// or pulsar+ssl://",
                    );
                    check(
                        p.tls_ca_file.is_none() || url.starts_with("pulsar+ssl://"),
                        "pulsar.tls_ca_file is for a pulsar+ssl:// service_url; \
                         pulsar:// is plaintext",
                    );
                }
            }
            for (key, value) in [
                ("pulsar.tenant", &p.tenant),
                ("pulsar.namespace", &p.namespace),
                ("pulsar.topic_prefix", &p.topic_prefix),
                ("pulsar.subscription", &p.subscription),
            ] {
                check(
                    is_pulsar_name(value),
                    &format!("{key} must be non-empty letters, digits, `-`, `_` or `.`"),
                );
            }
            check(
                (10..=3_600_000).contains(&p.hold_ms),
                "pulsar.hold_ms must be between 10 and 3600000",
            );
            check(
                p.sweep_after_ms == 0 || p.sweep_after_ms >= 100,
                "pulsar.sweep_after_ms must be 0 (off) or at least 100",
            );
            check(
                (1..=1000).contains(&p.max_deliveries),
                "pulsar.max_deliveries must be between 1 and 1000",
            );
            check(
                (10..=600_000).contains(&p.nack_delay_ms),
                "pulsar.nack_delay_ms must be between 10 and 600000",
            );
        }
    }
    problems
}

/// The problems of `security.tokens`: each named, with a bearer token's syntax and at
/// least one role, and no secret given twice (the roles it gets would be ambiguous).
/// Messages name tokens by `name`, never by their secret.
fn token_problems(security: &SecuritySettings) -> Vec<String> {
    let mut problems = Vec::new();
    let mut names = HashSet::new();
    let mut secrets: HashMap<&str, String> = security
        .api_tokens
        .iter()
        .enumerate()
        .map(|(i, token)| (token.as_str(), format!("security.api_tokens[{i}]")))
        .collect();
    for (i, entry) in security.tokens.iter().enumerate() {
        let key = format!("security.tokens[{i}]");
        let name = entry.name.trim();
        if !is_token_name(name) {
            problems.push(format!(
                "{key}.name must be 1 to 64 letters, digits, `-`, `_` or `.` (it names the \
                 token in logs)"
            ));
        } else if !names.insert(name) {
            problems.push(format!("{key}.name: `{name}` names another token too"));
        }
        let label = format!("{key} (`{name}`)");
        if !is_bearer_token(&entry.token) {
            problems.push(format!(
                "{label}.token must be at least 16 characters of letters, digits, `-`, `.`, \
                 `_`, `~`, `+`, `/`, optionally ending in `=` (a bearer token's syntax)"
            ));
        } else if let Some(other) = secrets.insert(&entry.token, label.clone()) {
            problems.push(format!("{label}.token is the same secret as {other}"));
        }
        if entry.roles.is_empty() {
            problems.push(format!(
                "{label}.roles must name at least one of read, operate, client, deploy"
            ));
        }
    }
    problems
}

fn is_token_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// RFC 6750's `b64token`, at least 16 characters. The syntax also keeps a token safe to
/// place between quotes in an `XDB_SECURITY_TOKENS` value (as the Helm chart does).
fn is_bearer_token(token: &str) -> bool {
    let body = token.trim_end_matches('=');
    token.len() >= 16
        && !body.is_empty()
        && body
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~' | '+' | '/'))
}

fn is_http_url(url: &str) -> bool {
    url.starts_with("http://") || url.starts_with("https://")
}

fn is_pulsar_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::ApiToken;
    use xdb_protocol::paths::Role;

    fn async_problems(settings: &Settings) -> Vec<String> {
        problems(settings, Service::Async)
            .into_iter()
            .filter(|p| p.starts_with("async."))
            .collect()
    }

    fn security_problems(security: SecuritySettings) -> Vec<String> {
        let settings = Settings {
            security,
            ..Default::default()
        };
        problems(&settings, Service::Api)
            .into_iter()
            .filter(|p| p.starts_with("security."))
            .collect()
    }

    fn token(name: &str, token: &str, roles: &[Role]) -> ApiToken {
        ApiToken {
            name: name.into(),
            token: token.into(),
            roles: roles.to_vec(),
        }
    }

    #[test]
    fn tokens_with_roles_are_checked_without_echoing_secrets() {
        let good = SecuritySettings {
            api_tokens: vec!["legacy-token-0123456789".into()],
            tokens: vec![
                token(
                    "oncall",
                    "oncall-token-0123456789",
                    &[Role::Read, Role::Operate],
                ),
                token("app", "YXBwLXRva2VuLTAxMjM0NTY3ODk=", &[Role::Client]),
            ],
            ..Default::default()
        };
        assert!(security_problems(good).is_empty());
        let bad = SecuritySettings {
            api_tokens: vec!["legacy-token-0123456789".into()],
            tokens: vec![
                token("", "empty-name-0123456789", &[Role::Read]),
                token("short", "short", &[Role::Read]),
                token("quoted", "has\"quote-0123456789", &[Role::Read]),
                token("again", "legacy-token-0123456789", &[Role::Read]),
                token("oncall", "oncall-token-0123456789", &[]),
                token("oncall", "other-token-0123456789", &[Role::Read]),
            ],
            ..Default::default()
        };
        let found = security_problems(bad);
        let expected = [
            "security.tokens[0].name must be 1 to 64",
            "security.tokens[1] (`short`).token must be at least 16",
            "security.tokens[2] (`quoted`).token must be at least 16",
            "security.tokens[3] (`again`).token is the same secret as security.api_tokens[0]",
            "security.tokens[4] (`oncall`).roles must name at least one",
            "security.tokens[5].name: `oncall` names another token too",
        ];
        assert_eq!(found.len(), expected.len(), "{found:#?}");
        for (problem, start) in found.iter().zip(expected) {
            assert!(problem.starts_with(start), "{problem:?} vs {start:?}");
            assert!(!problem.contains("0123456789"), "a secret in {problem:?}");
        }
    }

    /// Arrays of tables come from one variable too, which is how the Helm chart sets them.
    #[test]
    #[allow(clippy::result_large_err)] // figment's `Jail` closure returns its own error
    fn tokens_come_from_the_environment_and_unknown_roles_are_named() {
        use crate::load::{load, Overrides};
        figment::Jail::expect_with(|jail| {
            jail.set_env("XDB_DATABASE_URL", "postgres://db/app");
            jail.set_env(
                "XDB_SECURITY_TOKENS",
                r#"[{name="oncall", token="oncall-token-0123456789", roles=["read", "operate"]},
                    {name="app", token="YXBwLXRva2VuLTAxMjM0NTY3ODk=", roles=["client"]}]"#,
            );
            let settings = load(Service::Api, None, &Overrides::default()).unwrap();
            let tokens = &settings.security.tokens;
            assert_eq!(tokens.len(), 2);
            assert_eq!(tokens[0].roles, [Role::Read, Role::Operate]);
            assert_eq!(tokens[1].token, "YXBwLXRva2VuLTAxMjM0NTY3ODk=");
            let debug = format!("{settings:?}");
            assert!(!debug.contains("0123456789"), "{debug}");

            jail.set_env(
                "XDB_SECURITY_TOKENS",
                r#"[{name="x", token="oncall-token-0123456789", roles=["admin"]}]"#,
            );
            let error = load(Service::Api, None, &Overrides::default())
                .unwrap_err()
                .to_string();
            for part in ["security.tokens", "admin", "read", "operate", "client"] {
                assert!(error.contains(part), "{part} not in: {error}");
            }
            Ok(())
        });
    }

    #[test]
    fn the_attempts_alert_threshold_is_a_positive_attempt_number() {
        let mut settings = Settings::default();
        assert_eq!(settings.async_service.attempts_alert_threshold, 5);
        assert!(async_problems(&settings).is_empty());
        for bad in [0, 1_000_001, u32::MAX] {
            settings.async_service.attempts_alert_threshold = bad;
            assert_eq!(
                async_problems(&settings),
                vec!["async.attempts_alert_threshold must be between 1 and 1000000"],
                "{bad}"
            );
        }
        settings.async_service.attempts_alert_threshold = 1;
        assert!(async_problems(&settings).is_empty());
    }
}
