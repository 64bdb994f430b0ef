//! The committed source configs, and what capturing one database changes in them: the
//! connection, the names that must be unique per capture, and nothing else.

use reqwest::Url;
use serde_json::{Map, Value};
use xdb_config::{DatabaseUrl, Dialect};

const POSTGRES_SOURCE_YAML: &str = include_str!("../debezium-postgres-source.yaml");
const MYSQL_SOURCE_YAML: &str = include_str!("../debezium-mysql-source.yaml");

/// Which official Pulsar IO Debezium connector captures a database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Connector {
    /// `debezium-postgres` (pgoutput).
    Postgres,
    /// `debezium-mysql` (binary log; tested on MariaDB 10.11, MySQL 8 untested).
    MySql,
}

impl Connector {
    /// The connector for a database of `dialect`.
    pub fn for_dialect(dialect: Dialect) -> Self {
        match dialect {
            Dialect::Postgres => Self::Postgres,
            Dialect::MySql => Self::MySql,
        }
    }

    fn committed_yaml(self) -> &'static str {
        match self {
            Self::Postgres => POSTGRES_SOURCE_YAML,
            Self::MySql => MYSQL_SOURCE_YAML,
        }
    }

    fn default_port(self) -> u16 {
        match self {
            Self::Postgres => 5432,
            Self::MySql => 3306,
        }
    }
}

/// One database to capture.
#[derive(Debug, Clone)]
pub struct Capture {
    /// The source's name; also names its replication slot and publication (PostgreSQL),
    /// its offset and schema-history topics. Lower-case letters, digits and `_` only.
    pub name: String,
    /// The captured database (`postgres://…/db` or `mysql://…/db`).
    pub database_url: String,
    /// Debezium's `database.server.name`: the async service's `pulsar.topic_prefix`.
    pub topic_prefix: String,
    /// For a database written by nothing but XDB and captured from its start (a test's,
    /// the bench's): the MySQL snapshot takes no global read lock, which would stall every
    /// other writer of a shared server.
    pub throwaway: bool,
}

/// What to send Pulsar IO's admin API for one capture.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceRegistration {
    pub connector: Connector,
    pub tenant: String,
    pub namespace: String,
    pub name: String,
    /// Pulsar's `SourceConfig` (the committed YAML as JSON, with this capture's values).
    pub config: Value,
    /// The topic the change events of `xdb_sys_tasks` arrive on.
    pub tasks_topic: String,
    /// Where Pulsar IO keeps the connector's offsets (`persistent://…`).
    pub offsets_topic: String,
    /// PostgreSQL's replication slot, MySQL's schema-history topic (`persistent://…`).
    pub slot_name: Option<String>,
    pub history_topic: Option<String>,
}

/// A capture that cannot be turned into a registration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("database URL: {0}")]
    Url(String),
    #[error("capture name {0:?}: use lower-case letters, digits and '_' only")]
    Name(String),
    #[error("the committed source config is not valid: {0}")]
    Committed(String),
}

/// The registration of `capture`: the committed config for its database's connector,
/// with the connection, database name and the per-capture names replaced.
pub fn registration(capture: &Capture) -> Result<SourceRegistration, ConfigError> {
    let name = &capture.name;
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return Err(ConfigError::Name(name.clone()));
    }
    let parsed = DatabaseUrl::parse(&capture.database_url)
        .map_err(|error| ConfigError::Url(error.to_string()))?;
    let connector = Connector::for_dialect(parsed.dialect());
    let database = parsed
        .require_database()
        .map_err(|error| ConfigError::Url(error.to_string()))?
        .to_string();
    if database.contains('/') {
        return Err(ConfigError::Url(
            "a database name cannot contain `/`".into(),
        ));
    }
    // Debezium takes host, port and credentials as settings of their own.
    let url = Url::parse(parsed.as_str()).map_err(|error| {
        ConfigError::Url(format!(
            "{error}; Debezium needs a URL such as postgres://user@host:5432/db"
        ))
    })?;
    let host = url
        .host_str()
        .ok_or_else(|| ConfigError::Url("no host".into()))?
        .to_string();
    let port = url.port().unwrap_or(connector.default_port());
    let user = decode(url.username());
    let password = url.password().map(decode).unwrap_or_default();

    let mut config: Value = serde_yaml_ng::from_str(connector.committed_yaml())
        .map_err(|e| ConfigError::Committed(e.to_string()))?;
    let source = config
        .as_object_mut()
        .ok_or_else(|| ConfigError::Committed("not a mapping".into()))?;
    source.insert("name".into(), Value::from(name.as_str()));
    let tenant = text(source, "tenant")?;
    let namespace = text(source, "namespace")?;
    let configs = source
        .get_mut("configs")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| ConfigError::Committed("no `configs` mapping".into()))?;

    let mut set = |key: &str, value: String| {
        configs.insert(key.to_string(), Value::from(value));
    };
    set("database.hostname", host);
    set("database.port", port.to_string());
    set("database.user", user);
    set("database.password", password);
    set("database.server.name", capture.topic_prefix.clone());
    let offsets = format!("{name}-offsets");
    set("offset.storage.topic", offsets.clone());
    let (middle, slot_name, history_topic) = match connector {
        Connector::Postgres => {
            set("database.dbname", database.clone());
            set("slot.name", name.clone());
            set("publication.name", name.clone());
            ("public".to_string(), Some(name.clone()), None)
        }
        Connector::MySql => {
            set("database.include.list", database.clone());
            set("table.include.list", format!("{database}.xdb_sys_tasks"));
            set(
                "message.key.columns",
                format!("{database}.xdb_sys_tasks:process_execution_id"),
            );
            set("database.server.id", server_id(name).to_string());
            let history = format!("{name}-history");
            set("database.history.pulsar.topic", history.clone());
            if capture.throwaway {
                set("snapshot.locking.mode", "none".into());
            }
            (database.clone(), None, Some(client_topic(&history)))
        }
    };
    let tasks_topic = format!(
        "persistent://{tenant}/{namespace}/{}.{middle}.xdb_sys_tasks",
        capture.topic_prefix
    );
    let offsets_topic = client_topic(&offsets);
    Ok(SourceRegistration {
        connector,
        tenant,
        namespace,
        name: name.clone(),
        config,
        tasks_topic,
        offsets_topic,
        slot_name,
        history_topic,
    })
}

/// The topic a Pulsar client resolves `name` to: a short name is in `public/default`,
/// whatever the source's own tenant and namespace (Pulsar IO hands the connector's
/// topic settings to its client as they are).
fn client_topic(name: &str) -> String {
    if name.contains("://") {
        name.to_string()
    } else if name.matches('/').count() == 2 {
        format!("persistent://{name}")
    } else {
        format!("persistent://public/default/{name}")
    }
}

fn text(source: &Map<String, Value>, key: &str) -> Result<String, ConfigError> {
    source
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| ConfigError::Committed(format!("no `{key}`")))
}

/// URL userinfo is percent-encoded; Debezium wants it as it is.
fn decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

/// A MySQL replication client id for the capture: stable for a name, unlikely to meet
/// another capture's, and clear of the small ids servers and replicas usually take.
fn server_id(name: &str) -> u32 {
    // FNV-1a: a fixed, dependency-free hash (std's is randomised per process).
    let hash = name.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    100_000 + hash % 1_000_000_000
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(url: &str) -> Capture {
        Capture {
            name: "xdb_test_0a1b".into(),
            database_url: url.into(),
            topic_prefix: "xdbtest-0a1b".into(),
            throwaway: true,
        }
    }

    fn configs(registration: &SourceRegistration) -> &Map<String, Value> {
        registration.config["configs"].as_object().unwrap()
    }

    #[test]
    fn postgres_keeps_the_committed_settings_and_replaces_connection_and_names() {
        let reg = registration(&capture("postgres://me:p%40ss@db.local:6543/shop")).unwrap();
        assert_eq!(reg.connector, Connector::Postgres);
        assert_eq!(reg.config["archive"], "builtin://debezium-postgres");
        assert_eq!(reg.config["topicName"], "xdb-debezium-unused");
        assert_eq!(reg.config["producerConfig"]["batchBuilder"], "KEY_BASED");
        assert_eq!(reg.config["name"], "xdb_test_0a1b");
        let c = configs(&reg);
        assert_eq!(c["database.hostname"], "db.local");
        assert_eq!(c["database.port"], "6543");
        assert_eq!(c["database.user"], "me");
        assert_eq!(c["database.password"], "p@ss");
        assert_eq!(c["database.dbname"], "shop");
        assert_eq!(c["database.server.name"], "xdbtest-0a1b");
        assert_eq!(c["slot.name"], "xdb_test_0a1b");
        // A restarted connector resumes from its slot: it is kept until the capture stops.
        assert!(!c.contains_key("slot.drop.on.stop"));
        // Untouched: what the committed file says.
        assert_eq!(c["plugin.name"], "pgoutput");
        assert_eq!(c["table.include.list"], "public.xdb_sys_tasks");
        assert_eq!(c["json-with-envelope"], "true");
        // Deletes are done work: the async service ignores them, so none is published.
        assert_eq!(c["skipped.operations"], "d");
        // A failed start of the replication stream is retried within a fraction of a
        // second, not after Debezium's default 10 s of no tasks running.
        let retry_ms: u64 = c["slot.retry.delay.ms"].as_str().unwrap().parse().unwrap();
        assert!(retry_ms <= 500, "{retry_ms}");
        assert_eq!(
            reg.tasks_topic,
            "persistent://public/default/xdbtest-0a1b.public.xdb_sys_tasks"
        );
        assert_eq!(reg.slot_name.as_deref(), Some("xdb_test_0a1b"));
        assert_eq!(c["offset.storage.topic"], "xdb_test_0a1b-offsets");
        assert_eq!(
            reg.offsets_topic,
            "persistent://public/default/xdb_test_0a1b-offsets"
        );
    }

    #[test]
    fn mysql_names_the_database_in_its_filters_and_topic() {
        let reg = registration(&capture("mysql://root@127.0.0.1/orders")).unwrap();
        let c = configs(&reg);
        assert_eq!(c["database.port"], "3306");
        assert_eq!(c["database.password"], "");
        assert_eq!(c["database.include.list"], "orders");
        assert_eq!(c["table.include.list"], "orders.xdb_sys_tasks");
        assert_eq!(
            c["message.key.columns"],
            "orders.xdb_sys_tasks:process_execution_id"
        );
        assert_eq!(c["snapshot.locking.mode"], "none");
        assert_eq!(c["skipped.operations"], "d");
        assert_eq!(
            c["database.history"],
            "org.apache.pulsar.io.debezium.PulsarDatabaseHistory"
        );
        assert_eq!(
            reg.tasks_topic,
            "persistent://public/default/xdbtest-0a1b.orders.xdb_sys_tasks"
        );
        assert_eq!(
            reg.history_topic.as_deref(),
            Some("persistent://public/default/xdb_test_0a1b-history")
        );
        let id: u32 = c["database.server.id"].as_str().unwrap().parse().unwrap();
        assert!(id >= 100_000);
    }

    #[test]
    fn a_capture_of_a_shared_database_keeps_the_snapshot_lock() {
        let mut shared = capture("mysql://u@h/app");
        shared.throwaway = false;
        let reg = registration(&shared).unwrap();
        assert!(!configs(&reg).contains_key("snapshot.locking.mode"));
    }

    #[test]
    fn bad_names_and_urls_are_refused() {
        let mut bad = capture("postgres://u@h/app");
        bad.name = "Robert'); DROP".into();
        assert!(matches!(registration(&bad), Err(ConfigError::Name(_))));
        assert!(matches!(
            registration(&capture("redis://h/app")),
            Err(ConfigError::Url(_))
        ));
        assert!(matches!(
            registration(&capture("postgres://u@h")),
            Err(ConfigError::Url(_))
        ));
        let error = registration(&capture("host=h dbname=app password=secret"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("Debezium needs a URL"), "{error}");
        assert!(!error.contains("secret"), "{error}");
        let error = registration(&capture("oracle://u:secret@h/app"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("unknown scheme"), "{error}");
        assert!(!error.contains("secret"), "{error}");
    }
}
