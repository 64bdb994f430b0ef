//! The installer against the real PostgreSQL server; each test has its own database.

use std::collections::BTreeSet;
use std::time::Duration;

use xdb_sys_schema::{
    check, install, migrations, Dialect, SchemaError, SchemaState, LATEST_VERSION,
    POSTGRES_INSTALL_LOCK_KEY, VERSION_TABLE,
};
use xdb_test_util::{wait_until, TestDatabase};

/// Every table the embedded SQL creates, plus the installer's version table.
fn expected_tables() -> BTreeSet<String> {
    let mut tables = BTreeSet::from([VERSION_TABLE.to_owned()]);
    for migration in migrations(Dialect::Postgres).unwrap() {
        for line in migration.sql.lines() {
            if let Some(rest) = line.trim().strip_prefix("CREATE TABLE ") {
                let name = rest.split_whitespace().next().unwrap();
                tables.insert(name.to_owned());
            }
        }
    }
    tables
}

async fn xdb_tables(database: &TestDatabase) -> BTreeSet<String> {
    database
        .client()
        .await
        .query(
            "SELECT tablename FROM pg_tables \
             WHERE schemaname = current_schema() AND tablename LIKE 'xdb\\_sys\\_%'",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect()
}

/// (version, updated_at as text) of every row of the version table.
async fn version_rows(database: &TestDatabase) -> Vec<(i32, String)> {
    database
        .client()
        .await
        .query(
            "SELECT version, updated_at::text FROM xdb_sys_schema_version ORDER BY id",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect()
}

#[tokio::test]
async fn fresh_install_creates_every_table() {
    let database = TestDatabase::create_postgres_without_schema().await;
    assert_eq!(
        check(database.url()).await.unwrap().state(),
        SchemaState::NotInstalled
    );

    let outcome = install(database.url()).await.unwrap();
    assert_eq!(outcome.previous_version, 0);
    assert_eq!(outcome.current_version, LATEST_VERSION);
    let applied: Vec<i32> = outcome.applied.iter().map(|m| m.version).collect();
    assert_eq!(applied, (1..=LATEST_VERSION).collect::<Vec<_>>());

    let expected = expected_tables();
    assert!(expected.len() >= 8, "parsed too few tables: {expected:?}");
    assert_eq!(xdb_tables(&database).await, expected);
    let rows = version_rows(&database).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].0, LATEST_VERSION);

    let status = check(database.url()).await.unwrap();
    assert_eq!(status.state(), SchemaState::Current);
    assert_eq!(status.installed, LATEST_VERSION);
    status.ensure_current().unwrap();
}

#[tokio::test]
async fn second_install_is_a_no_op() {
    let database = TestDatabase::create_postgres_without_schema().await;
    install(database.url()).await.unwrap();
    let tables = xdb_tables(&database).await;
    let rows = version_rows(&database).await;

    let outcome = install(database.url()).await.unwrap();
    assert!(outcome.is_noop(), "{outcome:?}");
    assert_eq!(outcome.previous_version, LATEST_VERSION);
    assert_eq!(outcome.current_version, LATEST_VERSION);
    assert!(
        outcome.to_string().contains("nothing to apply"),
        "{outcome}"
    );
    assert_eq!(xdb_tables(&database).await, tables);
    // Not even the timestamp moves.
    assert_eq!(version_rows(&database).await, rows);
}

#[tokio::test]
async fn newer_database_is_refused_and_left_unchanged() {
    let database = TestDatabase::create_postgres_without_schema().await;
    install(database.url()).await.unwrap();
    let newer = LATEST_VERSION + 1;
    database
        .execute_sql(&format!(
            "UPDATE xdb_sys_schema_version \
             SET version = {newer}, oldest_compatible_version = {newer}; \
             DROP TABLE xdb_sys_history_events"
        ))
        .await;
    let tables = xdb_tables(&database).await;
    let rows = version_rows(&database).await;

    let error = install(database.url()).await.unwrap_err();
    assert!(
        matches!(error, SchemaError::DatabaseNewer { installed, latest }
            if installed == newer && latest == LATEST_VERSION),
        "{error:?}"
    );
    assert!(error.to_string().contains("refusing"), "{error}");
    // The dropped table was not recreated and the version row was not touched.
    assert_eq!(xdb_tables(&database).await, tables);
    assert_eq!(version_rows(&database).await, rows);

    let status = check(database.url()).await.unwrap();
    assert_eq!(status.state(), SchemaState::NewerIncompatible);
    assert!(matches!(
        status.ensure_current(),
        Err(SchemaError::ReleaseTooOld { .. })
    ));
}

#[tokio::test]
async fn concurrent_installs_both_succeed_and_apply_once() {
    let database = TestDatabase::create_postgres_without_schema().await;

    // Hold the installer lock so both installers are provably waiting at the same time,
    // then let them race.
    let mut holder = database.client().await;
    let lock = holder.transaction().await.unwrap();
    lock.execute(
        "SELECT pg_advisory_xact_lock($1)",
        &[&POSTGRES_INSTALL_LOCK_KEY],
    )
    .await
    .unwrap();

    let first = tokio::spawn(install_owned(database.url().to_owned()));
    let second = tokio::spawn(install_owned(database.url().to_owned()));
    let observer = database.client().await;
    wait_until(
        Duration::from_secs(10),
        Duration::from_millis(20),
        || async {
            let waiting: i64 = observer
                .query_one(
                    "SELECT count(*) FROM pg_locks \
                 WHERE locktype = 'advisory' AND NOT granted AND database = \
                 (SELECT oid FROM pg_database WHERE datname = current_database())",
                    &[],
                )
                .await
                .unwrap()
                .get(0);
            waiting == 2
        },
    )
    .await
    .expect("both installers should be waiting on the advisory lock");
    lock.commit().await.unwrap();

    let first = first.await.unwrap().unwrap();
    let second = second.await.unwrap().unwrap();
    let mut applied: Vec<i32> = first
        .applied
        .iter()
        .chain(&second.applied)
        .map(|m| m.version)
        .collect();
    applied.sort();
    assert_eq!(applied, (1..=LATEST_VERSION).collect::<Vec<_>>());
    // Each migration takes the lock on its own, so the two may share the work; what
    // matters is that every migration was applied exactly once.
    assert_eq!(first.current_version, LATEST_VERSION);
    assert_eq!(second.current_version, LATEST_VERSION);
    assert_eq!(xdb_tables(&database).await, expected_tables());
    assert_eq!(version_rows(&database).await.len(), 1);
}

async fn install_owned(url: String) -> Result<xdb_sys_schema::InstallOutcome, SchemaError> {
    install(&url).await
}

#[tokio::test]
async fn failed_migration_rolls_back_completely() {
    let database = TestDatabase::create_postgres_without_schema().await;
    // A table in the way makes v001 fail half-way through.
    database
        .execute_sql("CREATE TABLE xdb_sys_local_attributes (x INT)")
        .await;
    let error = install(database.url()).await.unwrap_err();
    assert!(
        matches!(error, SchemaError::Migration { version: 1, .. }),
        "{error:?}"
    );
    // Neither the earlier tables of v001 nor the version table survived.
    assert_eq!(
        xdb_tables(&database).await,
        BTreeSet::from(["xdb_sys_local_attributes".to_owned()])
    );
    assert_eq!(
        check(database.url()).await.unwrap().state(),
        SchemaState::NotInstalled
    );
}

#[tokio::test]
async fn unreachable_database_is_a_connect_error() {
    let port = xdb_test_util::free_local_port();
    let error = check(&format!("postgres://postgres@127.0.0.1:{port}/postgres"))
        .await
        .unwrap_err();
    assert!(matches!(error, SchemaError::Connect(_)), "{error:?}");
}
