//! The limit of XDB's own statements: a load generator running, on the bench's database
//! and its XDB tables, the statements XDB's services send for one two-state process,
//! then the read of the closed process, one process at a time per client, with as many
//! clients as the judged load has processes in flight. What is left between this and
//! XDB's throughput is everything but the statements: the services, the worker calls,
//! the waits between steps.
//!
//! On PostgreSQL the generator is pgbench (`limit_writes.pgbench`); on MySQL/MariaDB,
//! which has none, the bench's own (`limit_writes_mysql.sql`, prepared statements, as the
//! MySQL ceiling's). XDB batches claims and transitions, so its commits per process are
//! a fraction of its statements' (the report's database work says how many: 2.4 to 2.6
//! at 64 in flight on PostgreSQL). A script cannot batch across clients, so it runs two
//! ways: each of XDB's transactions its own commit, as XDB does for a process alone
//! (five commits), and the writes in one transaction with the read apart (two commits,
//! the nearest to XDB's under load), which the target is judged against.
//!
//! The statements were copied from what the servers logged (PostgreSQL's
//! `log_min_duration_statement = 0`, MariaDB's general log) for a bench process; the
//! tests in `bench/tests/limit_script.rs` run every form against a fresh XDB schema and
//! check that every process ends as XDB's does.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use mysql_async::prelude::Queryable;

use crate::ceiling::{mysql_pool, run_pgbench, Ceiling, CeilingOptions};
use crate::database::{BenchDatabase, Dialect};

/// The writes of one two-state process in XDB's statements.
const WRITES: &str = include_str!("limit_writes.pgbench");

/// The same on MySQL/MariaDB: XDB's transactions, each ended by a `-- commit` line.
const MYSQL_WRITES: &str = include_str!("limit_writes_mysql.sql");

/// MySQL's read that sees the process closed, as wait-for-completion's.
const MYSQL_READ: &str = "SELECT id, process_id, process_type, worker_url, status, start_time, \
    close_time, timeout_seconds, running_state_executions, graceful_completion, \
    state_execution_sequences, global_attribute_config, result, failure, paused, priority, \
    fairness_key, fairness_weight FROM xdb_sys_process_executions WHERE id = (SELECT \
    process_execution_id FROM xdb_sys_latest_process_executions WHERE process_id = @pid)";

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
    let mut runs = Vec::new();
    for commits in Commits::ALL {
        let run = match database.dialect() {
            Dialect::Postgres => {
                run_pgbench(database.url(), &commits.script(), clients, options).await?
            }
            Dialect::MySql => {
                run_mysql(
                    database.url(),
                    commits,
                    clients,
                    Until::Elapsed(options.duration),
                )
                .await?
            }
        };
        runs.push((commits, run));
    }
    Ok(Limit { runs })
}

/// When each client of [`run_mysql`] stops.
#[derive(Debug, Clone, Copy)]
pub enum Until {
    /// After this long: a measure.
    Elapsed(Duration),
    /// After this many processes: a check of what they leave behind.
    Processes(u64),
}

/// XDB's MySQL transactions of one process (statements, comments dropped).
pub fn mysql_transactions() -> Vec<Vec<&'static str>> {
    let mut transactions = vec![Vec::new()];
    for line in MYSQL_WRITES.lines().map(str::trim) {
        if line == "-- commit" {
            transactions.push(Vec::new());
        } else if !line.is_empty() && !line.starts_with("--") {
            let statement = line.strip_suffix(';').unwrap_or(line);
            transactions.last_mut().expect("one").push(statement);
        }
    }
    transactions.retain(|statements| !statements.is_empty());
    transactions
}

/// The statements of one process in `commits`' form, `START TRANSACTION` and `COMMIT`
/// included: each of XDB's transactions apart, or the writes together; the read last.
pub fn mysql_script(commits: Commits) -> Vec<&'static str> {
    let mut script = Vec::new();
    let transactions = mysql_transactions();
    match commits {
        Commits::Apart => {
            for statements in transactions {
                script.push("START TRANSACTION");
                script.extend(statements);
                script.push("COMMIT");
            }
        }
        Commits::Together => {
            script.push("START TRANSACTION");
            script.extend(transactions.into_iter().flatten());
            script.push("COMMIT");
        }
    }
    script.push(MYSQL_READ);
    script
}

/// Runs `commits`' script on `url` with `clients` connections, each running one process
/// after another until `until`: the bench's own generator, as pgbench runs the
/// PostgreSQL script (`-M prepared`): statements prepared once per connection,
/// `START TRANSACTION` and `COMMIT` as plain queries, as XDB sends them.
pub async fn run_mysql(
    url: &str,
    commits: Commits,
    clients: usize,
    until: Until,
) -> anyhow::Result<Ceiling> {
    let pool = mysql_pool(url).await?;
    let script = mysql_script(commits);
    let began = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let (pool, script) = (pool.clone(), script.clone());
            tokio::spawn(async move { mysql_client(pool, script, until, began).await })
        })
        .collect();
    let (mut processes, mut busy) = (0u64, Duration::ZERO);
    for task in tasks {
        let (count, time) = task.await.context("a limit client panicked")??;
        processes += count;
        busy += time;
    }
    let seconds = began.elapsed().as_secs_f64();
    pool.disconnect().await?;
    Ok(Ceiling {
        tool: format!(
            "xdb-bench's own load generator (mysql_async, prepared statements), {clients} \
             connections, {} statements a process",
            script.len()
        ),
        clients,
        seconds,
        transactions: processes,
        per_second: processes as f64 / seconds.max(f64::EPSILON),
        latency_ms: (processes > 0).then(|| busy.as_secs_f64() * 1000.0 / processes as f64),
    })
}

/// One client: processes until `until`; (count, time spent in them).
async fn mysql_client(
    pool: mysql_async::Pool,
    script: Vec<&'static str>,
    until: Until,
    began: Instant,
) -> anyhow::Result<(u64, Duration)> {
    let mut conn = pool.get_conn().await?;
    let (mut count, mut busy) = (0u64, Duration::ZERO);
    loop {
        let done = match until {
            Until::Elapsed(duration) => began.elapsed() >= duration,
            Until::Processes(processes) => count >= processes,
        };
        if done {
            return Ok((count, busy));
        }
        let started = Instant::now();
        for statement in &script {
            if matches!(*statement, "START TRANSACTION" | "COMMIT") {
                conn.query_drop(*statement).await
            } else {
                conn.exec_drop(*statement, ()).await
            }
            .with_context(|| statement.to_string())?;
        }
        busy += started.elapsed();
        count += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mysql_script_has_xdb_s_four_transactions_and_the_read() {
        let transactions = mysql_transactions();
        assert_eq!(transactions.len(), 4, "{transactions:#?}");
        let apart = mysql_script(Commits::Apart);
        let together = mysql_script(Commits::Together);
        let count =
            |script: &[&str], statement: &str| script.iter().filter(|s| **s == statement).count();
        // The read commits on its own: five commits apart, two together.
        assert_eq!(count(&apart, "COMMIT") + 1, Commits::Apart.per_process());
        assert_eq!(
            count(&together, "COMMIT") + 1,
            Commits::Together.per_process()
        );
        assert_eq!(apart.last(), Some(&MYSQL_READ));
        assert_eq!(together.last(), Some(&MYSQL_READ));
        // Every variable a statement reads is set before it.
        let joined = apart.join("\n");
        for (variable, set_by) in [
            ("@pe)", "SET @pe ="),
            ("@pid)", "@pid = CONVERT"),
            ("(@task)", "SET @task ="),
            ("(@next_task)", "SET @next_task ="),
        ] {
            assert!(joined.find(set_by).unwrap() < joined.find(variable).unwrap());
        }
        assert!(apart
            .iter()
            .all(|s| !s.ends_with(';') && !s.starts_with("--")));
    }

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
