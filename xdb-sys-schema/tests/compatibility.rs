//! What the installer records about compatibility, and what services decide from it, on
//! the real PostgreSQL and MariaDB servers; each test has its own database.

use xdb_sys_schema::{
    check, install, migrations, Dialect, SchemaError, SchemaState, COMPATIBILITY_RECORDED_FROM,
    LATEST_VERSION,
};
use xdb_test_util::TestDatabase;

const DIALECTS: [Dialect; 2] = [Dialect::Postgres, Dialect::MySql];

async fn installed(dialect: Dialect) -> TestDatabase {
    let database = match dialect {
        Dialect::Postgres => TestDatabase::create_postgres_without_schema().await,
        Dialect::MySql => TestDatabase::create_mysql_without_schema().await,
    };
    install(database.url()).await.unwrap();
    database
}

fn latest_oldest_compatible(dialect: Dialect) -> i32 {
    migrations(dialect)
        .unwrap()
        .last()
        .unwrap()
        .oldest_compatible
}

/// Turns the database back into what the previous release's installer left: schema
/// version 5, whose version table has no compatibility columns (and no later table).
async fn as_written_by_version_5(database: &TestDatabase) {
    database
        .execute_sql(
            "ALTER TABLE xdb_sys_schema_version DROP COLUMN oldest_compatible_version; \
             ALTER TABLE xdb_sys_schema_version DROP COLUMN installed_by; \
             ALTER TABLE xdb_sys_service_instances DROP COLUMN liveness_timeout_ms; \
             DROP TABLE xdb_sys_cluster_secrets; \
             DROP TABLE xdb_sys_process_definitions; \
             DROP TABLE xdb_sys_request_receipts; \
             DROP TABLE xdb_sys_batches; \
             DROP TABLE xdb_sys_schedules; \
             DROP TABLE xdb_sys_schedule_firings; \
             DROP TABLE xdb_sys_flow_limits; \
             DROP TABLE xdb_sys_flow_limit_changes; \
             DROP TABLE xdb_sys_call_slots; \
             DROP TABLE xdb_sys_schedule_changes; \
             DROP TABLE xdb_sys_run_slot_keys; \
             DROP TABLE xdb_sys_run_slots; \
             ALTER TABLE xdb_sys_process_executions DROP COLUMN priority; \
             ALTER TABLE xdb_sys_tasks DROP COLUMN priority; \
             UPDATE xdb_sys_schema_version SET version = 5",
        )
        .await;
}

#[tokio::test]
async fn install_records_the_oldest_compatible_version_and_the_release() {
    for dialect in DIALECTS {
        let database = installed(dialect).await;
        let status = check(database.url()).await.unwrap();
        assert_eq!(status.installed, LATEST_VERSION, "{dialect}");
        assert_eq!(
            status.oldest_compatible,
            Some(latest_oldest_compatible(dialect)),
            "{dialect}"
        );
        let release = format!("XDB {}", env!("CARGO_PKG_VERSION"));
        assert_eq!(status.installed_by.as_deref(), Some(release.as_str()));
        assert_eq!(status.state(), SchemaState::Current, "{dialect}");
        status.ensure_current().unwrap();
    }
}

#[tokio::test]
async fn upgrading_a_schema_of_the_previous_release_records_compatibility() {
    for dialect in DIALECTS {
        let database = installed(dialect).await;
        as_written_by_version_5(&database).await;
        let before = check(database.url()).await.unwrap();
        assert_eq!(
            (before.installed, before.oldest_compatible, before.state()),
            (5, None, SchemaState::Outdated),
            "{dialect}"
        );
        assert!(
            matches!(
                before.ensure_current(),
                Err(SchemaError::DatabaseOutdated { installed: 5, .. })
            ),
            "{dialect}"
        );

        let outcome = install(database.url()).await.unwrap();
        let applied: Vec<i32> = outcome.applied.iter().map(|m| m.version).collect();
        assert_eq!(
            applied,
            (COMPATIBILITY_RECORDED_FROM..=LATEST_VERSION).collect::<Vec<_>>()
        );
        assert_eq!(outcome.oldest_compatible, latest_oldest_compatible(dialect));
        // The outcome says whether services of schema 5 may keep running.
        assert_eq!(
            outcome.to_string().contains("not those of version 5"),
            outcome.oldest_compatible > 5,
            "{outcome}"
        );
        let after = check(database.url()).await.unwrap();
        assert_eq!(after.state(), SchemaState::Current, "{dialect}");
        assert_eq!(after.oldest_compatible, Some(outcome.oldest_compatible));
    }
}

#[tokio::test]
async fn mysql_completes_a_compatibility_migration_that_died_after_its_first_column() {
    let database = installed(Dialect::MySql).await;
    as_written_by_version_5(&database).await;
    // The first ALTER of v006 committed (DDL does), then the installer died.
    database
        .execute_sql(
            "ALTER TABLE xdb_sys_schema_version ADD COLUMN oldest_compatible_version INT NULL",
        )
        .await;
    assert_eq!(check(database.url()).await.unwrap().installed, 5);

    let outcome = install(database.url()).await.unwrap();
    assert_eq!(outcome.current_version, LATEST_VERSION, "{outcome}");
    let status = check(database.url()).await.unwrap();
    assert_eq!(status.state(), SchemaState::Current);
    assert!(status.installed_by.is_some(), "{status:?}");
}

#[tokio::test]
async fn services_run_on_a_newer_schema_that_declares_them_compatible() {
    for dialect in DIALECTS {
        let database = installed(dialect).await;
        let newer = LATEST_VERSION + 1;
        database
            .execute_sql(&format!(
                "UPDATE xdb_sys_schema_version SET version = {newer}, \
                 oldest_compatible_version = {LATEST_VERSION}, installed_by = 'XDB 9.1.0'"
            ))
            .await;
        let status = check(database.url()).await.unwrap();
        assert_eq!(status.state(), SchemaState::NewerCompatible, "{dialect}");
        status.ensure_current().unwrap();
        assert!(status.to_string().contains("run on it"), "{status}");
        // This release's installer still never touches a schema it does not know.
        assert!(
            matches!(
                install(database.url()).await,
                Err(SchemaError::DatabaseNewer { installed, .. }) if installed == newer
            ),
            "{dialect}"
        );
        assert_eq!(check(database.url()).await.unwrap(), status);
    }
}

#[tokio::test]
async fn services_refuse_a_newer_schema_that_needs_newer_services() {
    for dialect in DIALECTS {
        let database = installed(dialect).await;
        let newer = LATEST_VERSION + 2;
        let needs = LATEST_VERSION + 1;
        database
            .execute_sql(&format!(
                "UPDATE xdb_sys_schema_version SET version = {newer}, \
                 oldest_compatible_version = {needs}, installed_by = 'XDB 9.2.0'"
            ))
            .await;
        let status = check(database.url()).await.unwrap();
        assert_eq!(status.state(), SchemaState::NewerIncompatible, "{dialect}");
        let error = status.ensure_current().unwrap_err();
        let message = error.to_string();
        assert!(
            message.contains(&format!(
                "needs services of schema version {needs} or newer"
            )),
            "{message}"
        );
        assert!(
            message.contains(&format!(
                "this release's services are for version {LATEST_VERSION}"
            )),
            "{message}"
        );
        assert!(
            message.ends_with("run XDB 9.2.0 (which installed it) or newer"),
            "{message}"
        );
    }
}
