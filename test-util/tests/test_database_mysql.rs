//! TestDatabase against the real MariaDB/MySQL test server.

use mysql_async::prelude::Queryable;
use xdb_test_util::{Dialect, TestDatabase, DEFAULT_MYSQL_URL, MYSQL_URL_ENV};

async fn admin_conn() -> mysql_async::Conn {
    let url = std::env::var(MYSQL_URL_ENV).unwrap_or_else(|_| DEFAULT_MYSQL_URL.into());
    mysql_async::Conn::from_url(url)
        .await
        .expect("admin connection")
}

async fn database_exists(admin: &mut mysql_async::Conn, name: &str) -> bool {
    let found: Option<String> = admin
        .exec_first(
            "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?",
            (name,),
        )
        .await
        .unwrap();
    found.is_some()
}

#[tokio::test]
async fn creates_a_database_with_the_schema_and_drops_it() {
    let mut admin = admin_conn().await;
    let database = TestDatabase::create_mysql().await;
    assert_eq!(database.dialect(), Dialect::MySql);
    let name = database.name().to_owned();
    assert!(name.starts_with("xdb_test_"), "{name}");
    assert!(
        database.url().starts_with("mysql://") && database.url().ends_with(&format!("/{name}")),
        "{}",
        database.url()
    );
    assert!(database_exists(&mut admin, &name).await);

    let status = xdb_sys_schema::check(database.url()).await.unwrap();
    assert!(status.ensure_current().is_ok(), "{status}");

    database
        .execute_sql("CREATE TABLE users (id INT PRIMARY KEY); INSERT INTO users VALUES (7)")
        .await;
    // A connection left open inside a transaction holds a metadata lock on `users`: the
    // drop must not wait for it.
    let mut conn = database.mysql_conn().await;
    conn.query_drop("START TRANSACTION").await.unwrap();
    let id: Option<i32> = conn.query_first("SELECT id FROM users").await.unwrap();
    assert_eq!(id, Some(7));

    drop(database);
    assert!(
        !database_exists(&mut admin, &name).await,
        "{name} still exists"
    );
    assert!(
        conn.query_drop("SELECT 1").await.is_err(),
        "the open session should have been killed"
    );
}

#[tokio::test]
async fn without_schema_is_empty_and_names_are_unique() {
    let first = TestDatabase::create_mysql_without_schema().await;
    let second = TestDatabase::create_mysql_without_schema().await;
    assert_ne!(first.name(), second.name());
    let tables: Option<i64> = first
        .mysql_conn()
        .await
        .query_first(
            "SELECT COUNT(*) FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'xdb\\_sys\\_%'",
        )
        .await
        .unwrap();
    assert_eq!(tables, Some(0));
}

#[tokio::test]
#[should_panic(expected = "use mysql_conn()")]
async fn client_refuses_a_mysql_database() {
    let database = TestDatabase::create_mysql_without_schema().await;
    database.client().await;
}
