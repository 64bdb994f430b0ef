//! The limit of XDB's own statements: pgbench running, on the bench's PostgreSQL
//! database and its XDB tables, the statements XDB's services send for one two-state
//! process (`limit.pgbench`), one process at a time per client, with as many clients
//! as the judged load has processes in flight. What is left between this and XDB's
//! throughput is everything but the statements: the services, the worker calls, the
//! waits between steps. XDB sends fewer statements and commits per process than the
//! script under load (it batches claims and transitions; the report's database work
//! says how many), so XDB can pass it.
//!
//! The script's statements were copied from what PostgreSQL logged
//! (`log_min_duration_statement = 0`) for a bench process; the test
//! `bench/tests/limit_script.rs` runs it against a fresh XDB schema and checks that
//! every process it runs ends as XDB's does.

use crate::ceiling::{run_pgbench, Ceiling, CeilingOptions};
use crate::database::{BenchDatabase, Dialect};

/// The pgbench script of one two-state process in XDB's statements.
pub const SCRIPT: &str = include_str!("limit.pgbench");

/// Statements the script sends per process: the start, the claim, two transitions and
/// the read of the closed process.
pub const STATEMENTS_PER_PROCESS: usize = 5;

/// Runs the script with `clients` for `options`' duration on `database`, whose XDB
/// tables must exist and no service use (the services are stopped); each pgbench
/// transaction is one process.
pub async fn measure(
    database: &BenchDatabase,
    clients: usize,
    options: &CeilingOptions,
) -> anyhow::Result<Ceiling> {
    anyhow::ensure!(
        database.dialect() == Dialect::Postgres,
        "pgbench is PostgreSQL's; XDB's MySQL statements have no such script"
    );
    let mut limit = run_pgbench(database.url(), SCRIPT, clients, options).await?;
    limit.tool = format!(
        "{}, script: XDB's {STATEMENTS_PER_PROCESS} statements of one two-state process \
         (bench/src/limit.pgbench), each its own transaction",
        limit.tool
    );
    Ok(limit)
}
