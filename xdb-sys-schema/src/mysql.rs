//! The MySQL / MariaDB installer.
//!
//! MySQL commits every DDL statement implicitly, so a migration cannot be rolled back as
//! a whole. The guarantees are kept another way:
//! - every statement of a migration is re-runnable (`CREATE TABLE IF NOT EXISTS`, indexes
//!   inside the table definition), so a run that died half-way is completed by the next;
//! - after the statements, the installer checks that every table of the migration has
//!   every column it declares (a table of the same name that was already there, with
//!   other columns, would otherwise be skipped silently by `IF NOT EXISTS`);
//! - the version row is written last, so it never claims a migration that did not finish;
//! - a named lock (`GET_LOCK`, one per database) serializes concurrent installers.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::Conn;
use xdb_config::DatabaseUrl;
use xdb_db_connect::MySqlTarget;

use crate::status::THIS_RELEASE;
use crate::{
    migrations, AppliedMigration, Dialect, DriverError, InstallOutcome, Migration, SchemaError,
    SchemaStatus, VersionRow, COMPATIBILITY_RECORDED_FROM, LATEST_VERSION,
};

/// "Duplicate key name": the index a `CREATE INDEX` creates exists already.
const ER_DUP_KEYNAME: u16 = 1061;
/// "Duplicate column name": the column an `ALTER TABLE ... ADD COLUMN` adds exists already.
const ER_DUP_FIELDNAME: u16 = 1060;

/// Prefix of the `GET_LOCK` name every installer of a database holds while it runs; the
/// rest is `MD5(DATABASE())`, as lock names are server-wide and at most 64 characters.
pub const MYSQL_INSTALL_LOCK_PREFIX: &str = "xdb_sys_install_";

/// How long an installer waits for another one to finish before giving up.
const LOCK_WAIT_SECONDS: u32 = 600;

/// Placeholder in the migrations for the server's no-pad binary collation.
const COLLATION_PLACEHOLDER: &str = "XDB_BINARY_COLLATION";

const CREATE_VERSION_TABLE: &str = "
CREATE TABLE IF NOT EXISTS xdb_sys_schema_version (
    id         SMALLINT    NOT NULL PRIMARY KEY CHECK (id = 1),
    version    INT         NOT NULL,
    updated_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
) ENGINE = InnoDB";

const UPSERT_VERSION: &str = "
INSERT INTO xdb_sys_schema_version (id, version, updated_at) VALUES (1, ?, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE version = VALUES(version), updated_at = VALUES(updated_at)";

/// [`UPSERT_VERSION`] once v006 added the columns saying which services run on the schema.
const UPSERT_VERSION_AND_COMPATIBILITY: &str = "
INSERT INTO xdb_sys_schema_version (id, version, oldest_compatible_version, installed_by, updated_at)
VALUES (1, ?, ?, ?, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE version = VALUES(version),
    oldest_compatible_version = VALUES(oldest_compatible_version),
    installed_by = VALUES(installed_by), updated_at = VALUES(updated_at)";

/// Opens one connection to `url` (TLS as it says), in UTC and strict SQL mode, failing
/// after `timeout` when the server does not answer.
pub(crate) async fn connect(url: &DatabaseUrl, timeout: Duration) -> Result<Conn, SchemaError> {
    url.require_database()?;
    let target = MySqlTarget::new(url).map_err(|e| SchemaError::InvalidUrl(e.to_string()))?;
    let connect = target.connect(|opts| {
        opts.setup(vec![
            "SET time_zone = '+00:00'",
            "SET SESSION sql_mode = 'STRICT_TRANS_TABLES,STRICT_ALL_TABLES,NO_ZERO_IN_DATE,\
             NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'",
        ])
    });
    match tokio::time::timeout(timeout, connect).await {
        Ok(Ok(conn)) => Ok(conn),
        Ok(Err(error)) => Err(SchemaError::Connect(Box::new(error))),
        Err(_) => Err(SchemaError::Connect(
            format!("no answer within {timeout:?}").into(),
        )),
    }
}

/// [`install_mysql`], then closes the connection (which also drops the named lock).
pub(crate) async fn install_and_disconnect(mut conn: Conn) -> Result<InstallOutcome, SchemaError> {
    let outcome = install_mysql(&mut conn).await;
    let _ = conn.disconnect().await;
    outcome
}

/// Installs or upgrades the XDB system tables through `conn`.
///
/// - Idempotent: when the schema is already at [`LATEST_VERSION`] nothing is written.
/// - Concurrent installers of one database serialize on a named lock
///   ([`MYSQL_INSTALL_LOCK_PREFIX`]), taken before the version is read.
/// - Crash-safe without transactional DDL: see the module documentation. A failed
///   migration returns [`SchemaError::Migration`] and leaves the version unchanged.
/// - A database whose recorded version is newer than this binary's latest is refused
///   with [`SchemaError::DatabaseNewer`] and left untouched.
pub async fn install_mysql(conn: &mut Conn) -> Result<InstallOutcome, SchemaError> {
    let acquired: Option<i64> = conn
        .exec_first(
            "SELECT GET_LOCK(CONCAT(?, MD5(DATABASE())), ?)",
            (MYSQL_INSTALL_LOCK_PREFIX, LOCK_WAIT_SECONDS),
        )
        .await?
        .flatten();
    if acquired != Some(1) {
        return Err(SchemaError::Database(
            format!("another XDB schema installer held the install lock for {LOCK_WAIT_SECONDS}s")
                .into(),
        ));
    }
    let outcome = install_locked(conn).await;
    let released = conn
        .exec_drop(
            "DO RELEASE_LOCK(CONCAT(?, MD5(DATABASE())))",
            (MYSQL_INSTALL_LOCK_PREFIX,),
        )
        .await;
    let outcome = outcome?;
    released?;
    Ok(outcome)
}

async fn install_locked(conn: &mut Conn) -> Result<InstallOutcome, SchemaError> {
    let migrations = migrations(Dialect::MySql)?;
    let collation = binary_collation(conn).await?;
    let mut previous_version = None;
    let mut applied = Vec::new();
    loop {
        let recorded = read_version(conn).await?;
        let installed = recorded.as_ref().map_or(0, |row| row.version);
        let previous_version = *previous_version.get_or_insert(installed);
        if installed > LATEST_VERSION {
            return Err(SchemaError::DatabaseNewer {
                installed,
                latest: LATEST_VERSION,
            });
        }
        let Some(next) = migrations.iter().find(|m| m.version > installed) else {
            if applied.is_empty() {
                tracing::info!(version = installed, "XDB schema already up to date");
            }
            return InstallOutcome::new(Dialect::MySql, previous_version, installed, applied);
        };
        tracing::info!(
            version = next.version,
            name = next.name,
            "applying XDB schema migration"
        );
        let failed = |source: DriverError| SchemaError::Migration {
            version: next.version,
            name: next.name,
            source,
        };
        for statement in statements(next.sql) {
            let statement = statement.replace(COLLATION_PLACEHOLDER, &collation);
            match conn.query_drop(&statement).await {
                Ok(()) => {}
                // MySQL has no `CREATE INDEX IF NOT EXISTS`: an index already there is
                // one an interrupted run created.
                Err(mysql_async::Error::Server(e))
                    if e.code == ER_DUP_KEYNAME && statement.starts_with("CREATE INDEX ") => {}
                // Nor `ADD COLUMN IF NOT EXISTS` (MariaDB has it, MySQL 8 does not).
                Err(mysql_async::Error::Server(e))
                    if e.code == ER_DUP_FIELDNAME && statement.starts_with("ALTER TABLE ") => {}
                Err(e) => return Err(failed(Box::new(e))),
            }
        }
        check_columns(conn, next).await.map_err(failed)?;
        if recorded.is_none() {
            conn.query_drop(CREATE_VERSION_TABLE).await?;
        }
        if next.version >= COMPATIBILITY_RECORDED_FROM {
            conn.exec_drop(
                UPSERT_VERSION_AND_COMPATIBILITY,
                (next.version, next.oldest_compatible, THIS_RELEASE),
            )
            .await?;
        } else {
            conn.exec_drop(UPSERT_VERSION, (next.version,)).await?;
        }
        applied.push(AppliedMigration {
            version: next.version,
            name: next.name,
        });
    }
}

/// Reads the installed schema version through `conn`, changing nothing.
pub async fn check_mysql(conn: &mut Conn) -> Result<SchemaStatus, SchemaError> {
    let row = read_version(conn).await?;
    Ok(VersionRow::into_status(row, Dialect::MySql))
}

/// The version row; `None` when the version table does not exist (nothing installed),
/// version 0 when it exists without a row.
async fn read_version(conn: &mut Conn) -> Result<Option<VersionRow>, SchemaError> {
    let exists: Option<i64> = conn
        .query_first(
            "SELECT COUNT(*) FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'xdb_sys_schema_version'",
        )
        .await?;
    if exists.unwrap_or(0) == 0 {
        return Ok(None);
    }
    // `*`: the columns v006 added are read when they exist, in the same snapshot.
    let row: Option<mysql_async::Row> = conn
        .query_first("SELECT * FROM xdb_sys_schema_version WHERE id = 1")
        .await?;
    Ok(Some(row.map_or_else(VersionRow::default, |mut row| {
        VersionRow {
            version: row.take("version").unwrap_or(0),
            oldest_compatible: row.take("oldest_compatible_version").flatten(),
            installed_by: row.take("installed_by").flatten(),
        }
    })))
}

/// MariaDB's or MySQL's binary collation without trailing-space padding, so that ids
/// compare exactly as in PostgreSQL; plain `utf8mb4_bin` on servers that have neither.
async fn binary_collation(conn: &mut Conn) -> Result<String, SchemaError> {
    let available: Vec<String> = conn
        .query(
            "SELECT COLLATION_NAME FROM information_schema.COLLATIONS \
             WHERE COLLATION_NAME IN ('utf8mb4_nopad_bin', 'utf8mb4_0900_bin')",
        )
        .await?;
    Ok(["utf8mb4_nopad_bin", "utf8mb4_0900_bin"]
        .into_iter()
        .find(|name| available.iter().any(|a| a == name))
        .unwrap_or("utf8mb4_bin")
        .to_owned())
}

/// The statements of a migration file: comment lines dropped, split at `;`.
pub(crate) fn statements(sql: &str) -> Vec<String> {
    let text: String = sql
        .lines()
        .filter(|line| !line.trim_start().starts_with("--"))
        .map(|line| format!("{line}\n"))
        .collect();
    text.split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Table → columns declared by the migration's `CREATE TABLE IF NOT EXISTS` statements.
pub(crate) fn declared_columns(sql: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut tables = BTreeMap::new();
    for statement in statements(sql) {
        let Some(rest) = statement.strip_prefix("CREATE TABLE IF NOT EXISTS ") else {
            continue;
        };
        let Some(name) = rest.split_whitespace().next() else {
            continue;
        };
        let columns = rest
            .lines()
            .skip(1)
            .filter_map(|line| line.split_whitespace().next())
            // A quoted word is a column even when it spells a keyword (`key`).
            .filter(|word| {
                word.starts_with('`')
                    || !(matches!(
                        word.to_ascii_uppercase().as_str(),
                        "PRIMARY" | "UNIQUE" | "KEY" | "INDEX" | "CONSTRAINT" | "CHECK"
                    ) || word.starts_with(')'))
            })
            .map(|word| word.trim_matches('`').to_owned())
            .collect();
        tables.insert(name.to_owned(), columns);
    }
    tables
}

/// Fails when a table of `migration` lacks a column it declares (a table of that name
/// existed before and `IF NOT EXISTS` kept it).
async fn check_columns(conn: &mut Conn, migration: &Migration) -> Result<(), DriverError> {
    for (table, expected) in declared_columns(migration.sql) {
        let found: Vec<String> = conn
            .exec(
                "SELECT COLUMN_NAME FROM information_schema.COLUMNS \
                 WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
                (table.as_str(),),
            )
            .await?;
        let found: BTreeSet<String> = found.into_iter().map(|c| c.to_ascii_lowercase()).collect();
        let missing: Vec<&str> = expected
            .iter()
            .filter(|c| !found.contains(&c.to_ascii_lowercase()))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "table {table} already exists without the column(s) {}; \
                 rename or drop it and run the installer again",
                missing.join(", ")
            )
            .into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_skip_comments_and_split_at_semicolons() {
        let sql = "-- a; comment\nCREATE TABLE IF NOT EXISTS a (\n  x INT\n);\n\n-- b\nSELECT 1;\n";
        assert_eq!(
            statements(sql),
            vec!["CREATE TABLE IF NOT EXISTS a (\n  x INT\n)", "SELECT 1"]
        );
    }

    #[test]
    fn declared_columns_of_the_initial_migration() {
        let tables = declared_columns(migrations(Dialect::MySql).unwrap()[0].sql);
        assert_eq!(tables.len(), 7, "{tables:?}");
        let attributes = &tables["xdb_sys_local_attributes"];
        assert_eq!(
            attributes,
            &BTreeSet::from(["process_execution_id", "key", "value"].map(String::from))
        );
        assert!(tables["xdb_sys_tasks"].contains("lease_expires_at"));
        assert!(!tables["xdb_sys_tasks"].contains("KEY"));
    }

    /// `ALTER TABLE t DROP INDEX i, ADD INDEX i (...)`: one statement that leaves the
    /// index there, whether it ran before or not.
    fn rebuilds_an_index_in_place(statement: &str) -> bool {
        let words: Vec<&str> = statement.split_whitespace().collect();
        matches!(
            words.as_slice(),
            ["ALTER", "TABLE", _, "DROP", "INDEX", dropped, "ADD", "INDEX", added, ..]
                if dropped.strip_suffix(',') == Some(added)
        )
    }

    #[test]
    fn every_statement_is_rerunnable() {
        // DDL commits implicitly in MySQL: a statement that fails when re-run would make
        // a crashed install impossible to finish.
        for migration in migrations(Dialect::MySql).unwrap() {
            for statement in statements(migration.sql) {
                assert!(
                    statement.starts_with("CREATE TABLE IF NOT EXISTS ")
                        || statement.starts_with("CREATE INDEX ")
                        || statement.starts_with("INSERT IGNORE INTO ")
                        || (statement.starts_with("ALTER TABLE ")
                            && statement.contains(" ADD COLUMN ")
                            && !statement.contains(','))
                        || rebuilds_an_index_in_place(&statement),
                    "{statement}"
                );
            }
        }
    }
}
