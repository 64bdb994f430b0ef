//! The limit scripts (`bench/src/limit.rs`) run by pgbench against a fresh XDB schema:
//! every process they run must end as XDB's two-state process does, so that the bench's
//! "against the limit" figure is the rate of XDB's own work. Needs the PostgreSQL of
//! `scripts/ensure-postgres.sh` and its pgbench.

use xdb_bench::ceiling::DEFAULT_PGBENCH;
use xdb_bench::limit::Commits;
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
    // Each closed as a graceful completion, through both states, with XDB's four
    // history events; no task left behind, none leased.
    assert_eq!(
        count(
            "SELECT count(*) FROM xdb_sys_process_executions
              WHERE status = 'COMPLETED' AND close_time IS NOT NULL
                AND running_state_executions = 0
                AND state_execution_sequences = '{\"StateA\": 1, \"StateB\": 1}'"
        )
        .await,
        processes
    );
    assert_eq!(
        count("SELECT count(*) FROM xdb_sys_process_executions").await,
        processes
    );
    assert_eq!(
        count(
            "SELECT count(*) FROM xdb_sys_async_state_executions
              WHERE status = 'COMPLETED' AND version = 2"
        )
        .await,
        2 * processes
    );
    assert_eq!(
        count("SELECT count(*) FROM xdb_sys_history_events").await,
        4 * processes
    );
    assert_eq!(
        count("SELECT count(*) FROM xdb_sys_latest_process_executions").await,
        processes
    );
    assert_eq!(
        count("SELECT count(*) FROM xdb_sys_request_receipts").await,
        processes
    );
    assert_eq!(count("SELECT count(*) FROM xdb_sys_tasks").await, 0);
}
