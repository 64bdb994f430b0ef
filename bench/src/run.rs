//! One benchmark run, start to finish: database, services, worker, scenarios, report.

use std::time::Duration;

use anyhow::Context as _;

use crate::cdc::{Capture, PulsarTarget};
use crate::cpu::{CpuSnapshot, Task, BENCH, DB_SERVER, DB_SESSIONS};
use crate::database::BenchDatabase;
use crate::profile;
use crate::report::Report;
use crate::rss::Sampler;
use crate::scenarios::{self, Driver};
use crate::services::{self, ServiceProcess, API_SERVICE, ASYNC_SERVICE};
use crate::worker::Worker;

/// How often the services' memory is sampled.
const RSS_INTERVAL: Duration = Duration::from_millis(100);
/// CPU accounting groups, in report order.
const CPU_GROUPS: [&str; 5] = [API_SERVICE, ASYNC_SERVICE, DB_SESSIONS, DB_SERVER, BENCH];
/// How long the API service may take to answer `/health/ready`.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// What to run.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// PostgreSQL or MySQL server URL (any database on it; the scheme picks the
    /// dialect) where the bench database is created.
    pub admin_url: String,
    /// Processes of the "lone" scenario.
    pub lone: usize,
    /// Processes of the "load" scenario.
    pub processes: usize,
    /// Processes in flight in the "load" scenario.
    pub concurrency: usize,
    /// Unmeasured processes run first, one at a time.
    pub warm_up: usize,
    /// Pulsar CDC mode: the async service consumes Debezium's change events from this
    /// broker; `None` runs the database queue.
    pub pulsar: Option<PulsarTarget>,
}

/// Runs the bench; the database and the services are cleaned up whatever happens.
pub async fn run(options: &BenchOptions) -> anyhow::Result<Report> {
    let api_binary = services::locate_binary(API_SERVICE)?;
    let async_binary = services::locate_binary(ASYNC_SERVICE)?;
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
            report.statements = Some(profile::top_statements(&database, 25).await?);
        }
        report.server = server;
    }
    database.drop_database().await?;
    measured
}

/// Starts the services and the worker, runs the scenarios, stops the services.
async fn measure(
    options: &BenchOptions,
    database: &BenchDatabase,
    capture: Option<&Capture>,
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
        async_args.extend(args(&[
            "--set",
            "queue.mode=pulsar",
            "--set",
            &format!("pulsar.service_url={}", target.broker_url),
            "--set",
            &format!("pulsar.topic_prefix={}", capture.topic_prefix),
        ]));
    }
    let mut async_service =
        ServiceProcess::spawn(ASYNC_SERVICE, async_binary, &async_args, &log_dir)?;
    let service_url = format!("http://{api_addr}");
    services::wait_until_ready(&mut api, &service_url, READY_TIMEOUT).await?;
    async_service.ensure_running()?;
    let worker = Worker::start().await?;
    let driver = Driver::new(&service_url, worker.url());

    let api_rss = Sampler::start(api.pid(), RSS_INTERVAL);
    let async_rss = Sampler::start(async_service.pid(), RSS_INTERVAL);
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
    eprintln!(
        "xdb-bench: lone ({} processes, one at a time)",
        options.lone
    );
    let lone = scenarios::lone(&driver, options.lone).await;
    eprintln!(
        "xdb-bench: load ({} processes, {} in flight)",
        options.processes, options.concurrency
    );
    let cpu_groups = || async {
        let sessions = database.session_ids().await.unwrap_or_else(|error| {
            eprintln!("xdb-bench: cannot list the database's sessions: {error:#}");
            Vec::new()
        });
        let server = database.server_ids().await.unwrap_or_else(|error| {
            eprintln!("xdb-bench: cannot find the database server's processes: {error:#}");
            Vec::new()
        });
        CpuSnapshot::take(&[
            (API_SERVICE, vec![Task::Process(api.pid())]),
            (ASYNC_SERVICE, vec![Task::Process(async_service.pid())]),
            (DB_SESSIONS, sessions),
            (DB_SERVER, server),
            (BENCH, vec![Task::Process(std::process::id())]),
        ])
    };
    let cpu_before = cpu_groups().await;
    let load = scenarios::load(&driver, options.processes, options.concurrency).await;
    let cpu_after = cpu_groups().await;
    let load_cpu = cpu_after.since(&cpu_before, &CPU_GROUPS);
    let api_memory = api_rss.finish(api.pid()).await;
    let async_memory = async_rss.finish(async_service.pid()).await;
    api.ensure_running()?;
    async_service.ensure_running()?;
    api.stop();
    async_service.stop();
    if lone.failed + load.failed == 0 {
        let _ = std::fs::remove_dir_all(&log_dir);
    } else {
        eprintln!(
            "xdb-bench: processes failed; service logs kept in {}",
            log_dir.display()
        );
    }
    Ok(Report {
        dialect: database.dialect(),
        queue: if options.pulsar.is_some() {
            "Pulsar CDC"
        } else {
            "database queue"
        },
        server: String::new(),
        date: chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string(),
        lone,
        load,
        api_memory,
        async_memory,
        processes: options.warm_up + options.lone + options.processes,
        db: None,
        load_cpu: Some(load_cpu),
        statements: None,
    })
}

fn args(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| v.to_string()).collect()
}
