//! "backlog": how long a priority-1 process takes while a backlog of priority-5 ones
//! drains, beside the "lone" scenario's idle figure. The backlog's processes are all
//! started while no async service runs (the run stops it first), so that their first
//! tasks wait in the queue together; the service then starts again, and lone
//! priority-1 processes run one after another while it works through the backlog. The
//! executions of the backlog still running when the last lone one completed are
//! counted, to show that the backlog lasted the whole measurement.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use serde_json::json;
use xdb_sdk::protocol::ProcessExecutionCountRequest;

use super::throughput::lone_as;
use super::{Driver, ScenarioResult};

/// Unmeasured priority-1 processes run first.
const WARM_UP: usize = 5;

/// Sizes of the "backlog" scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BacklogOptions {
    /// Priority-5 processes queued before the async service starts.
    pub processes: usize,
    /// Their start calls in flight.
    pub start_concurrency: usize,
    /// Priority-1 processes then run one at a time.
    pub lone: usize,
}

/// What the "backlog" scenario measured.
#[derive(Debug, Clone)]
pub struct BacklogResult {
    pub options: BacklogOptions,
    /// Backlog processes started, and how long their starts took.
    pub queued: usize,
    pub queued_in: Duration,
    /// The priority-1 processes, timed as "lone" times its own.
    pub urgent: ScenarioResult,
    /// Backlog executions still running when the last priority-1 one completed.
    pub still_queued: Option<u64>,
}

/// The backlog queued by [`queue`].
#[derive(Debug, Clone, Copy)]
pub struct Queued {
    options: BacklogOptions,
    started: usize,
    took: Duration,
}

/// Starts the backlog's priority-5 processes; the async service must not be running,
/// so that their first tasks all wait.
pub async fn queue(driver: &Driver, options: BacklogOptions) -> anyhow::Result<Queued> {
    let began = Instant::now();
    let outcome = driver
        .with_priority(5)
        .start_many(
            &driver.processes().bench,
            "backlog",
            options.processes,
            options.start_concurrency,
        )
        .await;
    if let Some(error) = &outcome.first_error {
        anyhow::bail!("{} backlog starts failed: {error}", outcome.failed);
    }
    Ok(Queued {
        options,
        started: outcome.started,
        took: began.elapsed(),
    })
}

/// Runs the priority-1 processes one at a time, once the async service runs again
/// (after a few unmeasured ones: the instance's first claims open its connections).
pub async fn beside(driver: &Driver, queued: Queued) -> BacklogResult {
    let urgent = driver.with_priority(1);
    lone_as(&urgent, "urgent-warmup", WARM_UP).await;
    let urgent = lone_as(&urgent, "urgent", queued.options.lone).await;
    let still_queued = running(driver, driver.processes().bench.process_type()).await;
    BacklogResult {
        options: queued.options,
        queued: queued.started,
        queued_in: queued.took,
        urgent,
        still_queued,
    }
}

/// Executions of `process_type` still running, by an exact count; `None` when the
/// count failed (said on stderr).
async fn running(driver: &Driver, process_type: &str) -> Option<u64> {
    let request: ProcessExecutionCountRequest = serde_json::from_value(json!({
        "processType": process_type,
        "where": {"field": "status", "op": "=", "value": "RUNNING"},
    }))
    .expect("a count request");
    match driver.client().count(&request).await {
        Ok(counted) => Some(counted.count),
        Err(error) => {
            eprintln!("xdb-bench: cannot count the backlog left: {error}");
            None
        }
    }
}

impl BacklogResult {
    /// The section of the report; `idle_p50` is the "lone" scenario's p50 of the same
    /// run, when it ran.
    pub fn write_markdown(&self, out: &mut String, idle_p50: Option<Duration>) {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let _ = writeln!(out, "\n### Priority 1 beside a backlog of priority 5\n");
        let _ = writeln!(
            out,
            "{} two-state processes of priority 5 queued while no async service ran \
             (started in {:.1} s, {} start calls in flight); then the async service \
             started, and {} processes of priority 1 ran one at a time while it worked \
             through them. Latency from sending start until wait-for-completion answered, \
             in ms.\n",
            self.queued,
            self.queued_in.as_secs_f64(),
            self.options.start_concurrency,
            self.urgent.completed,
        );
        let latency = &self.urgent.latency;
        let ratio = idle_p50
            .filter(|idle| !idle.is_zero())
            .map_or("-".to_string(), |idle| {
                format!("{:.2}", latency.p50.as_secs_f64() / idle.as_secs_f64())
            });
        let _ = writeln!(
            out,
            "| priority-1 p50 | p99 | max | failed | idle lone p50 | p50 / idle | backlog \
             left running at the end |\n|---|---|---|---|---|---|---|\n\
             | {:.2} | {:.2} | {:.2} | {} | {} | {ratio} | {} |",
            ms(latency.p50),
            ms(latency.p99),
            ms(latency.max),
            self.urgent.failed,
            idle_p50.map_or("-".to_string(), |idle| format!("{:.2}", ms(idle))),
            self.still_queued
                .map_or("unknown".to_string(), |left| left.to_string()),
        );
        if let Some(error) = &self.urgent.first_error {
            let _ = writeln!(out, "\nFirst failure: {error}");
        }
    }
}
