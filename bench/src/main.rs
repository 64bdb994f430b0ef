//! `xdb-bench`: measures XDB start-to-completion latency, throughput and memory.
//!
//! Build the services first:
//! `cargo build --release -p xdb-api-service -p xdb-async-service -p xdb-bench`.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Parser, ValueEnum};
use xdb_bench::cdc::PulsarTarget;
use xdb_bench::database::{DEFAULT_ADMIN_URL, DEFAULT_MYSQL_ADMIN_URL};
use xdb_bench::report::{self, Comparison, Machine};
use xdb_bench::{run, BenchOptions};

/// A database the bench runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Database {
    Postgres,
    Mysql,
}

/// The async service's task source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Queue {
    Database,
    Pulsar,
}

#[derive(Parser, Debug)]
#[command(
    name = "xdb-bench",
    about = "XDB benchmark: start-to-completion latency, throughput, memory"
)]
struct Cli {
    /// Databases to run against, one after the other, each compared in one report.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "postgres,mysql"
    )]
    databases: Vec<Database>,
    /// Processes of the "load" scenario.
    #[arg(long, default_value_t = 5000)]
    processes: usize,
    /// Processes in flight in the "load" scenario.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Processes of the "lone" scenario (one at a time).
    #[arg(long, default_value_t = 200)]
    lone: usize,
    /// Unmeasured processes run first, one at a time.
    #[arg(long, default_value_t = 20)]
    warm_up: usize,
    /// Write the markdown report here too.
    #[arg(long)]
    report: Option<PathBuf>,
    /// PostgreSQL server where the throw-away bench database is created.
    #[arg(long, env = "XDB_BENCH_POSTGRES_URL", default_value = DEFAULT_ADMIN_URL)]
    postgres_url: String,
    /// Where the async service gets its work: the database queue, or Pulsar CDC
    /// (Debezium through the relay of scripts/ensure-pulsar.sh).
    #[arg(long, value_enum, default_value_t = Queue::Database)]
    queue: Queue,
    /// Broker of `--queue pulsar`.
    #[arg(
        long,
        env = "XDB_BENCH_PULSAR_URL",
        default_value = "pulsar://127.0.0.1:6650"
    )]
    pulsar_url: String,
    /// Control API of the Debezium relay, for `--queue pulsar`.
    #[arg(
        long,
        env = "XDB_BENCH_CDC_RELAY",
        default_value = "http://127.0.0.1:8090"
    )]
    cdc_relay: String,
    /// MySQL/MariaDB server where the throw-away bench database is created.
    #[arg(long, env = "XDB_BENCH_MYSQL_URL", default_value = DEFAULT_MYSQL_ADMIN_URL)]
    mysql_url: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    anyhow::ensure!(cli.concurrency > 0, "--concurrency must be at least 1");
    anyhow::ensure!(
        cli.warm_up > 0,
        "--warm-up must be at least 1 (it checks the set-up)"
    );
    let mut databases = cli.databases.clone();
    databases.dedup();
    anyhow::ensure!(!databases.is_empty(), "--databases names none");
    let mut reports = Vec::new();
    for database in databases {
        let options = BenchOptions {
            admin_url: match database {
                Database::Postgres => cli.postgres_url.clone(),
                Database::Mysql => cli.mysql_url.clone(),
            },
            lone: cli.lone,
            processes: cli.processes,
            concurrency: cli.concurrency,
            warm_up: cli.warm_up,
            pulsar: (cli.queue == Queue::Pulsar).then(|| PulsarTarget {
                broker_url: cli.pulsar_url.clone(),
                relay_url: cli.cdc_relay.clone(),
            }),
        };
        // Dropping the run on Ctrl-C stops the services and drops the database.
        let report = tokio::select! {
            report = run(&options) => report.with_context(|| format!("the {database:?} run"))?,
            _ = tokio::signal::ctrl_c() => anyhow::bail!("interrupted"),
        };
        reports.push(report);
    }
    let markdown = report::to_markdown(&Machine::detect(), &reports);
    println!("{markdown}");
    for report in &reports {
        for check in report.targets() {
            let verdict = if check.pass { "PASS" } else { "FAIL" };
            println!(
                "{verdict}  {}: {} (measured {})",
                report.dialect, check.target, check.measured
            );
        }
    }
    if let Some(comparison) = Comparison::of(&reports) {
        println!("{}", comparison.verdict());
    }
    if let Some(path) = cli.report {
        std::fs::write(&path, &markdown)
            .with_context(|| format!("writing the report to {}", path.display()))?;
        eprintln!("xdb-bench: report written to {}", path.display());
    }
    Ok(())
}
