//! XDB system tables: the versioned SQL for each database dialect and the installer that
//! applies it.
//!
//! The system tables (`xdb_sys_*`) live in the user's own database, beside the business
//! tables. Their version is recorded in the single-row table `xdb_sys_schema_version`,
//! which the installer creates, with (from v006) the oldest schema version whose services
//! still work on it. Services call [`check`] at start-up and run on exactly
//! [`LATEST_VERSION`] or on a newer schema that records them as compatible, so a rolling
//! upgrade can migrate the schema before it replaces them (`status`, docs/upgrades.md).
//!
//! Migrations are embedded in the binary, one ordered list per dialect; every dialect has
//! the same versions. PostgreSQL applies each migration and its version bump in one
//! transaction; MySQL/MariaDB commit DDL implicitly, so their migrations are written to be
//! re-run after a crash and the version is recorded last (see [`install_mysql`]).

use std::fmt;
use std::time::Duration;

use xdb_config::{DatabaseUrl, DatabaseUrlError};

mod mysql;
mod postgres;
mod publication;
mod status;

pub use mysql::{check_mysql, install_mysql, MYSQL_INSTALL_LOCK_PREFIX};
pub use postgres::{check_postgres, install_postgres, POSTGRES_INSTALL_LOCK_KEY};
pub use publication::{
    check_cdc_publication, create_cdc_publication, install_cdc_publication, publication_name,
    FILTERED_PUBLICATION,
};
pub use status::{schema_state, SchemaState, SchemaStatus, COMPATIBILITY_RECORDED_FROM};

/// The database family a URL or a migration list belongs to (`mysql/` and `postgres/`
/// folders); read from a URL with [`xdb_config::DatabaseUrl`].
pub use xdb_config::Dialect;

/// One embedded schema migration.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Migration {
    /// Schema version this migration brings the database to (1, 2, ...).
    pub version: i32,
    /// Short name, matching the file name `vNNN_<name>.sql`.
    pub name: &'static str,
    /// The oldest schema version whose services still work once this migration ran:
    /// `version - 1` for an additive migration, `version` for one that drops, renames or
    /// retypes something older services use. Recorded with the version (from
    /// [`COMPATIBILITY_RECORDED_FROM`] on) and read by services at start-up.
    pub oldest_compatible: i32,
    /// The SQL: on PostgreSQL one batch inside the installer's transaction; on MySQL a
    /// list of re-runnable statements (see [`install_mysql`]).
    pub sql: &'static str,
}

impl fmt::Debug for Migration {
    // The SQL is long and adds nothing to a debug line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Migration(v{:03}_{})", self.version, self.name)
    }
}

const POSTGRES_MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        oldest_compatible: 1,
        name: "initial",
        sql: include_str!("../postgres/v001_initial.sql"),
    },
    Migration {
        version: 2,
        oldest_compatible: 1,
        name: "service_instances",
        sql: include_str!("../postgres/v002_service_instances.sql"),
    },
    Migration {
        version: 3,
        oldest_compatible: 2,
        name: "unleased_task_index",
        sql: include_str!("../postgres/v003_unleased_task_index.sql"),
    },
    Migration {
        version: 4,
        oldest_compatible: 3,
        name: "due_timer_index",
        sql: include_str!("../postgres/v004_due_timer_index.sql"),
    },
    Migration {
        version: 5,
        oldest_compatible: 4,
        name: "operator_controls",
        sql: include_str!("../postgres/v005_operator_controls.sql"),
    },
    Migration {
        version: 6,
        oldest_compatible: 5,
        name: "compatibility",
        sql: include_str!("../postgres/v006_compatibility.sql"),
    },
    Migration {
        version: 7,
        // Additive, like v006: services of schema 5 still work on it.
        oldest_compatible: 5,
        name: "cluster_secrets",
        sql: include_str!("../postgres/v007_cluster_secrets.sql"),
    },
    Migration {
        version: 8,
        // Additive: services of schema 5 still work on it (they register nothing).
        oldest_compatible: 5,
        name: "process_definitions",
        sql: include_str!("../postgres/v008_process_definitions.sql"),
    },
    Migration {
        version: 9,
        // Additive: services of schema 5 still work on it (they send no request ids).
        oldest_compatible: 5,
        name: "fleet_operations",
        sql: include_str!("../postgres/v009_fleet_operations.sql"),
    },
    Migration {
        version: 10,
        // Additive: services of schema 5 still work on it (they create no schedules).
        oldest_compatible: 5,
        name: "schedules",
        sql: include_str!("../postgres/v010_schedules.sql"),
    },
    Migration {
        version: 11,
        // Additive: services of schema 5 still work on it (they apply no flow limits).
        oldest_compatible: 5,
        name: "flow_limits",
        sql: include_str!("../postgres/v011_flow_limits.sql"),
    },
    Migration {
        version: 12,
        // Additive: services of schema 5 still work on it (they record no schedule
        // changes).
        oldest_compatible: 5,
        name: "schedule_changes",
        sql: include_str!("../postgres/v012_schedule_changes.sql"),
    },
    Migration {
        version: 13,
        // Additive: services of schema 5 still work on it (they apply no running
        // limits).
        oldest_compatible: 5,
        name: "run_slots",
        sql: include_str!("../postgres/v013_run_slots.sql"),
    },
    Migration {
        version: 14,
        // Services of schema 5 still work on it: they write the default priority, and
        // their claims read unleased tasks through other indexes, more slowly.
        oldest_compatible: 5,
        name: "priorities",
        sql: include_str!("../postgres/v014_priorities.sql"),
    },
    Migration {
        version: 15,
        // Services of schema 5 still work on it: they write keyless tasks, and
        // their claims read unleased tasks through other indexes, more slowly.
        oldest_compatible: 5,
        name: "fairness_keys",
        sql: include_str!("../postgres/v015_fairness_keys.sql"),
    },
];

const MYSQL_MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        oldest_compatible: 1,
        name: "initial",
        sql: include_str!("../mysql/v001_initial.sql"),
    },
    Migration {
        version: 2,
        oldest_compatible: 1,
        name: "service_instances",
        sql: include_str!("../mysql/v002_service_instances.sql"),
    },
    Migration {
        version: 3,
        oldest_compatible: 2,
        name: "unleased_task_index",
        sql: include_str!("../mysql/v003_unleased_task_index.sql"),
    },
    Migration {
        version: 4,
        oldest_compatible: 3,
        name: "due_timer_index",
        sql: include_str!("../mysql/v004_due_timer_index.sql"),
    },
    Migration {
        version: 5,
        oldest_compatible: 4,
        name: "operator_controls",
        sql: include_str!("../mysql/v005_operator_controls.sql"),
    },
    Migration {
        version: 6,
        oldest_compatible: 5,
        name: "compatibility",
        sql: include_str!("../mysql/v006_compatibility.sql"),
    },
    Migration {
        version: 7,
        // Additive, like v006: services of schema 5 still work on it.
        oldest_compatible: 5,
        name: "cluster_secrets",
        sql: include_str!("../mysql/v007_cluster_secrets.sql"),
    },
    Migration {
        version: 8,
        // Additive: services of schema 5 still work on it (they register nothing).
        oldest_compatible: 5,
        name: "process_definitions",
        sql: include_str!("../mysql/v008_process_definitions.sql"),
    },
    Migration {
        version: 9,
        // Additive: services of schema 5 still work on it (they send no request ids).
        oldest_compatible: 5,
        name: "fleet_operations",
        sql: include_str!("../mysql/v009_fleet_operations.sql"),
    },
    Migration {
        version: 10,
        // Additive: services of schema 5 still work on it (they create no schedules).
        oldest_compatible: 5,
        name: "schedules",
        sql: include_str!("../mysql/v010_schedules.sql"),
    },
    Migration {
        version: 11,
        // Additive: services of schema 5 still work on it (they apply no flow limits).
        oldest_compatible: 5,
        name: "flow_limits",
        sql: include_str!("../mysql/v011_flow_limits.sql"),
    },
    Migration {
        version: 12,
        // Additive: services of schema 5 still work on it (they record no schedule
        // changes).
        oldest_compatible: 5,
        name: "schedule_changes",
        sql: include_str!("../mysql/v012_schedule_changes.sql"),
    },
    Migration {
        version: 13,
        // Additive: services of schema 5 still work on it (they apply no running
        // limits).
        oldest_compatible: 5,
        name: "run_slots",
        sql: include_str!("../mysql/v013_run_slots.sql"),
    },
    Migration {
        version: 14,
        // Services of schema 5 still work on it: they write the default priority, and
        // their claims read the replaced index with a sort.
        oldest_compatible: 5,
        name: "priorities",
        sql: include_str!("../mysql/v014_priorities.sql"),
    },
    Migration {
        version: 15,
        // Services of schema 5 still work on it: they write keyless tasks, and
        // their claims read the replaced index with a sort.
        oldest_compatible: 5,
        name: "fairness_keys",
        sql: include_str!("../mysql/v015_fairness_keys.sql"),
    },
];

/// The schema version this binary installs and expects.
pub const LATEST_VERSION: i32 = POSTGRES_MIGRATIONS[POSTGRES_MIGRATIONS.len() - 1].version;

/// Name of the single-row table recording the installed schema version.
pub const VERSION_TABLE: &str = "xdb_sys_schema_version";

/// The ordered migrations of `dialect`.
pub fn migrations(dialect: Dialect) -> Result<&'static [Migration], SchemaError> {
    match dialect {
        Dialect::Postgres => Ok(POSTGRES_MIGRATIONS),
        Dialect::MySql => Ok(MYSQL_MIGRATIONS),
    }
}

/// What the version row records; read the same way by the installer and [`check`].
#[derive(Debug, Clone, Default)]
pub(crate) struct VersionRow {
    pub(crate) version: i32,
    pub(crate) oldest_compatible: Option<i32>,
    pub(crate) installed_by: Option<String>,
}

impl VersionRow {
    /// The status of a database whose version row is `row` (`None`: no version table).
    pub(crate) fn into_status(row: Option<Self>, dialect: Dialect) -> SchemaStatus {
        let row = row.unwrap_or_default();
        SchemaStatus {
            dialect,
            installed: row.version,
            oldest_compatible: row.oldest_compatible,
            installed_by: row.installed_by,
            latest: LATEST_VERSION,
        }
    }
}

/// A migration the installer applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedMigration {
    /// Version reached by this migration.
    pub version: i32,
    /// Migration name.
    pub name: &'static str,
}

/// What an [`install`] run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallOutcome {
    /// Dialect of the database.
    pub dialect: Dialect,
    /// Version found before this run (0: no XDB schema).
    pub previous_version: i32,
    /// Version after this run.
    pub current_version: i32,
    /// The oldest schema version whose services work on `current_version` (recorded
    /// with it from [`COMPATIBILITY_RECORDED_FROM`] on).
    pub oldest_compatible: i32,
    /// Migrations applied by this run, in order; empty when it was already up to date.
    pub applied: Vec<AppliedMigration>,
}

impl InstallOutcome {
    /// True when the run found the schema up to date and changed nothing.
    pub fn is_noop(&self) -> bool {
        self.applied.is_empty()
    }
}

impl fmt::Display for InstallOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_noop() {
            return write!(
                f,
                "XDB schema already at version {} (latest); nothing to apply",
                self.current_version
            );
        }
        let names: Vec<String> = self
            .applied
            .iter()
            .map(|m| format!("v{:03}_{}", m.version, m.name))
            .collect();
        write!(
            f,
            "applied {} migration(s) ({}); XDB schema upgraded from version {} to {}; \
             services of schema version {} and newer run on it",
            self.applied.len(),
            names.join(", "),
            self.previous_version,
            self.current_version,
            self.oldest_compatible
        )?;
        if (1..self.oldest_compatible).contains(&self.previous_version) {
            write!(
                f,
                " (not those of version {}: replace them now)",
                self.previous_version
            )?;
        }
        Ok(())
    }
}

impl InstallOutcome {
    /// The outcome of a run that found `previous_version` and left `applied` after it.
    pub(crate) fn new(
        dialect: Dialect,
        previous_version: i32,
        current_version: i32,
        applied: Vec<AppliedMigration>,
    ) -> Result<Self, SchemaError> {
        Ok(Self {
            dialect,
            previous_version,
            current_version,
            oldest_compatible: oldest_compatible(dialect, current_version)?,
            applied,
        })
    }
}

/// The `oldest_compatible` of the migration that reaches `version` (0 for version 0).
fn oldest_compatible(dialect: Dialect, version: i32) -> Result<i32, SchemaError> {
    Ok(migrations(dialect)?
        .iter()
        .find(|m| m.version == version)
        .map_or(version, |m| m.oldest_compatible))
}

/// Errors of the installer and of [`check`].
///
/// Messages never include the database URL, which may carry a password. The underlying
/// database error, if any, is the error's `source()`.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// The database URL could not be understood.
    #[error("invalid database URL: {0}")]
    InvalidUrl(String),
    /// An argument other than the URL is not valid; nothing was changed.
    #[error("{0}")]
    InvalidArgument(String),
    /// Connecting to the database failed.
    #[error("cannot connect to the database")]
    Connect(#[source] DriverError),
    /// A query of the installer or of the status check failed.
    #[error("database error")]
    Database(#[source] DriverError),
    /// A migration's SQL failed and the version was not recorded. On PostgreSQL its
    /// transaction was rolled back; on MySQL the statements that ran stay (DDL commits
    /// implicitly) and a re-run of the installer, once the cause is fixed, completes it.
    #[error("migration v{version:03}_{name} failed; the schema version was not changed")]
    Migration {
        /// Version of the failed migration.
        version: i32,
        /// Name of the failed migration.
        name: &'static str,
        /// The database error, or what the check after the migration found missing.
        #[source]
        source: DriverError,
    },
    /// The database records a schema newer than this binary knows; nothing was changed.
    #[error(
        "the database's XDB schema is version {installed}, newer than this binary's latest \
         ({latest}); refusing to touch it: upgrade XDB"
    )]
    DatabaseNewer {
        /// Version recorded in the database.
        installed: i32,
        /// This binary's latest version.
        latest: i32,
    },
    /// The database's schema is newer than this binary and needs newer services (it
    /// removed or changed something this release uses); the service does not start.
    #[error(
        "the database's XDB schema is version {installed}, which needs services of schema \
         version {needs} or newer; this release's services are for version {latest}: \
         run {release}"
    )]
    ReleaseTooOld {
        /// Version recorded in the database.
        installed: i32,
        /// The oldest services' schema version that works on it.
        needs: i32,
        /// This binary's latest version.
        latest: i32,
        /// The release to run instead.
        release: String,
    },
    /// The database's schema is missing (`installed` = 0) or older than this binary needs.
    #[error(
        "the database's XDB schema is version {installed}, but this binary needs version \
         {latest}: run `xdb-sys-schema install`"
    )]
    DatabaseOutdated {
        /// Version recorded in the database (0: not installed).
        installed: i32,
        /// This binary's latest version.
        latest: i32,
    },
}

/// The error of the database driver (tokio-postgres or mysql_async), kept as the source
/// of a [`SchemaError`] so the server's message reaches the user.
pub type DriverError = Box<dyn std::error::Error + Send + Sync + 'static>;

impl From<DatabaseUrlError> for SchemaError {
    fn from(error: DatabaseUrlError) -> Self {
        SchemaError::InvalidUrl(error.to_string())
    }
}

impl From<tokio_postgres::Error> for SchemaError {
    fn from(error: tokio_postgres::Error) -> Self {
        SchemaError::Database(Box::new(error))
    }
}

impl From<mysql_async::Error> for SchemaError {
    fn from(error: mysql_async::Error) -> Self {
        SchemaError::Database(Box::new(error))
    }
}

/// How long [`install`] and [`check`] wait for a connection when the URL sets no
/// `connect_timeout`: an unreachable database must fail, not hang.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Installs or upgrades the XDB system tables in the database at `database_url`.
///
/// Idempotent; see [`install_postgres`] for the guarantees.
pub async fn install(database_url: &str) -> Result<InstallOutcome, SchemaError> {
    let url = DatabaseUrl::parse(database_url)?;
    match url.dialect() {
        Dialect::Postgres => {
            let mut client = connect_postgres(&url).await?;
            install_postgres(&mut client).await
        }
        Dialect::MySql => {
            let conn = mysql::connect(&url, DEFAULT_CONNECT_TIMEOUT).await?;
            mysql::install_and_disconnect(conn).await
        }
    }
}

/// Reports the installed vs latest schema version of the database at `database_url`,
/// changing nothing.
pub async fn check(database_url: &str) -> Result<SchemaStatus, SchemaError> {
    let url = DatabaseUrl::parse(database_url)?;
    match url.dialect() {
        Dialect::Postgres => {
            let client = connect_postgres(&url).await?;
            check_postgres(&client).await
        }
        Dialect::MySql => {
            let mut conn = mysql::connect(&url, DEFAULT_CONNECT_TIMEOUT).await?;
            let status = check_mysql(&mut conn).await;
            // Best effort: the server closes the session anyway when the socket goes.
            let _ = conn.disconnect().await;
            status
        }
    }
}

/// Opens one PostgreSQL connection (TLS as the URL says), driven by a spawned task that
/// ends when the client is dropped.
async fn connect_postgres(url: &DatabaseUrl) -> Result<tokio_postgres::Client, SchemaError> {
    let mut target = xdb_db_connect::PostgresTarget::new(url)
        .map_err(|error| SchemaError::InvalidUrl(error.to_string()))?;
    if target.config().get_connect_timeout().is_none() {
        target.config_mut().connect_timeout(DEFAULT_CONNECT_TIMEOUT);
    }
    target
        .connect_spawned()
        .await
        .map_err(|error| SchemaError::Connect(Box::new(error)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_numbered_1_to_latest_in_every_dialect() {
        for dialect in [Dialect::Postgres, Dialect::MySql] {
            let list = migrations(dialect).unwrap();
            for (index, migration) in list.iter().enumerate() {
                assert_eq!(
                    migration.version,
                    index as i32 + 1,
                    "{dialect} {migration:?}"
                );
                assert!(!migration.name.is_empty());
                assert!(!migration.sql.trim().is_empty());
            }
            assert_eq!(list.last().unwrap().version, LATEST_VERSION, "{dialect}");
        }
    }

    #[test]
    fn dialects_have_the_same_migrations() {
        let names = |dialect| {
            migrations(dialect)
                .unwrap()
                .iter()
                .map(|m| (m.version, m.name, m.oldest_compatible))
                .collect::<Vec<_>>()
        };
        assert_eq!(names(Dialect::Postgres), names(Dialect::MySql));
    }

    #[test]
    fn compatibility_never_reaches_forward_nor_back() {
        // A migration cannot make services work that an earlier one already broke, nor
        // claim services newer than itself.
        let list = migrations(Dialect::Postgres).unwrap();
        let mut floor = 1;
        for migration in list {
            assert!(
                (floor..=migration.version).contains(&migration.oldest_compatible),
                "{migration:?}: oldest_compatible {} outside {floor}..={}",
                migration.oldest_compatible,
                migration.version
            );
            floor = migration.oldest_compatible;
        }
    }

    #[test]
    fn migrations_leave_transaction_control_to_the_installer() {
        // The installer wraps each migration and its version bump in one transaction; a
        // COMMIT inside the SQL would break that atomicity.
        let all = [Dialect::Postgres, Dialect::MySql].map(|d| migrations(d).unwrap());
        for migration in all.iter().flat_map(|list| list.iter()) {
            for line in migration.sql.lines() {
                let statement = line.trim().to_ascii_uppercase();
                for keyword in ["BEGIN", "COMMIT", "ROLLBACK", "START TRANSACTION"] {
                    assert!(
                        !statement.starts_with(keyword),
                        "{migration:?} contains transaction control: {line}"
                    );
                }
            }
        }
    }

    #[test]
    fn invalid_url_is_refused_before_connecting_without_echoing_the_password() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        for url in ["", "sqlite://x.db", "secret-password-no-scheme"] {
            let error = runtime.block_on(check(url)).unwrap_err();
            assert!(
                matches!(error, SchemaError::InvalidUrl(_)),
                "{url}: {error:?}"
            );
            let message = error.to_string();
            assert!(message.starts_with("invalid database URL: "), "{message}");
            assert!(!message.contains("secret"), "{message}");
        }
    }

    #[test]
    fn outcome_display() {
        let mut outcome = InstallOutcome {
            dialect: Dialect::Postgres,
            previous_version: 0,
            current_version: 1,
            oldest_compatible: 1,
            applied: vec![AppliedMigration {
                version: 1,
                name: "initial",
            }],
        };
        assert_eq!(
            outcome.to_string(),
            "applied 1 migration(s) (v001_initial); XDB schema upgraded from version 0 to 1; \
             services of schema version 1 and newer run on it"
        );
        let breaking = InstallOutcome {
            previous_version: 5,
            current_version: 8,
            oldest_compatible: 7,
            ..outcome.clone()
        };
        assert!(
            breaking
                .to_string()
                .ends_with("run on it (not those of version 5: replace them now)"),
            "{breaking}"
        );
        outcome.previous_version = 1;
        outcome.applied.clear();
        assert!(outcome.is_noop());
        assert!(outcome.to_string().contains("nothing to apply"));
    }
}
