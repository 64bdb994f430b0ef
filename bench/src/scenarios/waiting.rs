//! Many waiting processes: `count` processes are started (many start calls in flight)
//! and each parks on a far timer or a local-queue message; once all wait, the async
//! service's memory is read and the load scenario runs again beside them.
//!
//! "Throughput unchanged while they wait" compares the load beside them with the load
//! run just before they were started, on the same services and database: runs minutes
//! apart differ by several percent on this machine whatever they carry, so each side is
//! run `runs` times (each after the database settled) and their combined rates compared.

use std::time::{Duration, Instant};

use super::{load, Driver, ScenarioResult};
use crate::rss::{self, Sampler};
use crate::worker::Recorder;

/// How often progress is printed while the processes are started.
const PROGRESS_EVERY: Duration = Duration::from_secs(15);
/// Time the async service may take per waiting process to reach its waiting state,
/// beyond which the scenario gives up waiting (generous: 100 per second).
const PER_PROCESS_BUDGET: Duration = Duration::from_millis(10);

/// What the waiting scenario measured.
#[derive(Debug, Clone, Default)]
pub struct WaitingResult {
    pub processes: usize,
    pub failed_starts: usize,
    /// Processes whose `waitUntil` was never called within the time allowed.
    pub not_waiting: usize,
    pub first_error: Option<String>,
    /// Start calls alone: from the first until the last answered.
    pub starts_elapsed: Duration,
    /// From the first start call until every process's `waitUntil` was called.
    pub all_waiting_after: Duration,
    /// The async service's memory; its peak includes the kernel's high-water mark of
    /// the service's whole life (which covers earlier scenarios).
    pub async_memory: ServiceMemory,
    /// The API service's memory; its peak is sampled over this scenario alone, as its
    /// high-water mark also holds earlier scenarios' waits for completion.
    pub api_memory: ServiceMemory,
    /// The load scenario just before they were started: the reference.
    pub reference: Vec<ScenarioResult>,
    /// The load scenario while they wait.
    pub beside: Vec<ScenarioResult>,
}

/// One service's resident memory over the scenario, in KiB.
#[derive(Debug, Clone, Copy, Default)]
pub struct ServiceMemory {
    /// Before the processes were started.
    pub before_kib: u64,
    /// Once all were waiting.
    pub waiting_kib: u64,
    /// After the load scenario ran beside them.
    pub after_load_kib: u64,
    /// The largest resident size sampled every 100 ms.
    pub peak_kib: u64,
}

impl WaitingResult {
    /// Processes per second from the first start call until all were waiting.
    pub fn start_rate(&self) -> f64 {
        let started = self.processes - self.failed_starts - self.not_waiting;
        started as f64 / self.all_waiting_after.as_secs_f64().max(f64::EPSILON)
    }

    /// Every load run of the scenario: the references, then those beside them.
    pub fn loads(&self) -> impl Iterator<Item = &ScenarioResult> {
        self.reference.iter().chain(&self.beside)
    }
}

/// Completed processes per second over all of `runs` together.
pub fn combined_throughput(runs: &[ScenarioResult]) -> Option<f64> {
    let elapsed: f64 = runs.iter().map(|r| r.elapsed.as_secs_f64()).sum();
    let completed: usize = runs.iter().map(|r| r.completed).sum();
    (elapsed > 0.0).then(|| completed as f64 / elapsed)
}

/// What the waiting scenario needs to know.
#[derive(Debug, Clone, Copy)]
pub struct WaitingOptions {
    pub processes: usize,
    /// Start calls in flight.
    pub start_concurrency: usize,
    /// The load scenario beside them: processes and in-flight level.
    pub load_processes: usize,
    pub load_concurrency: usize,
    /// Load runs on each side of the comparison.
    pub runs: usize,
}

/// The services whose memory the waiting scenario reads.
#[derive(Debug, Clone, Copy)]
pub struct ServicePids {
    pub api: u32,
    pub async_service: u32,
}

/// Runs the waiting scenario; `pids` are the services to watch, and `settle` runs
/// before each load run.
pub async fn waiting<F: std::future::Future<Output = ()>>(
    driver: &Driver,
    options: WaitingOptions,
    pids: ServicePids,
    settle: impl Fn() -> F,
) -> WaitingResult {
    let rss_of = |pid| rss::read(pid).map_or(0, |m| m.rss_kib);
    let mut reference = Vec::new();
    for run in 1..=options.runs {
        settle().await;
        eprintln!(
            "xdb-bench: waiting: reference load {run} of {} ({} processes, {} in flight)",
            options.runs, options.load_processes, options.load_concurrency
        );
        let name = format!("load before waiting {run}");
        reference.push(
            load(
                driver,
                &name,
                options.load_processes,
                options.load_concurrency,
            )
            .await,
        );
    }
    let mut result = WaitingResult {
        processes: options.processes,
        reference,
        ..WaitingResult::default()
    };
    result.async_memory.before_kib = rss_of(pids.async_service);
    result.api_memory.before_kib = rss_of(pids.api);
    let sampler = Sampler::start(pids.async_service, Duration::from_millis(100));
    let api_sampler = Sampler::start_rss(pids.api, Duration::from_millis(100));
    let recorder = driver.recorder();
    let already = recorder.waiting_count();
    let began = Instant::now();
    let definition = driver.processes().waiting.clone();
    // Progress on stderr: starting 100,000 processes takes minutes.
    let progress = {
        let recorder = driver.processes().recorder.clone();
        let total = options.processes;
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(PROGRESS_EVERY).await;
                eprintln!(
                    "xdb-bench: waiting: {} of {total} processes waiting after {:.0} s",
                    recorder.waiting_count() - already,
                    began.elapsed().as_secs_f64()
                );
            }
        })
    };
    let starts = driver
        .start_many(
            &definition,
            "waiting",
            options.processes,
            options.start_concurrency,
        )
        .await;
    result.failed_starts = starts.failed;
    result.first_error = starts.first_error;
    result.starts_elapsed = starts.elapsed;
    let budget = PER_PROCESS_BUDGET * u32::try_from(options.processes).unwrap_or(u32::MAX)
        + Duration::from_secs(60);
    let all = |r: &Recorder| r.waiting_count() - already >= starts.started;
    recorder.wait_for(budget, all).await;
    progress.abort();
    result.all_waiting_after = began.elapsed();
    result.not_waiting = starts.started - (recorder.waiting_count() - already).min(starts.started);
    // The last waitUntil answers are still being committed: let them land.
    tokio::time::sleep(Duration::from_secs(1)).await;
    result.async_memory.waiting_kib = rss_of(pids.async_service);
    result.api_memory.waiting_kib = rss_of(pids.api);
    for run in 1..=options.runs {
        settle().await;
        eprintln!(
            "xdb-bench: waiting: all {} waiting after {:.1} s; load {run} of {} ({} processes, {} in flight) beside them",
            starts.started,
            result.all_waiting_after.as_secs_f64(),
            options.runs,
            options.load_processes,
            options.load_concurrency
        );
        let name = format!("load while waiting {run}");
        let beside = load(
            driver,
            &name,
            options.load_processes,
            options.load_concurrency,
        )
        .await;
        result.beside.push(beside);
    }
    result.async_memory.after_load_kib = rss_of(pids.async_service);
    result.api_memory.after_load_kib = rss_of(pids.api);
    result.async_memory.peak_kib = sampler.finish(pids.async_service).await.peak_kib;
    result.api_memory.peak_kib = api_sampler.finish_sampled().await.peak_kib;
    result
}
