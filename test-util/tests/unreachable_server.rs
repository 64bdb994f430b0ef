//! An unreachable server must fail the test loudly, never skip it. Its own test binary,
//! because it changes the process environment.

use xdb_test_util::{free_local_port, TestDatabase, MYSQL_URL_ENV, POSTGRES_URL_ENV};

#[tokio::test]
async fn unreachable_server_panics_naming_the_env_var_and_the_script() {
    // Nothing listens on a port that was just free.
    let url = format!(
        "postgres://postgres@127.0.0.1:{}/postgres",
        free_local_port()
    );
    std::env::set_var(POSTGRES_URL_ENV, url);
    let panic = tokio::spawn(TestDatabase::create_postgres())
        .await
        .expect_err("creating a database on an unreachable server must panic");
    let payload = panic.into_panic();
    let message = payload
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(message.contains(POSTGRES_URL_ENV), "{message}");
    assert!(message.contains("scripts/ensure-postgres.sh"), "{message}");
}

#[tokio::test]
async fn unreachable_mysql_server_panics_naming_the_env_var_and_the_script() {
    let url = format!("mysql://root@127.0.0.1:{}/mysql", free_local_port());
    std::env::set_var(MYSQL_URL_ENV, url);
    let panic = tokio::spawn(TestDatabase::create_mysql())
        .await
        .expect_err("creating a database on an unreachable server must panic");
    let payload = panic.into_panic();
    let message = payload
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(message.contains(MYSQL_URL_ENV), "{message}");
    assert!(message.contains("scripts/ensure-mariadb.sh"), "{message}");
}
