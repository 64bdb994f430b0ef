//! The measured scenarios, and the [`Driver`] they share to start processes.
//!
//! - [`throughput`]: "lone" (one two-state process at a time) and "load" (many in
//!   flight, at several levels), timed from start until wait-for-completion answers.
//! - [`timers`]: many one-second durable timers started together; how late `execute`
//!   is called.
//! - [`rpc`]: RPC round trips on a running process.
//! - [`queue`]: from publishing a local-queue message to the waiting state's `execute`.
//! - [`waiting`]: many processes parked on a far timer or a message, then the load
//!   scenario again while they wait.
//! - [`fleet`]: a million running executions over a business table: filtered list and
//!   count, and a batch of terminations, each beside the same work without XDB.
//! - [`backlog`]: lone processes of priority 1 while a backlog of priority 5 drains.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use xdb_sdk::{Client, ProcessDefinition, ProcessStartOptions};

use crate::worker::{Processes, Recorder};

pub mod backlog;
pub mod fleet;
pub mod overload;
pub mod queue;
pub mod rpc;
pub mod throughput;
pub mod timers;
pub mod waiting;

pub use throughput::{load, lone, ScenarioResult, Timing};

/// Starts the bench's processes and waits for them.
#[derive(Clone)]
pub struct Driver {
    client: Client,
    processes: Processes,
    worker_url: String,
    /// Makes process ids unique across runs on one database.
    run_id: String,
    /// The priority its starts name; `None`: none (the default).
    priority: Option<u8>,
}

impl Driver {
    /// A driver of the API service at `service_url` whose processes run on the worker at
    /// `worker_url`, which serves `processes`.
    pub fn new(service_url: &str, worker_url: &str, processes: Processes) -> Driver {
        Driver {
            client: Client::new(service_url),
            processes,
            worker_url: worker_url.to_string(),
            run_id: uuid::Uuid::new_v4().simple().to_string()[..8].to_string(),
            priority: None,
        }
    }

    /// This driver, its starts naming `priority`.
    pub fn with_priority(&self, priority: u8) -> Driver {
        Driver {
            priority: Some(priority),
            ..self.clone()
        }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn processes(&self) -> &Processes {
        &self.processes
    }

    /// What the worker saw.
    pub fn recorder(&self) -> &Recorder {
        &self.processes.recorder
    }

    /// The process id of process `index` of `scenario` in this run.
    pub fn process_id(&self, scenario: &str, index: usize) -> String {
        format!("{}{index}", self.process_id_prefix(scenario))
    }

    /// What every process id of `scenario` in this run begins with.
    pub fn process_id_prefix(&self, scenario: &str) -> String {
        format!("bench-{}-{scenario}-", self.run_id)
    }

    /// The worker the processes run on.
    pub fn worker_url(&self) -> &str {
        &self.worker_url
    }

    /// Starts `definition` as `process_id`; why not, as text.
    pub async fn start(
        &self,
        definition: &ProcessDefinition,
        process_id: &str,
    ) -> Result<(), String> {
        let mut options = ProcessStartOptions::new();
        if let Some(priority) = self.priority {
            options = options.priority(priority);
        }
        self.client
            .start_process_with(definition, process_id, Some(&self.worker_url), (), options)
            .await
            .map(drop)
            .map_err(|e| format!("start {process_id}: {e}"))
    }

    /// Starts processes `0..count` of `scenario` with at most `concurrency` start calls
    /// in flight, without waiting for them to finish.
    pub async fn start_many(
        &self,
        definition: &Arc<ProcessDefinition>,
        scenario: &'static str,
        count: usize,
        concurrency: usize,
    ) -> StartOutcome {
        let next = Arc::new(AtomicUsize::new(0));
        let began = Instant::now();
        let tasks: Vec<_> = (0..concurrency.clamp(1, count.max(1)))
            .map(|_| {
                let (driver, next, definition) = (self.clone(), next.clone(), definition.clone());
                tokio::spawn(async move {
                    let (mut failed, mut first_error) = (0, None);
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        if index >= count {
                            return (failed, first_error);
                        }
                        let id = driver.process_id(scenario, index);
                        if let Err(error) = driver.start(&definition, &id).await {
                            failed += 1;
                            first_error.get_or_insert(error);
                        }
                    }
                })
            })
            .collect();
        let mut outcome = StartOutcome::default();
        for task in tasks {
            let (failed, first_error) = task
                .await
                .unwrap_or_else(|e| (1, Some(format!("a start task panicked: {e}"))));
            outcome.failed += failed;
            if outcome.first_error.is_none() {
                outcome.first_error = first_error;
            }
        }
        outcome.started = count - outcome.failed.min(count);
        outcome.elapsed = began.elapsed();
        outcome
    }
}

/// What [`Driver::start_many`] did.
#[derive(Debug, Clone, Default)]
pub struct StartOutcome {
    pub started: usize,
    pub failed: usize,
    pub first_error: Option<String>,
    /// From the first start call until the last answered.
    pub elapsed: Duration,
}

/// `later - earlier` in milliseconds, negative when `later` is the earlier one.
pub fn signed_ms(later: std::time::SystemTime, earlier: std::time::SystemTime) -> f64 {
    match later.duration_since(earlier) {
        Ok(d) => d.as_secs_f64() * 1000.0,
        Err(e) => -e.duration().as_secs_f64() * 1000.0,
    }
}
