//! One benchmark run, start to finish: database, services, worker, scenarios, report.

use std::time::Duration;

use anyhow::Context as _;

use crate::cdc::{Capture, Standalone};
use crate::ceiling;
use crate::cpu::{CpuSnapshot, Task, BENCH, DB_SERVER, DB_SESSIONS, PULSAR};
use crate::database::{processes_named, BenchDatabase, Dialect};
use crate::limit;
use crate::options::{BenchOptions, Scenario};
use crate::profile;
use crate::report::Report;
use crate::rss::{self, Sampler};
use crate::scenarios::waiting::{ServicePids, WaitingOptions};
use crate::scenarios::{self, Driver};
use crate::services::{self, ServiceProcess, API_SERVICE, ASYNC_SERVICE};
use crate::worker::{Processes, Worker};

/// How often the services' memory is sampled.
const RSS_INTERVAL: Duration = Duration::from_millis(100);
/// How often the database server's memory is sampled: summing the proportional set
/// size of every server process reads each one's page tables, so less often.
const DB_MEMORY_INTERVAL: Duration = Duration::from_secs(1);
/// How long the API service may take to answer `/health/ready`.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs the bench; the database and the services are cleaned up whatever happens.
pub async fn run(options: &BenchOptions) -> anyhow::Result<Report> {
    let api_binary = services::locate_binary(API_SERVICE)?;
    let async_binary = services::locate_binary(ASYNC_SERVICE)?;
    // Before anything is created: Pulsar mode measures the broker's JVM, and needs it.
    let standalone = options.pulsar.as_ref().map(Standalone::find).transpose()?;
    if let Some(standalone) = standalone {
        eprintln!(
            "xdb-bench: Pulsar standalone JVM: pid {} (its CPU and memory are measured)",
            standalone.pid
        );
    }
    let database = BenchDatabase::create(&options.admin_url).await?;
    eprintln!(
        "xdb-bench: {} database {}",
        database.dialect(),
        database.name()
    );
    let server = database.server_version().await.unwrap_or_default();
    let profiling = profile::enable(&database).await?;
    let status_before = database.status_snapshot().await?;
    let capture = match &options.pulsar {
        Some(target) => Some(Capture::start(target, database.name(), database.url()).await?),
        None => None,
    };
    let mut measured = measure(
        options,
        &database,
        capture.as_ref(),
        standalone,
        &api_binary,
        &async_binary,
    )
    .await;
    if let Some(capture) = capture {
        capture.stop().await?;
    }
    if let Ok(report) = &mut measured {
        // The services are stopped: their sessions end and flush their statistics.
        database.wait_for_idle(Duration::from_secs(10)).await?;
        report.db = database.work(status_before.as_ref()).await?;
        if profiling {
            let prepared = std::mem::take(&mut report.prepared_statements);
            report.statements = Some(profile::top_statements(&database, 25, prepared).await?);
        }
        report.server = server;
        if options.runs(Scenario::Pgbench) {
            // Last, on the quiet server: the services are stopped.
            eprintln!(
                "xdb-bench: commit-rate ceiling ({} clients, {:?})",
                options.ceiling.clients, options.ceiling.duration
            );
            report.ceiling = Some(
                ceiling::measure(&database, &options.ceiling)
                    .await
                    .map_err(|e| format!("{e:#}")),
            );
            eprintln!(
                "xdb-bench: XDB's statements without XDB ({} clients, {:?})",
                options.concurrency, options.ceiling.duration
            );
            report.limit = Some(
                limit::measure(&database, options.concurrency, &options.ceiling)
                    .await
                    .map_err(|e| format!("{e:#}")),
            );
        }
    }
    database.drop_database().await?;
    measured
}

/// Starts the services and the worker, runs the scenarios, stops the services.
async fn measure(
    options: &BenchOptions,
    database: &BenchDatabase,
    capture: Option<&Capture>,
    standalone: Option<Standalone>,
    api_binary: &std::path::Path,
    async_binary: &std::path::Path,
) -> anyhow::Result<Report> {
    let log_dir = std::env::temp_dir().join(database.name());
    std::fs::create_dir_all(&log_dir).with_context(|| format!("creating {}", log_dir.display()))?;
    eprintln!(
        "xdb-bench: service logs in {} (removed when no process failed)",
        log_dir.display()
    );
    let url = database.url().to_string();
    let api_addr = services::free_local_addr()?;
    let mut api = ServiceProcess::spawn(
        API_SERVICE,
        api_binary,
        &args(&["--database-url", &url, "--listen", &api_addr.to_string()]),
        &log_dir,
    )?;
    // Its own free port for the async service's health and internal API too (on MySQL
    // the API service wakes it there), so parallel runs never collide.
    let async_addr = services::free_local_addr()?;
    let mut async_args = args(&["--database-url", &url, "--listen", &async_addr.to_string()]);
    if let (Some(capture), Some(target)) = (capture, &options.pulsar) {
        async_args.extend(capture.async_service_args(target));
    }
    let mut async_service =
        ServiceProcess::spawn(ASYNC_SERVICE, async_binary, &async_args, &log_dir)?;
    let service_url = format!("http://{api_addr}");
    services::wait_until_ready(&mut api, &service_url, READY_TIMEOUT).await?;
    async_service.ensure_running()?;
    let processes = Processes::new(options.timer_delay);
    let worker = Worker::start(&processes).await?;
    if options.register_definitions {
        worker.register_definitions(&service_url).await?;
    }
    let driver = Driver::new(&service_url, worker.url(), processes);

    let api_rss = Sampler::start(api.pid(), RSS_INTERVAL);
    let async_rss = Sampler::start(async_service.pid(), RSS_INTERVAL);
    // Running before this run (the bench's earlier runs, the broker's other users):
    // their resident size as sampled, not their life's high-water mark.
    let bench_rss = Sampler::start_rss(std::process::id(), RSS_INTERVAL);
    let pulsar_rss = standalone.map(|s| Sampler::start_rss(s.pid, RSS_INTERVAL));
    let db_memory = database_memory(database).await;
    eprintln!("xdb-bench: warm-up ({} processes)", options.warm_up);
    let warm_up = driver.warm_up(options.warm_up).await;
    if let Err(error) = warm_up {
        async_service.ensure_running()?;
        return Err(error.context(format!(
            "logs: {} and {}",
            log_dir.join("xdb-api-service.log").display(),
            log_dir.join("xdb-async-service.log").display()
        )));
    }
    let mut report = Report::new(database.dialect(), options);
    if options.runs(Scenario::Lone) {
        eprintln!(
            "xdb-bench: lone ({} processes, one at a time)",
            options.lone
        );
        report.lone = Some(scenarios::lone(&driver, options.lone).await);
    }
    let cpu_groups = || async {
        let sessions = database.session_ids().await.unwrap_or_else(|error| {
            eprintln!("xdb-bench: cannot list the database's sessions: {error:#}");
            Vec::new()
        });
        let server = database.server_ids().await.unwrap_or_else(|error| {
            eprintln!("xdb-bench: cannot find the database server's processes: {error:#}");
            Vec::new()
        });
        let mut groups = vec![
            (API_SERVICE, vec![Task::Process(api.pid())]),
            (ASYNC_SERVICE, vec![Task::Process(async_service.pid())]),
        ];
        if let Some(standalone) = standalone {
            groups.push((PULSAR, standalone.tasks()));
        }
        groups.extend([
            (DB_SESSIONS, sessions),
            (DB_SERVER, server),
            (BENCH, vec![Task::Process(std::process::id())]),
        ]);
        CpuSnapshot::take(&groups)
    };
    // CPU accounting groups, in report order.
    let cpu_order: Vec<&str> = [API_SERVICE, ASYNC_SERVICE]
        .into_iter()
        .chain(standalone.map(|_| PULSAR))
        .chain([DB_SESSIONS, DB_SERVER, BENCH])
        .collect();
    // Waiting compares against the judged level, so it runs that level if load does not.
    let levels = if options.runs(Scenario::Load) {
        options.load_levels()
    } else if options.runs(Scenario::Waiting) {
        vec![options.concurrency]
    } else {
        Vec::new()
    };
    for level in levels {
        eprintln!(
            "xdb-bench: load ({} processes, {level} in flight)",
            options.processes
        );
        settle(database).await;
        let judged = level == options.concurrency;
        let cpu_before = if judged {
            Some(cpu_groups().await)
        } else {
            None
        };
        report
            .levels
            .push(scenarios::load(&driver, "load", options.processes, level).await);
        if let Some(before) = cpu_before {
            report.load_cpu = Some(cpu_groups().await.since(&before, &cpu_order));
        }
    }
    if options.runs(Scenario::Rpc) {
        eprintln!(
            "xdb-bench: rpc ({} calls, one at a time)",
            options.rpc_calls
        );
        report.rpc = Some(scenarios::rpc::rpc(&driver, options.rpc_calls).await);
    }
    if options.runs(Scenario::Queue) {
        eprintln!(
            "xdb-bench: queue ({} messages, one at a time)",
            options.queue_messages
        );
        report.queue_latency = Some(scenarios::queue::queue(&driver, options.queue_messages).await);
    }
    if options.runs(Scenario::Timers) {
        settle(database).await;
        eprintln!(
            "xdb-bench: timers ({} processes started together, {:?} timers)",
            options.timers, options.timer_delay
        );
        report.timers =
            Some(scenarios::timers::timers(&driver, options.timers, options.timer_delay).await);
    }
    // Memory of the scenarios above; the waiting scenario reports its own.
    report.api_memory = api_rss.finish(api.pid()).await;
    report.async_memory = async_rss.finish(async_service.pid()).await;
    report.bench_memory = bench_rss.finish_sampled().await;
    if let Some(sampler) = pulsar_rss {
        report.pulsar_memory = Some(sampler.finish_sampled().await);
    }
    report.db_memory = match db_memory {
        Some(sampler) => Some(sampler.finish_sampled().await).filter(|m| m.samples > 0),
        None => None,
    };
    report.pulsar_pid = standalone.map(|s| s.pid);
    if options.runs(Scenario::Waiting) {
        eprintln!(
            "xdb-bench: waiting ({} processes, {} start calls in flight)",
            options.waiting, options.waiting_start_concurrency
        );
        let waiting = WaitingOptions {
            processes: options.waiting,
            start_concurrency: options.waiting_start_concurrency,
            load_processes: options.processes,
            load_concurrency: options.concurrency,
            runs: WAITING_LOAD_RUNS,
        };
        report.waiting = Some(
            scenarios::waiting::waiting(
                &driver,
                waiting,
                ServicePids {
                    api: api.pid(),
                    async_service: async_service.pid(),
                },
                || settle(database),
            )
            .await,
        );
    }
    if options.runs(Scenario::Overload) {
        settle(database).await;
        eprintln!(
            "xdb-bench: overload ({} starts, {} in flight, task table locked {:?})",
            options.overload.starts, options.overload.clients, options.overload.lock
        );
        report.overload = Some(
            scenarios::overload::overload(
                &driver,
                database,
                &service_url,
                api.pid(),
                options.overload,
            )
            .await?,
        );
    }
    if options.runs(Scenario::Fleet) {
        eprintln!(
            "xdb-bench: fleet ({} executions over as many business rows)",
            options.fleet.executions
        );
        let context = scenarios::fleet::FleetContext {
            database,
            service_url: &service_url,
            worker_url: worker.url(),
            async_pid: async_service.pid(),
            api_binary,
            log_dir: &log_dir,
        };
        report.fleet = Some(scenarios::fleet::fleet(&context, options.fleet).await?);
    }
    if options.runs(Scenario::Backlog) {
        settle(database).await;
        eprintln!(
            "xdb-bench: backlog ({} processes of priority 5 queued, then {} of priority 1)",
            options.backlog.processes, options.backlog.lone
        );
        // Queued with no async service running, so that the backlog is all there when
        // it starts again.
        async_service.stop();
        let queued = scenarios::backlog::queue(&driver, options.backlog).await?;
        async_service = ServiceProcess::spawn(ASYNC_SERVICE, async_binary, &async_args, &log_dir)?;
        let async_url = format!("http://{async_addr}");
        services::wait_until_ready(&mut async_service, &async_url, READY_TIMEOUT).await?;
        report.backlog = Some(scenarios::backlog::beside(&driver, queued).await);
    }
    api.ensure_running()?;
    async_service.ensure_running()?;
    report.prepared_statements =
        profile::prepared_statements(database)
            .await
            .unwrap_or_else(|error| {
                eprintln!(
                    "xdb-bench: reading the prepared statements' statistics failed: {error:#}"
                );
                Vec::new()
            });
    api.stop();
    async_service.stop();
    if report.failures() == 0 {
        let _ = std::fs::remove_dir_all(&log_dir);
    } else {
        eprintln!(
            "xdb-bench: processes failed; service logs kept in {}",
            log_dir.display()
        );
    }
    report.processes = report.processes_started(options.warm_up);
    Ok(report)
}

/// Load runs on each side of the waiting scenario's comparison (see
/// [`scenarios::waiting`]).
const WAITING_LOAD_RUNS: usize = 2;

/// Samples the whole database server's memory on this machine: the summed proportional
/// set size of every `postgres` process (looked up anew each time: backends come and
/// go), or of the `mariadbd` process. `None` when the server is not on this machine.
async fn database_memory(database: &BenchDatabase) -> Option<Sampler> {
    match database.dialect() {
        Dialect::Postgres => Some(Sampler::watch(DB_MEMORY_INTERVAL, || {
            rss::pss_of(&processes_named(&["postgres"]))
        })),
        Dialect::MySql => {
            let server: Vec<u32> = database
                .server_ids()
                .await
                .unwrap_or_default()
                .into_iter()
                .filter_map(|task| match task {
                    Task::Process(pid) => Some(pid),
                    Task::Thread { .. } => None,
                })
                .collect();
            (!server.is_empty())
                .then(|| Sampler::watch(DB_MEMORY_INTERVAL, move || rss::pss_of(&server)))
        }
    }
}

/// [`BenchDatabase::settle`]; a failure is reported and the run goes on.
async fn settle(database: &BenchDatabase) {
    if let Err(error) = database.settle().await {
        eprintln!("xdb-bench: settling the database failed: {error:#}");
    }
}

fn args(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| v.to_string()).collect()
}
