//! The limit of XDB's own statements: pgbench running, on the bench's PostgreSQL
//! database and its XDB tables, the statements XDB's services send for one two-state
//! process (`limit_writes.pgbench`, then the read of the closed process), one process
//! at a time per client, with as many clients as the judged load has processes in
//! flight. What is left between this and XDB's throughput is everything but the
//! statements: the services, the worker calls, the waits between steps.
//!
//! XDB batches claims and transitions, so its commits per process are a fraction of
//! its statements' (the report's database work says how many: 2.4 to 2.6 at 64 in
//! flight). A script cannot batch across clients, so it runs two ways: each statement
//! its own commit, as XDB does for a process alone (five commits), and the four writes
//! in one transaction with the read apart (two commits, the nearest to XDB's under
//! load), which the target is judged against.
//!
//! The statements were copied from what PostgreSQL logged (`log_min_duration_statement
//! = 0`) for a bench process; the test `bench/tests/limit_script.rs` runs both scripts
//! against a fresh XDB schema and checks that every process ends as XDB's does.

use crate::ceiling::{run_pgbench, Ceiling, CeilingOptions};
use crate::database::{BenchDatabase, Dialect};

/// The writes of one two-state process in XDB's statements.
const WRITES: &str = include_str!("limit_writes.pgbench");

/// The read that sees the process closed, as wait-for-completion's.
const READ: &str = "SELECT id, process_id, process_type, worker_url, status, start_time, \
    close_time, timeout_seconds, running_state_executions, graceful_completion, \
    state_execution_sequences, global_attribute_config, result, failure, paused, priority, \
    fairness_key, fairness_weight FROM xdb_sys_process_executions WHERE id = (SELECT \
    process_execution_id FROM xdb_sys_latest_process_executions WHERE process_id = :pid);\n";

/// Statements of the script per process, BEGIN and COMMIT aside.
pub const STATEMENTS_PER_PROCESS: usize = 5;

/// How the script commits a process's statements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Commits {
    /// Each statement its own transaction: five commits per process.
    Apart,
    /// The four writes in one transaction, the read apart: two commits per process.
    Together,
}

impl Commits {
    /// Both, in the order the bench runs them.
    pub const ALL: [Commits; 2] = [Commits::Apart, Commits::Together];

    /// Commits per process.
    pub fn per_process(self) -> usize {
        match self {
            Commits::Apart => STATEMENTS_PER_PROCESS,
            Commits::Together => 2,
        }
    }

    /// The pgbench script; each of its transactions is one process.
    pub fn script(self) -> String {
        match self {
            Commits::Apart => format!("{WRITES}{READ}"),
            Commits::Together => format!("BEGIN;\n{WRITES}COMMIT;\n{READ}"),
        }
    }
}

/// What pgbench measured of each form.
#[derive(Debug, Clone, PartialEq)]
pub struct Limit {
    pub runs: Vec<(Commits, Ceiling)>,
}

impl Limit {
    /// The run the target is judged against ([`Commits::Together`]).
    pub fn judged(&self) -> Option<&Ceiling> {
        self.runs
            .iter()
            .find(|(commits, _)| *commits == Commits::Together)
            .map(|(_, run)| run)
    }
}

/// Runs each form with `clients` for `options`' duration on `database`, whose XDB
/// tables must exist and no service use (the services are stopped).
pub async fn measure(
    database: &BenchDatabase,
    clients: usize,
    options: &CeilingOptions,
) -> anyhow::Result<Limit> {
    anyhow::ensure!(
        database.dialect() == Dialect::Postgres,
        "pgbench is PostgreSQL's; XDB's MySQL statements have no such script"
    );
    let mut runs = Vec::new();
    for commits in Commits::ALL {
        let run = run_pgbench(database.url(), &commits.script(), clients, options).await?;
        runs.push((commits, run));
    }
    Ok(Limit { runs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_together_form_wraps_the_writes_and_leaves_the_read_apart() {
        let together = Commits::Together.script();
        let commit = together.find("COMMIT;").unwrap();
        assert!(together.starts_with("BEGIN;\n"));
        assert!(together[commit..].contains("SELECT id, process_id"));
        assert!(!together[..commit].contains("SELECT id, process_id"));
        assert!(!Commits::Apart.script().contains("BEGIN"));
        // Every variable the statements read is set by a \gset before it.
        for script in [together, Commits::Apart.script()] {
            for (variable, set_by) in [
                (":pe", "AS pe"),
                (":pid", "AS pid"),
                (":task", "AS task"),
                (":next_task", "AS next_task"),
            ] {
                assert!(script.find(set_by).unwrap() < script.find(variable).unwrap());
            }
        }
    }
}
