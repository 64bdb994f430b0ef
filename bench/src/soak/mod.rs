//! The soak: an hour of steady mixed load (two-state processes, timers, local-queue
//! messages, RPCs) at a share of the measured maximum, while a separate connection holds
//! a transaction open for a while in the middle and the async instances are replaced one
//! by one. Each minute it records throughput, latency, every component's memory and the
//! size, dead rows and retained history of XDB's tables. Not part of CI: see
//! BENCHMARKS.md for a run.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::cpu::Task;
use crate::database::{processes_named, BenchDatabase, Dialect};
use crate::rss;
use crate::scenarios::Driver;
use crate::services::{self, ServiceProcess, API_SERVICE, ASYNC_SERVICE};
use crate::worker::{Processes, Worker};

pub mod gauges;
mod hold;
pub mod load;
pub mod report;

pub use report::{MinuteRow, SoakReport};

/// How long a service may take to answer `/health/ready`.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// Units of the mix in flight while the maximum is measured.
const PROBE_CONCURRENCY: usize = 64;

/// What a soak does.
#[derive(Debug, Clone)]
pub struct SoakOptions {
    /// PostgreSQL or MySQL server where the throw-away database is created.
    pub admin_url: String,
    /// Minutes of load.
    pub minutes: u64,
    /// Units per second; `None`: `share` of the maximum measured first.
    pub rate: Option<f64>,
    /// The share of the maximum to run at.
    pub share: f64,
    /// How long the maximum is measured.
    pub probe: Duration,
    /// How long the transaction is held, centred on the run's middle.
    pub hold: Duration,
    /// Every how often the oldest async instance is replaced by a new one.
    pub replace_every: Duration,
    /// Async instances running at once.
    pub async_instances: usize,
    /// Units in flight at most; more are counted as shed, not sent.
    pub max_in_flight: usize,
    /// The timer unit's durable timer.
    pub timer_delay: Duration,
}

/// One async-service instance of the soak.
struct AsyncInstance {
    number: usize,
    process: ServiceProcess,
    began: Instant,
}

/// The soak's services: one API instance and the async instances, replaced in turn.
struct Services {
    api: ServiceProcess,
    instances: Vec<AsyncInstance>,
    async_binary: PathBuf,
    url: String,
    log_dir: PathBuf,
    spawned: usize,
}

impl Services {
    async fn spawn_async(&mut self) -> anyhow::Result<()> {
        self.spawned += 1;
        let addr = services::free_local_addr()?;
        let args: Vec<String> = ["--database-url", &self.url, "--listen", &addr.to_string()]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let log = self
            .log_dir
            .join(format!("{ASYNC_SERVICE}-{}.log", self.spawned));
        let mut process =
            ServiceProcess::spawn_logged(ASYNC_SERVICE, &self.async_binary, &args, log)?;
        services::wait_until_ready(&mut process, &format!("http://{addr}"), READY_TIMEOUT).await?;
        self.instances.push(AsyncInstance {
            number: self.spawned,
            process,
            began: Instant::now(),
        });
        Ok(())
    }

    /// Starts a new async instance, then stops the oldest: what a rolling replacement
    /// does. Returns what the stopped one was.
    async fn replace_oldest(&mut self) -> anyhow::Result<String> {
        self.spawn_async().await?;
        let mut oldest = self.instances.remove(0);
        let rss_mib = rss::read(oldest.process.pid()).map_or(0.0, |m| mib(m.rss_kib));
        let lived = oldest.began.elapsed().as_secs() / 60;
        let number = oldest.number;
        tokio::task::spawn_blocking(move || oldest.process.stop()).await?;
        Ok(format!(
            "async #{number} replaced by #{} (it ran {lived} min, RSS {rss_mib:.0} MiB)",
            self.spawned
        ))
    }

    fn ensure_running(&mut self) -> anyhow::Result<()> {
        self.api.ensure_running()?;
        for instance in &mut self.instances {
            instance.process.ensure_running()?;
        }
        Ok(())
    }

    fn async_rss_kib(&self) -> u64 {
        self.instances
            .iter()
            .filter_map(|i| rss::read(i.process.pid()))
            .map(|m| m.rss_kib)
            .sum()
    }
}

/// Runs a soak; the database and the services are cleaned up whatever happens.
pub async fn run(options: &SoakOptions) -> anyhow::Result<SoakReport> {
    anyhow::ensure!(options.minutes > 0, "--minutes must be at least 1");
    anyhow::ensure!(options.async_instances > 0, "at least one async instance");
    let api_binary = services::locate_binary(API_SERVICE)?;
    let async_binary = services::locate_binary(ASYNC_SERVICE)?;
    let database = BenchDatabase::create(&options.admin_url).await?;
    eprintln!(
        "xdb-bench soak: {} database {}",
        database.dialect(),
        database.name()
    );
    let server = database.server_version().await.unwrap_or_default();
    let measured = soak(options, &database, &api_binary, async_binary).await;
    database.drop_database().await?;
    let mut report = measured?;
    report.server = server;
    Ok(report)
}

async fn soak(
    options: &SoakOptions,
    database: &BenchDatabase,
    api_binary: &Path,
    async_binary: PathBuf,
) -> anyhow::Result<SoakReport> {
    let log_dir = std::env::temp_dir().join(database.name());
    std::fs::create_dir_all(&log_dir).with_context(|| format!("creating {}", log_dir.display()))?;
    eprintln!("xdb-bench soak: service logs in {}", log_dir.display());
    let url = database.url().to_string();
    let api_addr = services::free_local_addr()?;
    let api_args: Vec<String> = ["--database-url", &url, "--listen", &api_addr.to_string()]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let api = ServiceProcess::spawn(API_SERVICE, api_binary, &api_args, &log_dir)?;
    let mut services = Services {
        api,
        instances: Vec::new(),
        async_binary,
        url: url.clone(),
        log_dir: log_dir.clone(),
        spawned: 0,
    };
    let service_url = format!("http://{api_addr}");
    services::wait_until_ready(&mut services.api, &service_url, READY_TIMEOUT).await?;
    for _ in 0..options.async_instances {
        services.spawn_async().await?;
    }
    let processes = Processes::new(options.timer_delay);
    let worker = Worker::start(&processes).await?;
    let driver = Driver::new(&service_url, worker.url(), processes);
    driver.warm_up(20).await?;

    let (maximum, next_index, probe_error) =
        load::maximum(&driver, 0, PROBE_CONCURRENCY, options.probe).await;
    if let Some(error) = probe_error {
        anyhow::bail!("a unit failed while the maximum was measured: {error}");
    }
    let rate = options.rate.unwrap_or(maximum * options.share);
    eprintln!(
        "xdb-bench soak: maximum {maximum:.0} units/s with {PROBE_CONCURRENCY} in flight; \
         running {rate:.0} units/s for {} min",
        options.minutes
    );
    database.settle().await?;

    let duration = Duration::from_secs(options.minutes * 60);
    let outcomes = Arc::new(load::Outcomes::default());
    let load_task = {
        let (driver, outcomes) = (driver.clone(), outcomes.clone());
        let max_in_flight = options.max_in_flight;
        tokio::spawn(async move {
            load::open_loop(&driver, next_index, rate, duration, max_in_flight, outcomes).await
        })
    };
    let began = Instant::now();
    let hold = hold_window(options.minutes, options.hold.as_secs() / 60);
    let replace_minutes = (options.replace_every.as_secs() / 60).max(1);
    let mut held = None;
    let mut samples = Vec::new();
    for minute in 1..=options.minutes {
        tokio::time::sleep_until((began + Duration::from_secs(minute * 60)).into()).await;
        let mut events = Vec::new();
        services.ensure_running()?;
        let sample = MinuteSample {
            api_rss_kib: rss::read(services.api.pid()).map_or(0, |m| m.rss_kib),
            async_rss_kib: services.async_rss_kib(),
            db_kib: rss::pss_of(&database_pids(database).await).map_or(0, |m| m.rss_kib),
            gauges: gauges::read(database.dialect(), &url)
                .await
                .unwrap_or_else(|e| {
                    eprintln!("xdb-bench soak: reading the gauges failed: {e:#}");
                    gauges::DatabaseGauges::default()
                }),
        };
        if let Some((from, until)) = hold.filter(|(from, _)| *from == minute) {
            held = Some(hold::HeldTransaction::begin(database.dialect(), &url).await?);
            events.push(format!(
                "a transaction is held open for {} min",
                until - from
            ));
        }
        if hold.is_some_and(|(_, until)| until == minute) {
            if let Some(transaction) = held.take() {
                transaction.end().await?;
                events.push("the held transaction ends".to_string());
            }
        }
        if minute % replace_minutes == 0 && minute < options.minutes {
            events.push(services.replace_oldest().await?);
        }
        eprintln!(
            "xdb-bench soak: minute {minute}: {}",
            sample.line(events.join("; "))
        );
        samples.push((sample, events));
    }
    load_task.await.context("the load task")?;
    services.ensure_running()?;
    let first_error = outcomes
        .first_error
        .lock()
        .map(|e| e.clone())
        .unwrap_or(None);
    let report = SoakReport::new(
        database.dialect(),
        options,
        maximum,
        rate,
        outcomes.take(),
        samples,
        first_error,
    );
    services.api.stop();
    for instance in &mut services.instances {
        instance.process.stop();
    }
    if report.failed() == 0 {
        let _ = std::fs::remove_dir_all(&log_dir);
    } else {
        eprintln!(
            "xdb-bench soak: units failed; service logs kept in {}",
            log_dir.display()
        );
    }
    Ok(report)
}

/// The minutes (ends of) at which the held transaction begins and ends: centred, at
/// most `hold_minutes` long, with at least a minute of load before and after it, so the
/// report can compare; `None` when the run is too short for that.
fn hold_window(minutes: u64, hold_minutes: u64) -> Option<(u64, u64)> {
    let hold = hold_minutes.min(minutes.saturating_sub(2));
    let from = ((minutes - hold) / 2).max(1);
    (hold > 0).then_some((from, from + hold))
}

/// What the soak read at the end of one minute.
#[derive(Debug, Clone, Default)]
pub struct MinuteSample {
    pub api_rss_kib: u64,
    /// Summed over the async instances running then.
    pub async_rss_kib: u64,
    /// The database server's proportional set size.
    pub db_kib: u64,
    pub gauges: gauges::DatabaseGauges,
}

impl MinuteSample {
    fn line(&self, events: String) -> String {
        format!(
            "API {:.0} MiB, async {:.0} MiB, database {:.0} MiB, XDB tables {:.1} MiB, \
             dead rows {}, horizon {}; {events}",
            mib(self.api_rss_kib),
            mib(self.async_rss_kib),
            mib(self.db_kib),
            self.gauges.total_bytes() as f64 / 1048576.0,
            self.gauges.total_dead_rows(),
            self.gauges.horizon
        )
    }
}

/// The database server's processes, looked up anew: PostgreSQL's backends come and go.
async fn database_pids(database: &BenchDatabase) -> Vec<u32> {
    match database.dialect() {
        Dialect::Postgres => processes_named(&["postgres"]),
        Dialect::MySql => database
            .server_ids()
            .await
            .unwrap_or_default()
            .into_iter()
            .filter_map(|task| match task {
                Task::Process(pid) => Some(pid),
                Task::Thread { .. } => None,
            })
            .collect(),
    }
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

#[cfg(test)]
mod tests {
    use super::hold_window;

    #[test]
    fn the_hold_is_centred_with_load_before_and_after_it() {
        assert_eq!(hold_window(60, 10), Some((25, 35)));
        assert_eq!(hold_window(10, 10), Some((1, 9)));
        assert_eq!(hold_window(3, 1), Some((1, 2)));
        assert_eq!(hold_window(2, 10), None);
        assert_eq!(hold_window(60, 0), None);
    }
}
