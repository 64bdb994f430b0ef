//! The installer against the real MariaDB/MySQL server; each test has its own database.

use std::collections::BTreeSet;
use std::time::Duration;

use mysql_async::prelude::Queryable;
use xdb_sys_schema::{
    check, install, migrations, Dialect, SchemaError, SchemaState, LATEST_VERSION,
    MYSQL_INSTALL_LOCK_PREFIX, VERSION_TABLE,
};
use xdb_test_util::{wait_until, TestDatabase};

/// The statements of the v001 migration, as the installer runs them.
fn v001_statements() -> Vec<String> {
    statements_of(migrations(Dialect::MySql).unwrap()[0].sql)
}

/// A migration's statements, as the installer runs them.
fn statements_of(sql: &str) -> Vec<String> {
    let text: String = sql
        .lines()
        .filter(|line| !line.trim_start().starts_with("--"))
        .map(|line| format!("{line}\n"))
        .collect();
    text.split(';')
        .map(|s| s.trim().replace("XDB_BINARY_COLLATION", "utf8mb4_bin"))
        .filter(|s| !s.is_empty())
        .collect()
}

/// Every table the embedded SQL creates, plus the installer's version table.
fn expected_tables() -> BTreeSet<String> {
    let mut tables = BTreeSet::from([VERSION_TABLE.to_owned()]);
    for migration in migrations(Dialect::MySql).unwrap() {
        for statement in statements_of(migration.sql) {
            if let Some(rest) = statement.strip_prefix("CREATE TABLE IF NOT EXISTS ") {
                tables.insert(rest.split_whitespace().next().unwrap().to_owned());
            }
        }
    }
    tables
}

async fn xdb_tables(database: &TestDatabase) -> BTreeSet<String> {
    let mut conn = database.mysql_conn().await;
    let tables: Vec<String> = conn
        .query(
            "SELECT TABLE_NAME FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'xdb\\_sys\\_%'",
        )
        .await
        .unwrap();
    tables.into_iter().collect()
}

/// (version, updated_at as text) of every row of the version table.
async fn version_rows(database: &TestDatabase) -> Vec<(i32, String)> {
    let mut conn = database.mysql_conn().await;
    conn.query("SELECT version, CAST(updated_at AS CHAR) FROM xdb_sys_schema_version ORDER BY id")
        .await
        .unwrap()
}

#[tokio::test]
async fn fresh_install_creates_every_table() {
    let database = TestDatabase::create_mysql_without_schema().await;
    assert_eq!(
        check(database.url()).await.unwrap().state(),
        SchemaState::NotInstalled
    );

    let outcome = install(database.url()).await.unwrap();
    assert_eq!(outcome.dialect, Dialect::MySql);
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
    assert_eq!(status.dialect, Dialect::MySql);
    assert_eq!(status.state(), SchemaState::Current);
    status.ensure_current().unwrap();

    // Ids compare byte for byte, without trailing-space padding, as in PostgreSQL.
    let mut conn = database.mysql_conn().await;
    conn.query_drop(
        "INSERT INTO xdb_sys_latest_process_executions VALUES \
         ('p', '00000000-0000-0000-0000-000000000001'), \
         ('P', '00000000-0000-0000-0000-000000000002'), \
         ('p ', '00000000-0000-0000-0000-000000000003')",
    )
    .await
    .unwrap();
    let engines: Vec<String> = conn
        .query(
            "SELECT DISTINCT ENGINE FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'xdb\\_sys\\_%'",
        )
        .await
        .unwrap();
    assert_eq!(engines, vec!["InnoDB".to_owned()]);
}

#[tokio::test]
async fn second_install_is_a_no_op() {
    let database = TestDatabase::create_mysql_without_schema().await;
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
    let database = TestDatabase::create_mysql_without_schema().await;
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
    assert_eq!(
        check(database.url()).await.unwrap().state(),
        SchemaState::NewerIncompatible
    );
}

#[tokio::test]
async fn concurrent_installs_both_succeed_and_apply_once() {
    let database = TestDatabase::create_mysql_without_schema().await;

    // Hold the installer lock so both installers are provably waiting at the same time,
    // then let them race.
    let mut holder = database.mysql_conn().await;
    let held: Option<i64> = holder
        .exec_first(
            "SELECT GET_LOCK(CONCAT(?, MD5(DATABASE())), 10)",
            (MYSQL_INSTALL_LOCK_PREFIX,),
        )
        .await
        .unwrap();
    assert_eq!(held, Some(1));

    let first = tokio::spawn(install_owned(database.url().to_owned()));
    let second = tokio::spawn(install_owned(database.url().to_owned()));
    let observer = std::sync::Arc::new(tokio::sync::Mutex::new(database.mysql_conn().await));
    let name = database.name().to_owned();
    let waiting = || {
        let (observer, name) = (observer.clone(), name.clone());
        async move {
            let count: Option<i64> = observer
                .lock()
                .await
                .exec_first(
                    "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
                     WHERE DB = ? AND INFO LIKE 'SELECT GET_LOCK%'",
                    (name,),
                )
                .await
                .unwrap();
            count == Some(2)
        }
    };
    wait_until(Duration::from_secs(10), Duration::from_millis(20), waiting)
        .await
        .expect("both installers should be waiting on the install lock");
    holder.query_drop("DO RELEASE_ALL_LOCKS()").await.unwrap();

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
    assert!(first.is_noop() || second.is_noop(), "{first:?} {second:?}");
    assert_eq!(first.current_version, LATEST_VERSION);
    assert_eq!(second.current_version, LATEST_VERSION);
    assert_eq!(xdb_tables(&database).await, expected_tables());
    assert_eq!(version_rows(&database).await.len(), 1);
}

async fn install_owned(url: String) -> Result<xdb_sys_schema::InstallOutcome, SchemaError> {
    install(&url).await
}

#[tokio::test]
async fn an_install_that_died_half_way_is_completed_by_the_next_run() {
    let database = TestDatabase::create_mysql_without_schema().await;
    // DDL commits one statement at a time: a crash leaves some tables and no version.
    let statements = v001_statements();
    for statement in &statements[..3] {
        database.execute_sql(statement).await;
    }
    assert_eq!(
        check(database.url()).await.unwrap().state(),
        SchemaState::NotInstalled
    );
    let outcome = install(database.url()).await.unwrap();
    assert_eq!(outcome.applied.len(), LATEST_VERSION as usize);
    assert_eq!(xdb_tables(&database).await, expected_tables());
    assert_eq!(
        check(database.url()).await.unwrap().state(),
        SchemaState::Current
    );
}

#[tokio::test]
async fn a_foreign_table_in_the_way_fails_the_migration_without_recording_it() {
    let database = TestDatabase::create_mysql_without_schema().await;
    database
        .execute_sql("CREATE TABLE xdb_sys_local_attributes (x INT)")
        .await;
    let error = install(database.url()).await.unwrap_err();
    assert!(
        matches!(error, SchemaError::Migration { version: 1, .. }),
        "{error:?}"
    );
    let cause = std::error::Error::source(&error).unwrap().to_string();
    assert!(
        cause.contains("xdb_sys_local_attributes") && cause.contains("process_execution_id"),
        "{cause}"
    );
    assert_eq!(
        check(database.url()).await.unwrap().state(),
        SchemaState::NotInstalled
    );

    // Once the table is out of the way, a re-run finishes the job.
    database
        .execute_sql("DROP TABLE xdb_sys_local_attributes")
        .await;
    install(database.url()).await.unwrap();
    assert_eq!(xdb_tables(&database).await, expected_tables());
}

#[tokio::test]
async fn mariadb_scheme_is_accepted() {
    let database = TestDatabase::create_mysql_without_schema().await;
    let url = database.url().replacen("mysql://", "mariadb://", 1);
    assert_eq!(install(&url).await.unwrap().current_version, LATEST_VERSION);
    assert_eq!(check(&url).await.unwrap().state(), SchemaState::Current);
}

#[tokio::test]
async fn a_url_without_a_database_is_refused() {
    let error = check("mysql://root@127.0.0.1:3306").await.unwrap_err();
    assert!(matches!(error, SchemaError::InvalidUrl(_)), "{error:?}");
}

#[tokio::test]
async fn unreachable_database_is_a_connect_error() {
    let port = xdb_test_util::free_local_port();
    let error = check(&format!("mysql://root:hunter2@127.0.0.1:{port}/db"))
        .await
        .unwrap_err();
    assert!(matches!(error, SchemaError::Connect(_)), "{error:?}");
    assert!(!format!("{error:?}").contains("hunter2"), "{error:?}");
}
