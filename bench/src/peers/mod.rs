//! `xdb-bench --peers`: XDB beside Restate, DBOS Transact and Temporal on this machine,
//! on the same workloads from the same load generator, so that every comparison is a
//! ratio from one run.
//!
//! Each contender in turn (XDB on each database, then each peer) is started fresh, warmed
//! up, and measured: lone two-step processes one after another, the two-step process at
//! the judged in-flight level a few times over (throughput, machine CPU per process),
//! and one-second durable timers started together (lateness as the client sees it). Its
//! components' CPU and peak memory are measured as process trees. Then it is stopped and
//! its data removed.

use std::time::Duration;

use crate::cdc::PulsarTarget;
use crate::cpu::{CpuSnapshot, Task, BENCH};
use crate::database::Dialect;
use crate::stats::SignedSummary;

pub mod contenders;
pub mod generator;
pub mod install;
pub mod process;
pub mod session;
pub mod table;

use generator::{drive, lateness, Amount, Batch, Workload};
use session::Session;

/// A peer the bench can run beside XDB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub enum Peer {
    /// Restate (npm `@restatedev/restate-server`) with a TypeScript SDK endpoint.
    Restate,
    /// DBOS Transact (PyPI `dbos`), its system database in the bench's PostgreSQL.
    Dbos,
    /// Temporal's dev server (the `temporal` CLI) with a Python SDK worker.
    Temporal,
}

impl Peer {
    /// Its name in paths and in scripts/ensure-peers.sh's arguments.
    pub fn slug(self) -> &'static str {
        match self {
            Peer::Restate => "restate",
            Peer::Dbos => "dbos",
            Peer::Temporal => "temporal",
        }
    }

    /// Its name in the report.
    pub fn label(self) -> &'static str {
        match self {
            Peer::Restate => "Restate",
            Peer::Dbos => "DBOS",
            Peer::Temporal => "Temporal",
        }
    }
}

/// XDB as one contender: its database server, and the Pulsar standalone it runs on in
/// Pulsar CDC mode (the database queue without).
#[derive(Debug, Clone)]
pub struct XdbContender {
    pub url: String,
    pub pulsar: Option<PulsarTarget>,
}

/// The sizes of a peers run: the bench's own options, shared by every contender.
#[derive(Debug, Clone)]
pub struct PeersOptions {
    pub warm_up: usize,
    pub lone: usize,
    /// Each load: a number of processes, or a length of time (the same for every
    /// contender, however fast).
    pub load: Amount,
    pub concurrency: usize,
    /// Times the load runs on each contender.
    pub repetitions: usize,
    pub timers: usize,
    pub timer_delay: Duration,
}

/// What one contender measured, or why it could not run.
#[derive(Debug, Clone, Default)]
pub struct ContenderResult {
    pub name: String,
    /// Whether it is XDB (the left side of every ratio).
    pub xdb: bool,
    pub error: Option<String>,
    pub lone: Batch,
    pub loads: Vec<Batch>,
    /// Machine CPU per completed process of each load, in ms.
    pub cpu_ms: Vec<f64>,
    /// CPU per completed process of each component (and the bench), over the loads, ms.
    pub component_cpu_ms: Vec<(String, f64)>,
    pub timers: Batch,
    pub lateness: SignedSummary,
    /// Peak resident memory of each component over the whole measure, in KiB.
    pub memory: Vec<(String, u64)>,
}

impl ContenderResult {
    /// A contender that could not be measured.
    pub fn failed(name: &str, xdb: bool, error: &anyhow::Error) -> ContenderResult {
        ContenderResult {
            name: name.to_string(),
            xdb,
            error: Some(format!("{error:#}")),
            ..ContenderResult::default()
        }
    }

    /// Calls that failed in every measured batch.
    pub fn failures(&self) -> usize {
        self.lone.failed + self.timers.failed + self.loads.iter().map(|l| l.failed).sum::<usize>()
    }
}

/// Measures a started contender.
pub async fn measure(
    session: &mut Session,
    options: &PeersOptions,
) -> anyhow::Result<ContenderResult> {
    let target = session.target.clone();
    let name = session.name.clone();
    eprintln!("xdb-bench: {name}: warm-up ({} processes)", options.warm_up);
    let (warm_up, _) = drive(
        &target,
        Workload::TwoStep,
        "warmup",
        Amount::Count(options.warm_up),
        1,
    )
    .await;
    if let Some(error) = warm_up.first_error {
        session.ensure_running()?;
        anyhow::bail!("{name}: the warm-up failed: {error}");
    }
    let samplers: Vec<_> = session
        .components
        .iter()
        .map(|c| (c.name().to_string(), c.sample_memory()))
        .collect();
    let mut result = ContenderResult {
        name: name.clone(),
        xdb: matches!(target, generator::Target::Xdb(_)),
        ..ContenderResult::default()
    };
    eprintln!(
        "xdb-bench: {name}: lone ({} processes, one at a time)",
        options.lone
    );
    result.lone = drive(
        &target,
        Workload::TwoStep,
        "lone",
        Amount::Count(options.lone),
        1,
    )
    .await
    .0;
    let mut component_seconds: Vec<(String, f64)> = Vec::new();
    let mut completed = 0usize;
    for repetition in 1..=options.repetitions.max(1) {
        session.settle().await;
        eprintln!(
            "xdb-bench: {name}: load {repetition} ({:?}, {} in flight)",
            options.load, options.concurrency
        );
        let groups = cpu_groups(session);
        let order: Vec<&str> = groups.iter().map(|(n, _)| n.as_str()).collect();
        let tasks: Vec<(&str, Vec<Task>)> = groups
            .iter()
            .map(|(n, t)| (n.as_str(), t.clone()))
            .collect();
        let before = CpuSnapshot::take(&tasks);
        let label = format!("load{repetition}");
        let (load, _) = drive(
            &target,
            Workload::TwoStep,
            &label,
            options.load,
            options.concurrency,
        )
        .await;
        // Processes a component started during the load count from zero.
        let after_groups = cpu_groups(session);
        let after_tasks: Vec<(&str, Vec<Task>)> = after_groups
            .iter()
            .map(|(n, t)| (n.as_str(), t.clone()))
            .collect();
        let usage = CpuSnapshot::take(&after_tasks).since(&before, &order);
        let done = (load.calls - load.failed).max(1);
        if let Some((busy, _)) = usage.machine {
            result.cpu_ms.push(busy * 1000.0 / done as f64);
        }
        for (group, seconds) in &usage.groups {
            let seconds = seconds.unwrap_or(0.0);
            match component_seconds.iter_mut().find(|(n, _)| n == group) {
                Some((_, total)) => *total += seconds,
                None => component_seconds.push((group.clone(), seconds)),
            }
        }
        completed += done;
        result.loads.push(load);
    }
    result.component_cpu_ms = component_seconds
        .into_iter()
        .map(|(n, s)| (n, s * 1000.0 / completed.max(1) as f64))
        .collect();
    session.settle().await;
    eprintln!(
        "xdb-bench: {name}: timers ({} started together, {:?} each)",
        options.timers, options.timer_delay
    );
    let (timers, durations) = drive(
        &target,
        Workload::Sleep,
        "timer",
        Amount::Count(options.timers),
        options.timers,
    )
    .await;
    result.lateness = lateness(&durations, options.timer_delay);
    result.timers = timers;
    for (component, sampler) in samplers {
        result
            .memory
            .push((component, sampler.finish_sampled().await.peak_kib));
    }
    session.ensure_running()?;
    Ok(result)
}

/// CPU accounting groups: each component's processes now, and the bench (the load
/// generator, and XDB's worker).
fn cpu_groups(session: &Session) -> Vec<(String, Vec<Task>)> {
    session
        .components
        .iter()
        .map(|c| (c.name().to_string(), c.tasks()))
        .chain([(BENCH.to_string(), vec![Task::Process(std::process::id())])])
        .collect()
}

/// Starts, measures and stops each contender in turn: XDB on each of `xdb_urls`, then
/// each of `peers`. A contender that fails is reported as such and the others still run.
pub async fn run(
    xdb: &[XdbContender],
    peers: &[Peer],
    postgres_url: &str,
    options: &PeersOptions,
) -> Vec<ContenderResult> {
    let mut results = Vec::new();
    for contender in xdb {
        // The name start_xdb gives its session, for the report of a start that failed.
        let name = Dialect::from_url(&contender.url).map_or("XDB", |dialect| {
            session::xdb_name(dialect, contender.pulsar.is_some())
        });
        let started = session::start_xdb(
            &contender.url,
            contender.pulsar.as_ref(),
            options.timer_delay,
        )
        .await;
        results.push(measured(started, options, name, true).await);
    }
    for peer in peers {
        let started = contenders::start(*peer, postgres_url).await;
        results.push(measured(started, options, peer.label(), false).await);
    }
    results
}

async fn measured(
    started: anyhow::Result<Session>,
    options: &PeersOptions,
    what: &str,
    xdb: bool,
) -> ContenderResult {
    let mut session = match started {
        Ok(session) => session,
        Err(error) => {
            eprintln!("xdb-bench: {what} did not start: {error:#}");
            return ContenderResult::failed(what, xdb, &error);
        }
    };
    let name = session.name.clone();
    let result = measure(&mut session, options)
        .await
        .unwrap_or_else(|error| {
            eprintln!("xdb-bench: {name} failed: {error:#}");
            ContenderResult::failed(&name, xdb, &error)
        });
    if let Err(error) = session.close().await {
        eprintln!("xdb-bench: cleaning up after {name}: {error:#}");
    }
    result
}
