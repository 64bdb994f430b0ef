//! "lone" (one two-state process at a time) and "load" (many in flight). Each process
//! is timed from sending start until wait-for-completion answers COMPLETED.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use xdb_sdk::protocol::ProcessStatus;

use super::Driver;
use crate::stats::LatencySummary;

/// Longest a single process may take before it counts as failed.
const PROCESS_TIMEOUT: Duration = Duration::from_secs(60);

impl Driver {
    /// Runs two-state process `scenario`-`index` to completion; its timing, or why it
    /// failed.
    pub async fn run_one(&self, scenario: &str, index: usize) -> Result<Timing, String> {
        let process_id = self.process_id(scenario, index);
        let began = Instant::now();
        self.start(&self.processes().bench, &process_id).await?;
        let start = began.elapsed();
        let response = self
            .client()
            .wait_for_process_completion(&process_id, PROCESS_TIMEOUT)
            .await
            .map_err(|e| format!("wait for {process_id}: {e}"))?;
        let total = began.elapsed();
        match response.status {
            ProcessStatus::Completed => Ok(Timing { total, start }),
            status => Err(format!(
                "{process_id} ended {status:?} (timed out: {}, failure: {:?})",
                response.timed_out, response.failure
            )),
        }
    }

    /// Runs `count` processes one after the other; any failure is an error. Warms the
    /// connection pools and checks the set-up before measuring.
    pub async fn warm_up(&self, count: usize) -> anyhow::Result<()> {
        for index in 0..count {
            self.run_one("warmup", index)
                .await
                .map_err(|e| anyhow::anyhow!("warm-up process failed: {e}"))?;
        }
        Ok(())
    }
}

/// How long one process took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// From sending start until wait-for-completion answered COMPLETED.
    pub total: Duration,
    /// The start call alone (the rest is the wait-for-completion call).
    pub start: Duration,
}

/// What one scenario measured.
#[derive(Debug, Clone)]
pub struct ScenarioResult {
    pub name: String,
    pub processes: usize,
    pub concurrency: usize,
    pub completed: usize,
    pub failed: usize,
    /// The first failure, verbatim.
    pub first_error: Option<String>,
    pub elapsed: Duration,
    /// Start-to-completion latencies of the completed processes.
    pub latency: LatencySummary,
    /// Latencies of their start calls alone.
    pub start_latency: LatencySummary,
}

impl ScenarioResult {
    /// Completed processes per second of wall time.
    pub fn throughput(&self) -> f64 {
        self.completed as f64 / self.elapsed.as_secs_f64().max(f64::EPSILON)
    }

    fn from_outcomes(
        name: &str,
        concurrency: usize,
        elapsed: Duration,
        outcomes: Vec<Result<Timing, String>>,
    ) -> ScenarioResult {
        let processes = outcomes.len();
        let mut latencies = Vec::with_capacity(processes);
        let mut starts = Vec::with_capacity(processes);
        let mut first_error = None;
        for outcome in outcomes {
            match outcome {
                Ok(timing) => {
                    latencies.push(timing.total);
                    starts.push(timing.start);
                }
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        ScenarioResult {
            name: name.to_string(),
            processes,
            concurrency,
            completed: latencies.len(),
            failed: processes - latencies.len(),
            first_error,
            elapsed,
            latency: LatencySummary::of(&latencies),
            start_latency: LatencySummary::of(&starts),
        }
    }
}

/// "lone": `count` processes, strictly one at a time.
pub async fn lone(driver: &Driver, count: usize) -> ScenarioResult {
    lone_as(driver, "lone", count).await
}

/// `count` processes strictly one at a time, labelled `name` (which the process ids
/// hold, so it has no spaces).
pub async fn lone_as(driver: &Driver, name: &str, count: usize) -> ScenarioResult {
    let began = Instant::now();
    let mut outcomes = Vec::with_capacity(count);
    for index in 0..count {
        outcomes.push(driver.run_one(name, index).await);
    }
    ScenarioResult::from_outcomes(name, 1, began.elapsed(), outcomes)
}

/// "load": `count` processes with `concurrency` in flight: that many tasks each loop
/// start → wait until all are taken. `name` labels the result (and the process ids).
pub async fn load(driver: &Driver, name: &str, count: usize, concurrency: usize) -> ScenarioResult {
    // Process ids hold no spaces.
    let label = format!("{}-{concurrency}", name.replace(' ', "-"));
    let next = Arc::new(AtomicUsize::new(0));
    let began = Instant::now();
    let tasks: Vec<_> = (0..concurrency.max(1))
        .map(|_| {
            let (driver, next, label) = (driver.clone(), next.clone(), label.clone());
            tokio::spawn(async move {
                let mut outcomes = Vec::new();
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= count {
                        return outcomes;
                    }
                    outcomes.push(driver.run_one(&label, index).await);
                }
            })
        })
        .collect();
    let mut outcomes = Vec::with_capacity(count);
    for task in tasks {
        match task.await {
            Ok(mut own) => outcomes.append(&mut own),
            Err(error) => outcomes.push(Err(format!("a load task panicked: {error}"))),
        }
    }
    ScenarioResult::from_outcomes(name, concurrency, began.elapsed(), outcomes)
}
