//! The `xdb-sys-schema` binary: messages and exit codes.

use std::process::{Command, Output};

use xdb_test_util::TestDatabase;

fn run(args: &[&str], database_url: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_xdb-sys-schema"));
    command.args(args).env_remove("XDB_DATABASE_URL");
    if let Some(url) = database_url {
        command.env("XDB_DATABASE_URL", url);
    }
    command.output().expect("run xdb-sys-schema")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test]
async fn status_install_status_install() {
    let database = TestDatabase::create_postgres_without_schema().await;
    let url = database.url();

    let status = run(&["status", "--database-url", url], None);
    assert_eq!(status.status.code(), Some(3), "{}", stderr(&status));
    assert!(
        stdout(&status).contains("not installed"),
        "{}",
        stdout(&status)
    );

    // The URL from the environment works as well as the flag.
    let install = run(&["install"], Some(url));
    assert!(install.status.success(), "{}", stderr(&install));
    assert!(
        stdout(&install).contains(&format!(
            "applied {} migration",
            xdb_sys_schema::LATEST_VERSION
        )),
        "{}",
        stdout(&install)
    );

    let status = run(&["status", "--database-url", url], None);
    assert!(status.status.success(), "{}", stderr(&status));
    assert!(
        stdout(&status).contains("up to date"),
        "{}",
        stdout(&status)
    );

    let again = run(&["install", "--database-url", url], None);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stdout(&again).contains("nothing to apply"),
        "{}",
        stdout(&again)
    );
}

#[tokio::test]
async fn install_on_a_newer_database_fails_with_a_clear_message() {
    let database = TestDatabase::create_postgres().await;
    database
        .execute_sql("UPDATE xdb_sys_schema_version SET version = version + 1")
        .await;
    let install = run(&["install", "--database-url", database.url()], None);
    assert_eq!(install.status.code(), Some(1));
    assert!(
        stderr(&install).contains("newer than this binary"),
        "{}",
        stderr(&install)
    );
}

#[test]
fn unreachable_database_fails_without_echoing_the_password() {
    let port = xdb_test_util::free_local_port();
    let url = format!("postgres://postgres:hunter2@127.0.0.1:{port}/postgres");
    let output = run(&["status", "--database-url", &url], None);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("cannot connect"),
        "{}",
        stderr(&output)
    );
    assert!(!stderr(&output).contains("hunter2"), "{}", stderr(&output));
}

#[test]
fn missing_url_is_a_usage_error() {
    let output = run(&["install"], None);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("--database-url"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test]
async fn mysql_status_install_status_install() {
    let database = TestDatabase::create_mysql_without_schema().await;
    let url = database.url();

    let status = run(&["status", "--database-url", url], None);
    assert_eq!(status.status.code(), Some(3), "{}", stderr(&status));
    assert!(
        stdout(&status).contains("not installed"),
        "{}",
        stdout(&status)
    );
    let install = run(&["install"], Some(url));
    assert!(install.status.success(), "{}", stderr(&install));
    assert!(
        stdout(&install).contains(&format!(
            "applied {} migration",
            xdb_sys_schema::LATEST_VERSION
        )),
        "{}",
        stdout(&install)
    );
    let status = run(&["status", "--database-url", url], None);
    assert!(status.status.success(), "{}", stderr(&status));
    let again = run(&["install", "--database-url", url], None);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stdout(&again).contains("nothing to apply"),
        "{}",
        stdout(&again)
    );
}

#[tokio::test]
async fn mysql_install_failure_shows_the_server_message() {
    let database = TestDatabase::create_mysql_without_schema().await;
    database
        .execute_sql("CREATE TABLE xdb_sys_tasks (x INT)")
        .await;
    let install = run(&["install", "--database-url", database.url()], None);
    assert_eq!(install.status.code(), Some(1));
    let message = stderr(&install);
    assert!(
        message.contains("v001_initial") && message.contains("xdb_sys_tasks"),
        "{message}"
    );
}

/// Pulsar CDC mode's publication: made with the tables, left as it is afterwards, and
/// refused, before anything is installed, under a name that would need quoting.
#[tokio::test]
async fn install_makes_the_cdc_publication_once() {
    let database = TestDatabase::create_postgres_without_schema().await;
    let url = database.url();
    let bad = run(
        &[
            "install",
            "--database-url",
            url,
            "--publication",
            "Bad-Name",
        ],
        None,
    );
    assert_eq!(bad.status.code(), Some(1), "{}", stdout(&bad));
    assert!(
        stderr(&bad).contains("publication name \"Bad-Name\""),
        "{}",
        stderr(&bad)
    );
    let status = run(&["status", "--database-url", url], None);
    assert_eq!(status.status.code(), Some(3), "{}", stdout(&status));

    let install = run(
        &["install", "--database-url", url, "--publication", "xdb_cdc"],
        None,
    );
    assert!(install.status.success(), "{}", stderr(&install));
    assert!(
        stdout(&install).contains("publication xdb_cdc created"),
        "{}",
        stdout(&install)
    );
    let filter: String = database
        .client()
        .await
        .query_one(
            "SELECT rowfilter FROM pg_publication_tables \
             WHERE pubname = 'xdb_cdc' AND tablename = 'xdb_sys_tasks'",
            &[],
        )
        .await
        .expect("the publication covers xdb_sys_tasks")
        .get(0);
    assert!(filter.contains("lease_owner IS NULL"), "{filter}");

    let again = run(
        &["install", "--database-url", url, "--publication", "xdb_cdc"],
        None,
    );
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stdout(&again).contains("publication xdb_cdc exists: left as it is"),
        "{}",
        stdout(&again)
    );
}

#[tokio::test]
async fn mysql_refuses_a_publication_before_installing() {
    let database = TestDatabase::create_mysql_without_schema().await;
    let url = database.url();
    let refused = run(
        &["install", "--database-url", url, "--publication", "xdb_cdc"],
        None,
    );
    assert_eq!(refused.status.code(), Some(1), "{}", stdout(&refused));
    assert!(
        stderr(&refused).contains("a MySQL binary log has none"),
        "{}",
        stderr(&refused)
    );
    let status = run(&["status", "--database-url", url], None);
    assert_eq!(status.status.code(), Some(3), "{}", stdout(&status));
}
