//! `xdb-bench`: measures XDB latency, throughput, timers, RPC, local queues, memory with
//! waiting processes and CPU, beside the database's commit-rate ceiling.
//!
//! Build the services first:
//! `cargo build --release -p xdb-api-service -p xdb-async-service -p xdb-bench`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Parser, ValueEnum};
use xdb_bench::cdc::{PulsarTarget, Standalone};
use xdb_bench::ceiling::{CeilingOptions, DEFAULT_PGBENCH};
use xdb_bench::database::{DEFAULT_ADMIN_URL, DEFAULT_MYSQL_ADMIN_URL};
use xdb_bench::options::{scenarios_of, QueueMode};
use xdb_bench::peers::generator::Amount;
use xdb_bench::peers::{self, Peer, PeersOptions, XdbContender};
use xdb_bench::report::{self, Comparison, Machine, Verdict};
use xdb_bench::soak::{self, SoakOptions};
use xdb_bench::{run, BenchOptions, Scenario};

/// A database the bench runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Database {
    Postgres,
    Mysql,
}

#[derive(Parser, Debug)]
#[command(
    name = "xdb-bench",
    about = "XDB benchmark: latency, throughput, timers, RPC, queues, memory, CPU, \
             and the database's commit-rate ceiling"
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
    /// Scenarios to run (all by default), e.g. `--scenarios lone,load` for a quick run.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "lone,load,rpc,queue,timers,waiting,pgbench"
    )]
    scenarios: Vec<Scenario>,
    /// Processes of each "load" level (and of the load beside the waiting processes):
    /// enough for the judged level to last about ten seconds at 1,200 processes/s, as
    /// a few seconds' load is at the mercy of any background work on the machine.
    #[arg(long, default_value_t = 12000)]
    processes: usize,
    /// The judged in-flight level of "load": throughput target, CPU, and the load
    /// beside the waiting processes.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Further in-flight levels of "load".
    #[arg(long, value_delimiter = ',', default_value = "16,128")]
    levels: Vec<usize>,
    /// Processes of the "lone" scenario (one at a time).
    #[arg(long, default_value_t = 200)]
    lone: usize,
    /// Unmeasured processes run first, one at a time.
    #[arg(long, default_value_t = 20)]
    warm_up: usize,
    /// Processes of the "timers" scenario, started together.
    #[arg(long, default_value_t = 1000)]
    timers: usize,
    /// Their timer, in whole seconds.
    #[arg(long, default_value_t = 1)]
    timer_seconds: u64,
    /// RPC calls of the "rpc" scenario.
    #[arg(long, default_value_t = 500)]
    rpc_calls: usize,
    /// Messages of the "queue" scenario (one to each of that many waiting processes).
    #[arg(long, default_value_t = 200)]
    queue_messages: usize,
    /// Processes of the "waiting" scenario.
    #[arg(long, default_value_t = 100_000)]
    waiting: usize,
    /// Start calls in flight while they are started.
    #[arg(long, default_value_t = 64)]
    waiting_start_concurrency: usize,
    /// Start calls of the "overload" scenario (not run unless named in --scenarios).
    #[arg(long, default_value_t = 50_000)]
    overload_starts: usize,
    /// Its start calls in flight from the client, each on its own connection.
    #[arg(long, default_value_t = 1000)]
    overload_clients: usize,
    /// Seconds `xdb_sys_tasks` stays locked from the burst's first call.
    #[arg(long, default_value_t = 10)]
    overload_lock_seconds: u64,
    /// Priority-5 processes queued by the "backlog" scenario (not run unless named in
    /// --scenarios) before the priority-1 ones run beside them.
    #[arg(long, default_value_t = 100_000)]
    backlog_processes: usize,
    /// Priority-1 processes run one at a time beside the backlog.
    #[arg(long, default_value_t = 200)]
    backlog_lone: usize,
    /// Executions (and business rows) of the "fleet" scenario (not run unless named in
    /// --scenarios), written with set-based SQL before anything is measured.
    #[arg(long, default_value_t = 1_000_000)]
    fleet_executions: u64,
    /// "fleet": executions the TERMINATE batch selects (by a business-column filter).
    #[arg(long, default_value_t = 100_000)]
    fleet_batch: u64,
    /// "fleet": executions terminated by stop calls, one per call, to compare with.
    #[arg(long, default_value_t = 20_000)]
    fleet_stops: u64,
    /// "fleet": clients sending those stop calls together.
    #[arg(long, default_value_t = 64)]
    fleet_stop_clients: usize,
    /// "fleet": list requests by the indexed column (and as many direct statements):
    /// enough that the judged p99 is the tenth slowest, not one stall of the machine.
    #[arg(long, default_value_t = 1000)]
    fleet_list_requests: usize,
    /// "fleet": count requests (and as many direct counts of each kind).
    #[arg(long, default_value_t = 20)]
    fleet_count_runs: usize,
    /// "fleet": list requests by the unindexed column.
    #[arg(long, default_value_t = 10)]
    fleet_unindexed_requests: usize,
    /// "fleet": the batch's ratePerSecond.
    #[arg(long, default_value_t = 10_000)]
    fleet_rate: u32,
    /// Clients of the commit-rate ceiling ("pgbench" scenario).
    #[arg(long, default_value_t = 32)]
    ceiling_clients: usize,
    /// Its duration in seconds.
    #[arg(long, default_value_t = 10)]
    ceiling_seconds: u64,
    /// The pgbench executable.
    #[arg(long, default_value = DEFAULT_PGBENCH)]
    pgbench: PathBuf,
    /// Write the markdown report here too.
    #[arg(long)]
    report: Option<PathBuf>,
    /// PostgreSQL server where the throw-away bench database is created.
    #[arg(long, env = "XDB_BENCH_POSTGRES_URL", default_value = DEFAULT_ADMIN_URL)]
    postgres_url: String,
    /// Where the async service gets its work, one run per mode on each database,
    /// compared in one report: the database queue, and Pulsar CDC (the Pulsar IO
    /// Debezium source on the standalone of scripts/ensure-pulsar.sh, whose JVM is
    /// measured as a component of its own). E.g. `--queue database,pulsar`. The
    /// commit-rate ceiling ("pgbench") runs in the first mode's run only. With
    /// `--peers`, XDB is a contender in each mode on each database.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "database")]
    queue: Vec<QueueMode>,
    /// Broker of `--queue pulsar`.
    #[arg(
        long,
        env = "XDB_BENCH_PULSAR_URL",
        default_value = "pulsar://127.0.0.1:6650"
    )]
    pulsar_url: String,
    /// Pulsar's admin API, whose functions worker runs the Debezium source, for
    /// `--queue pulsar`.
    #[arg(
        long,
        env = "XDB_BENCH_PULSAR_ADMIN_URL",
        default_value = "http://127.0.0.1:8080"
    )]
    pulsar_admin_url: String,
    /// MySQL/MariaDB server where the throw-away bench database is created.
    #[arg(long, env = "XDB_BENCH_MYSQL_URL", default_value = DEFAULT_MYSQL_ADMIN_URL)]
    mysql_url: String,
    /// Register the worker's process definitions before measuring, so every start, RPC
    /// and publish is checked against them.
    #[arg(long)]
    register_definitions: bool,
    /// "soak": minutes of load (not run unless named in --scenarios, and then alone).
    #[arg(long, default_value_t = 60)]
    minutes: u64,
    /// "soak": units per second; by default `--soak-share` of the maximum measured first.
    #[arg(long)]
    soak_rate: Option<f64>,
    /// "soak": the share of the measured maximum to run at.
    #[arg(long, default_value_t = 0.5)]
    soak_share: f64,
    /// "soak": minutes a separate connection holds a transaction open, in the middle.
    #[arg(long, default_value_t = 10)]
    soak_hold_minutes: u64,
    /// "soak": every how many minutes the oldest async instance is replaced.
    #[arg(long, default_value_t = 5)]
    soak_replace_minutes: u64,
    /// "soak": async instances running at once.
    #[arg(long, default_value_t = 2)]
    soak_async_instances: usize,
    /// Run XDB (on --databases) beside these peers instead of the scenarios, e.g.
    /// `--peers restate,dbos,temporal`: each is installed by scripts/ensure-peers.sh (run
    /// from the repository's root) and measured on the same workloads: --lone processes
    /// one at a time, --peer-loads loads at --concurrency (--peer-load-seconds each) and
    /// --timers timers started together.
    #[arg(long, value_enum, value_delimiter = ',')]
    peers: Vec<Peer>,
    /// With --peers: times the load runs on each contender.
    #[arg(long, default_value_t = 3)]
    peer_loads: usize,
    /// With --peers: seconds each load lasts, the same for every contender however fast
    /// (0: --processes processes each).
    #[arg(long, default_value_t = 15)]
    peer_load_seconds: u64,
    /// With --peers: do not run scripts/ensure-peers.sh (the peers are installed).
    #[arg(long)]
    no_install: bool,
}

impl Cli {
    fn soak_options(&self, admin_url: String) -> SoakOptions {
        SoakOptions {
            admin_url,
            minutes: self.minutes,
            rate: self.soak_rate.filter(|r| *r > 0.0),
            share: self.soak_share.clamp(0.01, 1.0),
            probe: Duration::from_secs(30),
            hold: Duration::from_secs(self.soak_hold_minutes * 60),
            replace_every: Duration::from_secs(self.soak_replace_minutes.max(1) * 60),
            async_instances: self.soak_async_instances.max(1),
            max_in_flight: 5000,
            timer_delay: Duration::from_secs(self.timer_seconds),
        }
    }
}

/// Runs XDB on each database and then each peer, and prints (and writes) the table.
async fn peers_run(
    cli: &Cli,
    databases: &[Database],
    modes: &[QueueMode],
    pulsar: &PulsarTarget,
) -> anyhow::Result<()> {
    let mut peers = cli.peers.clone();
    peers.dedup();
    if !cli.no_install {
        peers::install::ensure(&peers)?;
    }
    let xdb: Vec<XdbContender> = databases
        .iter()
        .flat_map(|database| {
            let url = match database {
                Database::Postgres => cli.postgres_url.clone(),
                Database::Mysql => cli.mysql_url.clone(),
            };
            modes.iter().map(move |mode| XdbContender {
                url: url.clone(),
                pulsar: (*mode == QueueMode::Pulsar).then(|| pulsar.clone()),
            })
        })
        .collect();
    let options = PeersOptions {
        warm_up: cli.warm_up,
        lone: cli.lone,
        load: if cli.peer_load_seconds > 0 {
            Amount::For(Duration::from_secs(cli.peer_load_seconds))
        } else {
            Amount::Count(cli.processes)
        },
        concurrency: cli.concurrency,
        repetitions: cli.peer_loads.max(1),
        timers: cli.timers.max(1),
        timer_delay: Duration::from_secs(cli.timer_seconds),
    };
    let results = tokio::select! {
        results = peers::run(&xdb, &peers, &cli.postgres_url, &options) => results,
        _ = tokio::signal::ctrl_c() => anyhow::bail!("interrupted"),
    };
    let machine = Machine::detect();
    let load = match options.load {
        Amount::Count(count) => format!("{count} processes"),
        Amount::For(length) => format!("{} s", length.as_secs()),
    };
    let markdown = format!(
        "# XDB beside its peers\n\n\
         - Date: {}\n\
         - Machine: {} CPUs, {} MiB, {}\n\
         - Commit (of the working directory): {}\n\
         - Load average (1, 5, 15 min) at the end: {}\n\
         - Sizes: {} warm-up, {} lone, {} loads of {load} at {} in flight, {} timers of \
         {} s started together\n\n{}",
        chrono::Utc::now().format("%Y-%m-%d %H:%M UTC"),
        machine.cpus,
        machine.memory_mib,
        machine.cpu,
        machine.commit,
        machine.load_average,
        options.warm_up,
        options.lone,
        options.repetitions,
        options.concurrency,
        options.timers,
        cli.timer_seconds,
        peers::table::to_markdown(&results)
    );
    println!("{markdown}");
    if let Some(path) = &cli.report {
        std::fs::write(path, &markdown)
            .with_context(|| format!("writing the report to {}", path.display()))?;
    }
    Ok(())
}

/// Runs the soak on each database in turn, and prints (and writes) its report.
async fn soak(cli: &Cli, databases: &[Database]) -> anyhow::Result<()> {
    anyhow::ensure!(
        cli.scenarios.iter().all(|s| *s == Scenario::Soak),
        "the soak runs alone: --scenarios soak"
    );
    anyhow::ensure!(
        cli.queue == [QueueMode::Database],
        "the soak runs on the database queue"
    );
    let mut markdown = String::new();
    for database in databases {
        let url = match database {
            Database::Postgres => cli.postgres_url.clone(),
            Database::Mysql => cli.mysql_url.clone(),
        };
        let options = cli.soak_options(url);
        let report = tokio::select! {
            report = soak::run(&options) => report
                .with_context(|| format!("the {database:?} soak"))?,
            _ = tokio::signal::ctrl_c() => anyhow::bail!("interrupted"),
        };
        let text = report.to_markdown();
        println!("{text}");
        markdown.push_str(&text);
        markdown.push('\n');
    }
    if let Some(path) = &cli.report {
        std::fs::write(path, &markdown)
            .with_context(|| format!("writing the report to {}", path.display()))?;
    }
    Ok(())
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
    if cli.scenarios.contains(&Scenario::Soak) {
        return soak(&cli, &databases).await;
    }
    anyhow::ensure!(cli.timer_seconds > 0, "--timer-seconds must be at least 1");
    let mut modes: Vec<QueueMode> = Vec::new();
    for mode in &cli.queue {
        if !modes.contains(mode) {
            modes.push(*mode);
        }
    }
    anyhow::ensure!(!modes.is_empty(), "--queue names none");
    let pulsar_target = PulsarTarget {
        broker_url: cli.pulsar_url.clone(),
        admin_url: cli.pulsar_admin_url.clone(),
    };
    if modes.contains(&QueueMode::Pulsar) {
        // Before any run: a missing broker should not cost the database queue's runs.
        Standalone::find(&pulsar_target)?;
    }
    if !cli.peers.is_empty() {
        return peers_run(&cli, &databases, &modes, &pulsar_target).await;
    }
    let chosen = cli.scenarios.iter().copied().collect();
    let runs = databases
        .iter()
        .flat_map(|database| modes.iter().map(move |mode| (*database, *mode)));
    let mut reports = Vec::new();
    for (database, mode) in runs {
        let options = BenchOptions {
            admin_url: match database {
                Database::Postgres => cli.postgres_url.clone(),
                Database::Mysql => cli.mysql_url.clone(),
            },
            scenarios: scenarios_of(&chosen, &modes, mode),
            lone: cli.lone,
            processes: cli.processes,
            concurrency: cli.concurrency,
            levels: cli.levels.clone(),
            warm_up: cli.warm_up,
            timers: cli.timers,
            timer_delay: Duration::from_secs(cli.timer_seconds),
            rpc_calls: cli.rpc_calls,
            queue_messages: cli.queue_messages,
            waiting: cli.waiting,
            waiting_start_concurrency: cli.waiting_start_concurrency.max(1),
            overload: xdb_bench::scenarios::overload::OverloadOptions {
                starts: cli.overload_starts.max(1),
                clients: cli.overload_clients.max(1),
                lock: Duration::from_secs(cli.overload_lock_seconds),
                completion_timeout: Duration::from_secs(600),
            },
            fleet: xdb_bench::scenarios::fleet::FleetOptions {
                executions: cli.fleet_executions.max(1),
                list_requests: cli.fleet_list_requests.max(1),
                count_runs: cli.fleet_count_runs.max(1),
                unindexed_requests: cli.fleet_unindexed_requests.max(1),
                stops: cli.fleet_stops.max(1),
                stop_clients: cli.fleet_stop_clients.max(1),
                batch: cli.fleet_batch.max(1),
                rate_per_second: cli.fleet_rate.clamp(1, 10_000),
            },
            backlog: xdb_bench::scenarios::backlog::BacklogOptions {
                processes: cli.backlog_processes.max(1),
                start_concurrency: cli.waiting_start_concurrency.max(1),
                lone: cli.backlog_lone.max(1),
            },
            ceiling: CeilingOptions {
                clients: cli.ceiling_clients.max(1),
                duration: Duration::from_secs(cli.ceiling_seconds.max(1)),
                pgbench: cli.pgbench.clone(),
            },
            pulsar: (mode == QueueMode::Pulsar).then(|| pulsar_target.clone()),
            register_definitions: cli.register_definitions,
        };
        // Dropping the run on Ctrl-C stops the services and drops the database.
        let report = tokio::select! {
            report = run(&options) => report.with_context(|| {
                format!("the {database:?} run ({})", mode.label())
            })?,
            _ = tokio::signal::ctrl_c() => anyhow::bail!("interrupted"),
        };
        reports.push(report);
    }
    let markdown = report::to_markdown(&Machine::detect(), &reports);
    println!("{markdown}");
    for report in &reports {
        for check in report.targets() {
            if check.verdict == Verdict::NotRun {
                continue;
            }
            println!(
                "{}  {}: {} (measured {})",
                check.verdict.label(),
                report.label(&reports),
                check.target,
                check.measured
            );
        }
    }
    for comparison in Comparison::all(&reports) {
        if let Some(verdict) = comparison.verdict() {
            println!("{verdict}");
        }
    }
    if let Some(path) = cli.report {
        std::fs::write(&path, &markdown)
            .with_context(|| format!("writing the report to {}", path.display()))?;
        eprintln!("xdb-bench: report written to {}", path.display());
    }
    Ok(())
}
