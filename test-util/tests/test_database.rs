//! TestDatabase against the real PostgreSQL test server.

use std::time::Duration;

use xdb_test_util::{wait_until, TestDatabase, DEFAULT_POSTGRES_URL, POSTGRES_URL_ENV};

async fn admin_client() -> tokio_postgres::Client {
    let url = std::env::var(POSTGRES_URL_ENV).unwrap_or_else(|_| DEFAULT_POSTGRES_URL.into());
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("admin connection");
    tokio::spawn(connection);
    client
}

async fn database_exists(admin: &tokio_postgres::Client, name: &str) -> bool {
    admin
        .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&name])
        .await
        .unwrap()
        .is_some()
}

#[tokio::test]
async fn creates_a_database_with_the_schema_and_drops_it() {
    let admin = admin_client().await;
    let database = TestDatabase::create_postgres().await;
    let name = database.name().to_owned();
    assert!(name.starts_with("xdb_test_"), "{name}");
    assert!(
        database.url().ends_with(&format!("/{name}")),
        "{}",
        database.url()
    );
    assert!(database_exists(&admin, &name).await);

    let status = xdb_sys_schema::check(database.url()).await.unwrap();
    assert!(status.ensure_current().is_ok(), "{status}");

    database
        .execute_sql("CREATE TABLE users (id INT PRIMARY KEY); INSERT INTO users VALUES (7)")
        .await;
    // A client left open must not block the drop (WITH (FORCE)).
    let client = database.client().await;
    let id: i32 = client
        .query_one("SELECT id FROM users", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(id, 7);

    drop(database);
    assert!(!database_exists(&admin, &name).await, "{name} still exists");
    wait_until(
        Duration::from_secs(5),
        Duration::from_millis(20),
        || async { client.is_closed() },
    )
    .await
    .expect("the open client should be disconnected by DROP DATABASE ... WITH (FORCE)");
}

#[tokio::test]
async fn without_schema_is_empty_and_names_are_unique() {
    let first = TestDatabase::create_postgres_without_schema().await;
    let second = TestDatabase::create_postgres_without_schema().await;
    assert_ne!(first.name(), second.name());
    let tables: i64 = first
        .client()
        .await
        .query_one(
            "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'xdb\\_sys\\_%'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(tables, 0);
}

#[tokio::test]
#[should_panic(expected = "fixture SQL failed")]
async fn execute_sql_panics_on_bad_sql() {
    let database = TestDatabase::create_postgres_without_schema().await;
    database.execute_sql("SELECT * FROM no_such_table").await;
}
