//! The limit scripts (`bench/src/limit.rs`) run against a fresh XDB schema, by pgbench
//! on PostgreSQL and the bench's own generator on MariaDB: every process they run must
//! end as XDB's two-state process does, so that the bench's "against the limit" figure
//! is the rate of XDB's own work. Needs the servers of `scripts/ensure-postgres.sh`
//! (with its pgbench) and `scripts/ensure-mariadb.sh`.

use mysql_async::prelude::Queryable;
use xdb_bench::ceiling::DEFAULT_PGBENCH;
use xdb_bench::limit::{run_mysql, Commits, Until};
use xdb_test_util::TestDatabase;

const CLIENTS: usize = 2;
const PER_CLIENT: usize = 25;

#[tokio::test]
async fn every_process_of_the_limit_script_completes_as_xdb_s_do_with_its_statements_apart() {
    runs_as_xdb_does(Commits::Apart).await;
}

#[tokio::test]
async fn every_process_of_the_limit_script_completes_as_xdb_s_do_with_its_writes_together() {
    runs_as_xdb_does(Commits::Together).await;
}

async fn runs_as_xdb_does(commits: Commits) {
    let database = TestDatabase::create_postgres().await;
    let script = std::env::temp_dir().join(format!(
        "xdb-limit-test-{}.pgbench",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::write(&script, commits.script()).unwrap();
    let output = tokio::process::Command::new(DEFAULT_PGBENCH)
        .args(["-n", "-M", "prepared", "-c", &CLIENTS.to_string()])
        .args(["-j", "2", "-t", &PER_CLIENT.to_string(), "-f"])
        .arg(&script)
        .arg(database.url())
        .output()
        .await
        .unwrap_or_else(|e| {
            panic!("{DEFAULT_PGBENCH} did not run ({e}); scripts/ensure-postgres.sh installs it")
        });
    let _ = std::fs::remove_file(&script);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "pgbench failed: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let processes = (CLIENTS * PER_CLIENT) as i64;
    assert!(
        stdout.contains(&format!(
            "number of transactions actually processed: {processes}/{processes}"
        )),
        "{stdout}"
    );

    let client = database.client().await;
    let count = |sql: &'static str| {
        let client = &client;
        async move { client.query_one(sql, &[]).await.unwrap().get::<_, i64>(0) }
    };
    let completed = "SELECT count(*) FROM xdb_sys_process_executions
        WHERE status = 'COMPLETED' AND close_time IS NOT NULL AND running_state_executions = 0
          AND state_execution_sequences = '{\"StateA\": 1, \"StateB\": 1}'";
    for (sql, expected) in left_behind(completed, processes as u64) {
        assert_eq!(count(sql).await as u64, expected, "{sql}");
    }
}

#[tokio::test]
async fn every_process_of_the_mysql_limit_script_completes_as_xdb_s_do_with_its_transactions_apart()
{
    runs_on_mysql_as_xdb_does(Commits::Apart).await;
}

#[tokio::test]
async fn every_process_of_the_mysql_limit_script_completes_as_xdb_s_do_with_its_writes_together() {
    runs_on_mysql_as_xdb_does(Commits::Together).await;
}

async fn runs_on_mysql_as_xdb_does(commits: Commits) {
    let database = TestDatabase::create_mysql().await;
    let run = run_mysql(
        database.url(),
        commits,
        CLIENTS,
        Until::Processes(PER_CLIENT as u64),
    )
    .await
    .unwrap();
    let processes = (CLIENTS * PER_CLIENT) as u64;
    assert_eq!(run.transactions, processes, "{run:?}");

    let mut conn = database.mysql_conn().await;
    let mut count = async |sql: &str| -> u64 {
        conn.query_first::<u64, _>(sql)
            .await
            .unwrap()
            .expect("a count")
    };
    let completed = "SELECT count(*) FROM xdb_sys_process_executions
        WHERE status = 'COMPLETED' AND close_time IS NOT NULL AND running_state_executions = 0
          AND JSON_EQUALS(state_execution_sequences, '{\"StateA\": 1, \"StateB\": 1}')";
    for (sql, expected) in left_behind(completed, processes) {
        assert_eq!(count(sql).await, expected, "{sql}");
    }
}

/// What `processes` processes run as XDB's leave behind: each closed as a graceful
/// completion through both states (`completed`, the dialect's), with XDB's four history
/// events and one request receipt; no task left behind. (count query, expected count)
fn left_behind(completed: &'static str, processes: u64) -> [(&'static str, u64); 7] {
    [
        (completed, processes),
        ("SELECT count(*) FROM xdb_sys_process_executions", processes),
        (
            "SELECT count(*) FROM xdb_sys_async_state_executions
              WHERE status = 'COMPLETED' AND version = 2",
            2 * processes,
        ),
        ("SELECT count(*) FROM xdb_sys_history_events", 4 * processes),
        (
            "SELECT count(*) FROM xdb_sys_latest_process_executions",
            processes,
        ),
        ("SELECT count(*) FROM xdb_sys_request_receipts", processes),
        ("SELECT count(*) FROM xdb_sys_tasks", 0),
    ]
}
