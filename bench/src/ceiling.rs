//! The database's commit-rate ceiling, measured in the same run on the same server:
//! 32 clients each committing transactions of one insert and one update by key for
//! about ten seconds. On PostgreSQL with `pgbench`; on MySQL/MariaDB, where there is no
//! pgbench, with the same transaction from an in-process load generator.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use mysql_async::prelude::Queryable;

use crate::database::{connect, BenchDatabase, Dialect};

/// Where pgbench is unless `--pgbench` says otherwise.
pub const DEFAULT_PGBENCH: &str = "/usr/lib/postgresql/15/bin/pgbench";
/// Rows of the keyed table the update picks from at random.
const KEYS: u32 = 100_000;

/// The pgbench script: one transaction inserting one row and updating one row by key.
pub const PGBENCH_SCRIPT: &str = "\\set id random(1, 100000)
BEGIN;
INSERT INTO ceiling_log (k) VALUES (:id);
UPDATE ceiling_keyed SET v = v + 1 WHERE id = :id;
END;
";

/// How the ceiling is measured.
#[derive(Debug, Clone)]
pub struct CeilingOptions {
    pub clients: usize,
    pub duration: Duration,
    /// The pgbench executable.
    pub pgbench: PathBuf,
}

/// The measured ceiling.
#[derive(Debug, Clone, PartialEq)]
pub struct Ceiling {
    /// How it was measured, for the report.
    pub tool: String,
    pub clients: usize,
    pub seconds: f64,
    pub transactions: u64,
    /// Committed transactions per second.
    pub per_second: f64,
    /// Mean transaction latency, ms, when known.
    pub latency_ms: Option<f64>,
}

/// Measures the ceiling on the bench database (its own two tables, created here).
pub async fn measure(
    database: &BenchDatabase,
    options: &CeilingOptions,
) -> anyhow::Result<Ceiling> {
    match database.dialect() {
        Dialect::Postgres => pgbench(database.url(), options).await,
        Dialect::MySql => mysql(database.url(), options).await,
    }
}

async fn pgbench(url: &str, options: &CeilingOptions) -> anyhow::Result<Ceiling> {
    let client = connect(url).await?;
    client
        .batch_execute(&format!(
            "CREATE TABLE ceiling_keyed (id INT PRIMARY KEY, v BIGINT NOT NULL DEFAULT 0);
             INSERT INTO ceiling_keyed (id) SELECT generate_series(1, {KEYS});
             CREATE TABLE ceiling_log (id BIGSERIAL PRIMARY KEY, k INT NOT NULL,
                                       at TIMESTAMPTZ NOT NULL DEFAULT now());"
        ))
        .await
        .context("creating the pgbench tables")?;
    // On its own: VACUUM cannot run in the implicit transaction of a multi-statement batch.
    client
        .batch_execute("VACUUM ANALYZE ceiling_keyed")
        .await
        .context("vacuuming the pgbench tables")?;
    let mut ceiling = run_pgbench(url, PGBENCH_SCRIPT, options.clients, options).await?;
    ceiling.tool = format!(
        "{}, script: BEGIN; INSERT one row; UPDATE one row by primary key (of {KEYS}); END",
        ceiling.tool
    );
    Ok(ceiling)
}

/// Runs pgbench with `script` on `url`, `clients` connections for `options`' duration,
/// prepared statements; the summary as a [`Ceiling`] whose `tool` is the command line.
pub(crate) async fn run_pgbench(
    url: &str,
    script: &str,
    clients: usize,
    options: &CeilingOptions,
) -> anyhow::Result<Ceiling> {
    let file = std::env::temp_dir().join(format!(
        "xdb-bench-{}-{}.pgbench",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::write(&file, script).with_context(|| format!("writing {}", file.display()))?;
    let clients_arg = clients.to_string();
    let seconds = options.duration.as_secs().max(1).to_string();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(clients)
        .to_string();
    let output = tokio::process::Command::new(&options.pgbench)
        .args([
            "-n",
            "-M",
            "prepared",
            "-c",
            &clients_arg,
            "-j",
            &threads,
            "-T",
            &seconds,
            "-f",
        ])
        .arg(&file)
        .arg(url)
        .output()
        .await;
    let _ = std::fs::remove_file(&file);
    let output = output.with_context(|| format!("running {}", options.pgbench.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    anyhow::ensure!(
        output.status.success(),
        "pgbench failed ({}): {}{}",
        output.status,
        stdout,
        String::from_utf8_lossy(&output.stderr)
    );
    let mut ceiling =
        parse_pgbench(&stdout).with_context(|| format!("unexpected pgbench output:\n{stdout}"))?;
    ceiling.seconds = options.duration.as_secs_f64();
    ceiling.clients = clients;
    ceiling.tool = format!("pgbench -n -M prepared -c {clients} -j {threads} -T {seconds}");
    Ok(ceiling)
}

/// Reads transactions, tps and mean latency from pgbench's summary.
pub fn parse_pgbench(stdout: &str) -> Option<Ceiling> {
    let value_after = |prefix: &str| {
        stdout
            .lines()
            .find_map(|l| l.trim().strip_prefix(prefix))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|v| v.parse::<f64>().ok())
    };
    Some(Ceiling {
        tool: String::new(),
        clients: 0,
        seconds: 0.0,
        transactions: value_after("number of transactions actually processed:")? as u64,
        per_second: value_after("tps =")?,
        latency_ms: value_after("latency average ="),
    })
}

async fn mysql(url: &str, options: &CeilingOptions) -> anyhow::Result<Ceiling> {
    let pool = mysql_pool(url).await?;
    let mut conn = pool.get_conn().await?;
    conn.query_drop("CREATE TABLE ceiling_keyed (id INT PRIMARY KEY, v BIGINT NOT NULL DEFAULT 0)")
        .await?;
    conn.query_drop(
        "CREATE TABLE ceiling_log (id BIGINT AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL,
                                   at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))",
    )
    .await?;
    for first in (1..=KEYS).step_by(1000) {
        let values: Vec<String> = (first..first + 1000).map(|k| format!("({k})")).collect();
        conn.query_drop(format!(
            "INSERT INTO ceiling_keyed (id) VALUES {}",
            values.join(",")
        ))
        .await?;
    }
    drop(conn);
    let deadline = Instant::now() + options.duration;
    let began = Instant::now();
    let tasks: Vec<_> = (0..options.clients)
        .map(|client| {
            let pool = pool.clone();
            tokio::spawn(async move { mysql_client(pool, client as u64, deadline).await })
        })
        .collect();
    let (mut transactions, mut busy) = (0u64, Duration::ZERO);
    for task in tasks {
        let (count, time) = task.await.context("a ceiling client panicked")??;
        transactions += count;
        busy += time;
    }
    let seconds = began.elapsed().as_secs_f64();
    pool.disconnect().await?;
    Ok(Ceiling {
        tool: format!(
            "xdb-bench's own load generator (mysql_async, prepared statements), {} \
             connections: START TRANSACTION; INSERT one row; UPDATE one row by primary key \
             (of {KEYS}); COMMIT",
            options.clients
        ),
        clients: options.clients,
        seconds,
        transactions,
        per_second: transactions as f64 / seconds.max(f64::EPSILON),
        latency_ms: (transactions > 0).then(|| busy.as_secs_f64() * 1000.0 / transactions as f64),
    })
}

/// A pool of connections to the MySQL database at `url`, once one of them connected.
pub(crate) async fn mysql_pool(url: &str) -> anyhow::Result<mysql_async::Pool> {
    let url = xdb_config::DatabaseUrl::parse(url)
        .map_err(|error| anyhow::anyhow!("invalid MySQL URL: {error}"))?;
    let target = xdb_db_connect::MySqlTarget::new(&url)?;
    let (pool, _) = target
        .first_connection(|opts| async move {
            let pool = mysql_async::Pool::new(opts);
            drop(pool.get_conn().await?);
            Ok(pool)
        })
        .await?;
    Ok(pool)
}

/// One client: transactions until `deadline`; (count, time spent in them).
async fn mysql_client(
    pool: mysql_async::Pool,
    seed: u64,
    deadline: Instant,
) -> anyhow::Result<(u64, Duration)> {
    let mut conn = pool.get_conn().await?;
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let (mut count, mut busy) = (0u64, Duration::ZERO);
    while Instant::now() < deadline {
        // xorshift64: a key spread like pgbench's random(), without a crate.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let key = (state % u64::from(KEYS)) as u32 + 1;
        let began = Instant::now();
        let mut tx = conn.start_transaction(Default::default()).await?;
        tx.exec_drop("INSERT INTO ceiling_log (k) VALUES (?)", (key,))
            .await?;
        tx.exec_drop("UPDATE ceiling_keyed SET v = v + 1 WHERE id = ?", (key,))
            .await?;
        tx.commit().await?;
        busy += began.elapsed();
        count += 1;
    }
    Ok((count, busy))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pgbench_15_summary() {
        let out = "transaction type: script.pgbench
scaling factor: 1
query mode: prepared
number of clients: 32
number of threads: 2
maximum number of tries: 1
duration: 10 s
number of transactions actually processed: 51234
number of failed transactions: 0 (0.000%)
latency average = 6.245 ms
initial connection time = 25.123 ms
tps = 5123.456789 (without initial connection time)
";
        let c = parse_pgbench(out).unwrap();
        assert_eq!(c.transactions, 51234);
        assert!((c.per_second - 5123.456789).abs() < 1e-9);
        assert_eq!(c.latency_ms, Some(6.245));
        assert_eq!(parse_pgbench("pgbench: error: connection refused"), None);
    }
}
