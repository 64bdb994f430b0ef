//! The PostgreSQL installer.

use tokio_postgres::{Client, GenericClient};

use crate::status::THIS_RELEASE;
use crate::{
    migrations, AppliedMigration, Dialect, InstallOutcome, SchemaError, SchemaStatus, VersionRow,
    COMPATIBILITY_RECORDED_FROM, LATEST_VERSION,
};

/// Key of the transaction-scoped advisory lock (`pg_advisory_xact_lock`) every installer
/// transaction takes first, so concurrent installers of one database run one after the
/// other. It spells `xdb_sys_` in ASCII.
pub const POSTGRES_INSTALL_LOCK_KEY: i64 = 0x7864_625f_7379_735f;

// The `id` column only pins the table to one row (PostgreSQL and MySQL both accept it).
const CREATE_VERSION_TABLE: &str = "
CREATE TABLE xdb_sys_schema_version (
    id         SMALLINT    PRIMARY KEY CHECK (id = 1),
    version    INT         NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
)";

const UPSERT_VERSION: &str = "
INSERT INTO xdb_sys_schema_version (id, version, updated_at) VALUES (1, $1, now())
ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version, updated_at = EXCLUDED.updated_at";

/// [`UPSERT_VERSION`] once v006 added the columns saying which services run on the schema.
const UPSERT_VERSION_AND_COMPATIBILITY: &str = "
INSERT INTO xdb_sys_schema_version (id, version, oldest_compatible_version, installed_by, updated_at)
VALUES (1, $1, $2, $3, now())
ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version,
    oldest_compatible_version = EXCLUDED.oldest_compatible_version,
    installed_by = EXCLUDED.installed_by, updated_at = EXCLUDED.updated_at";

/// Installs or upgrades the XDB system tables through `client`.
///
/// - Idempotent: when the schema is already at [`LATEST_VERSION`] nothing is written and
///   the outcome's `applied` list is empty.
/// - Each migration runs in its own transaction together with its version bump, so a
///   failure leaves the database at the previous version, never half-migrated.
/// - Every transaction first takes the advisory lock [`POSTGRES_INSTALL_LOCK_KEY`] and
///   only then reads the version, so concurrent installers serialize and each migration
///   is applied once.
/// - A database whose recorded version is newer than this binary's latest is refused
///   with [`SchemaError::DatabaseNewer`] and left untouched.
pub async fn install_postgres(client: &mut Client) -> Result<InstallOutcome, SchemaError> {
    let migrations = migrations(Dialect::Postgres)?;
    let mut previous_version = None;
    let mut applied = Vec::new();
    loop {
        // Dropping `tx` without commit (every early return below) rolls it back.
        let tx = client.transaction().await?;
        tx.execute(
            "SELECT pg_advisory_xact_lock($1)",
            &[&POSTGRES_INSTALL_LOCK_KEY],
        )
        .await?;
        let recorded = read_version(&tx).await?;
        let installed = recorded.as_ref().map_or(0, |row| row.version);
        let previous_version = *previous_version.get_or_insert(installed);
        if installed > LATEST_VERSION {
            tx.rollback().await?;
            return Err(SchemaError::DatabaseNewer {
                installed,
                latest: LATEST_VERSION,
            });
        }
        let Some(next) = migrations.iter().find(|m| m.version > installed) else {
            tx.rollback().await?;
            if applied.is_empty() {
                tracing::info!(version = installed, "XDB schema already up to date");
            }
            return InstallOutcome::new(Dialect::Postgres, previous_version, installed, applied);
        };
        tracing::info!(
            version = next.version,
            name = next.name,
            "applying XDB schema migration"
        );
        if recorded.is_none() {
            tx.batch_execute(CREATE_VERSION_TABLE).await?;
        }
        tx.batch_execute(next.sql)
            .await
            .map_err(|source| SchemaError::Migration {
                version: next.version,
                name: next.name,
                source: Box::new(source),
            })?;
        if next.version >= COMPATIBILITY_RECORDED_FROM {
            tx.execute(
                UPSERT_VERSION_AND_COMPATIBILITY,
                &[&next.version, &next.oldest_compatible, &THIS_RELEASE],
            )
            .await?;
        } else {
            tx.execute(UPSERT_VERSION, &[&next.version]).await?;
        }
        tx.commit().await?;
        applied.push(AppliedMigration {
            version: next.version,
            name: next.name,
        });
    }
}

/// Reads the installed schema version through `client`, changing nothing.
pub async fn check_postgres(client: &Client) -> Result<SchemaStatus, SchemaError> {
    let row = read_version(client).await?;
    Ok(VersionRow::into_status(row, Dialect::Postgres))
}

/// The version row; `None` when the version table does not exist (nothing installed),
/// version 0 when it exists without a row.
async fn read_version(client: &impl GenericClient) -> Result<Option<VersionRow>, SchemaError> {
    // to_regclass resolves through search_path, like the unqualified CREATE TABLE does.
    let exists: bool = client
        .query_one(
            "SELECT to_regclass('xdb_sys_schema_version') IS NOT NULL",
            &[],
        )
        .await?
        .get(0);
    if !exists {
        return Ok(None);
    }
    // `*`: the columns v006 added are read when they exist, in the same snapshot.
    let row = client
        .query_opt("SELECT * FROM xdb_sys_schema_version WHERE id = 1", &[])
        .await?;
    Ok(Some(row.map_or_else(VersionRow::default, |row| {
        VersionRow {
            version: row.get("version"),
            oldest_compatible: row.try_get("oldest_compatible_version").ok().flatten(),
            installed_by: row.try_get("installed_by").ok().flatten(),
        }
    })))
}
