//! The PostgreSQL installer.

use tokio_postgres::{Client, GenericClient};

use crate::{
    migrations, AppliedMigration, Dialect, InstallOutcome, SchemaError, SchemaStatus,
    LATEST_VERSION,
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
        let installed = recorded.unwrap_or(0);
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
            return Ok(InstallOutcome {
                dialect: Dialect::Postgres,
                previous_version,
                current_version: installed,
                applied,
            });
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
        tx.execute(UPSERT_VERSION, &[&next.version]).await?;
        tx.commit().await?;
        applied.push(AppliedMigration {
            version: next.version,
            name: next.name,
        });
    }
}

/// Reads the installed schema version through `client`, changing nothing.
pub async fn check_postgres(client: &Client) -> Result<SchemaStatus, SchemaError> {
    let installed = read_version(client).await?.unwrap_or(0);
    Ok(SchemaStatus {
        dialect: Dialect::Postgres,
        installed,
        latest: LATEST_VERSION,
    })
}

/// The recorded version; `None` when the version table does not exist (nothing
/// installed), `Some(0)` when it exists without a row.
async fn read_version(client: &impl GenericClient) -> Result<Option<i32>, SchemaError> {
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
    let row = client
        .query_opt(
            "SELECT version FROM xdb_sys_schema_version WHERE id = 1",
            &[],
        )
        .await?;
    Ok(Some(row.map_or(0, |row| row.get(0))))
}
