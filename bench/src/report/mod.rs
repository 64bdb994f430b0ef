//! The markdown report: machine, figures per database, PASS/FAIL against issue 8's
//! targets, and MySQL against PostgreSQL side by side.

use std::collections::BTreeSet;
use std::fmt::Write as _;

mod compare;
mod details;
mod figures;
mod machine;
mod profile;
mod targets;

pub use compare::{Comparison, ComparisonRow, Sides, MAX_RATIO};
pub use machine::Machine;
pub use targets::*;

use crate::ceiling::Ceiling;
use crate::cpu::CpuUsage;
use crate::database::{DbWork, Dialect};
use crate::options::{BenchOptions, QueueMode, Scenario};
use crate::profile::StatementStat;
use crate::rss::MemoryReport;
use crate::scenarios::fleet::FleetResult;
use crate::scenarios::overload::OverloadResult;
use crate::scenarios::queue::QueueResult;
use crate::scenarios::rpc::RpcResult;
use crate::scenarios::timers::TimerResult;
use crate::scenarios::waiting::WaitingResult;
use crate::scenarios::ScenarioResult;

/// Everything one run against one database measured; `None` for what did not run.
#[derive(Debug, Clone)]
pub struct Report {
    pub dialect: Dialect,
    /// Where the async service got its work.
    pub queue_mode: QueueMode,
    /// How the report names it: "database queue" or "Pulsar CDC".
    pub queue: &'static str,
    /// The database server's version string.
    pub server: String,
    pub date: String,
    pub scenarios: BTreeSet<Scenario>,
    /// The in-flight level the throughput target and the CPU figures are for.
    pub judged_concurrency: usize,
    pub lone: Option<ScenarioResult>,
    /// The load scenario at each in-flight level, ascending.
    pub levels: Vec<ScenarioResult>,
    pub rpc: Option<RpcResult>,
    pub queue_latency: Option<QueueResult>,
    pub timers: Option<TimerResult>,
    pub waiting: Option<WaitingResult>,
    pub overload: Option<OverloadResult>,
    pub fleet: Option<FleetResult>,
    pub backlog: Option<crate::scenarios::backlog::BacklogResult>,
    /// The commit-rate ceiling, or why it could not be measured.
    pub ceiling: Option<Result<Ceiling, String>>,
    /// XDB's statements run without it (pgbench on PostgreSQL), or why they could not
    /// be; each of its transactions is one process.
    pub limit: Option<Result<crate::limit::Limit, String>>,
    /// Memory over every scenario but "waiting" (which reports its own).
    pub api_memory: MemoryReport,
    pub async_memory: MemoryReport,
    /// The bench process over the same scenarios (sampled `VmRSS`: it ran before).
    pub bench_memory: MemoryReport,
    /// The Pulsar standalone JVM over the same scenarios, in Pulsar CDC mode (sampled
    /// `VmRSS`: it ran before, and serves other users too).
    pub pulsar_memory: Option<MemoryReport>,
    /// Its pid, in Pulsar CDC mode.
    pub pulsar_pid: Option<u32>,
    /// The whole database server on this machine over the same scenarios: the summed
    /// proportional set size of its processes, sampled every second; `None` when it is
    /// not on this machine.
    pub db_memory: Option<MemoryReport>,
    /// Processes run in all, warm-up included: the divisor of per-process figures.
    pub processes: usize,
    /// Database counters over the whole run.
    pub db: Option<DbWork>,
    /// CPU used during the judged load level.
    pub load_cpu: Option<CpuUsage>,
    /// Statement statistics over the whole run, when the server keeps them.
    pub statements: Option<Vec<StatementStat>>,
    /// MySQL's prepared statements, read before the services stopped (see
    /// [`crate::profile::prepared_statements`]); part of `statements` once merged.
    pub prepared_statements: Vec<StatementStat>,
}

impl Report {
    /// An empty report of a run with `options` on `dialect`.
    pub fn new(dialect: Dialect, options: &BenchOptions) -> Report {
        Report {
            dialect,
            queue_mode: options.queue_mode(),
            queue: options.queue_mode().label(),
            server: String::new(),
            date: chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string(),
            scenarios: options.scenarios.clone(),
            judged_concurrency: options.concurrency,
            lone: None,
            levels: Vec::new(),
            rpc: None,
            queue_latency: None,
            timers: None,
            waiting: None,
            overload: None,
            fleet: None,
            backlog: None,
            ceiling: None,
            limit: None,
            api_memory: MemoryReport::default(),
            async_memory: MemoryReport::default(),
            bench_memory: MemoryReport::default(),
            pulsar_memory: None,
            pulsar_pid: None,
            db_memory: None,
            processes: 0,
            db: None,
            load_cpu: None,
            statements: None,
            prepared_statements: Vec::new(),
        }
    }

    /// The load scenario at the judged in-flight level.
    pub fn load(&self) -> Option<&ScenarioResult> {
        self.levels
            .iter()
            .find(|l| l.concurrency == self.judged_concurrency)
    }

    /// Processes that failed and calls that failed, over every scenario.
    pub fn failures(&self) -> usize {
        let two_state: usize = self
            .lone
            .iter()
            .chain(&self.levels)
            .chain(self.waiting.iter().flat_map(|w| w.loads()))
            .map(|s| s.failed)
            .sum();
        let timers = self
            .timers
            .as_ref()
            .map_or(0, |t| t.failed_starts + t.not_fired + t.unmeasured);
        let waiting = self
            .waiting
            .as_ref()
            .map_or(0, |w| w.failed_starts + w.not_waiting);
        two_state
            + timers
            + waiting
            + self.rpc.as_ref().map_or(0, |r| r.failed)
            + self.queue_latency.as_ref().map_or(0, |q| q.failed)
            + self.overload.as_ref().map_or(0, OverloadResult::failures)
            + self.fleet.as_ref().map_or(0, FleetResult::failures)
    }

    /// How the report names this run among `reports`: the database, and the queue mode
    /// when the runs were in more than one.
    pub fn label(&self, reports: &[Report]) -> String {
        if reports.iter().any(|r| r.queue_mode != self.queue_mode) {
            format!("{} ({})", self.dialect, self.queue)
        } else {
            self.dialect.to_string()
        }
    }

    /// Processes started in all, `warm_up` included.
    pub fn processes_started(&self, warm_up: usize) -> usize {
        warm_up
            + self.lone.as_ref().map_or(0, |l| l.processes)
            + self.levels.iter().map(|l| l.processes).sum::<usize>()
            + self.rpc.as_ref().map_or(0, |_| 1)
            + self.queue_latency.as_ref().map_or(0, |q| q.messages)
            + self.timers.as_ref().map_or(0, |t| t.processes)
            + self.waiting.as_ref().map_or(0, |w| {
                w.processes + w.loads().map(|l| l.processes).sum::<usize>()
            })
            + self.overload.as_ref().map_or(0, |o| o.accepted)
    }
}

/// The whole report: every database's run, compared when both ran.
pub fn to_markdown(machine: &Machine, reports: &[Report]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# XDB benchmark\n");
    if let Some(first) = reports.first() {
        let _ = writeln!(out, "- Date: {}", first.date);
        let names: Vec<String> = first
            .scenarios
            .iter()
            .map(|s| format!("{s:?}").to_lowercase())
            .collect();
        let _ = writeln!(out, "- Scenarios: {}", names.join(", "));
    }
    let _ = writeln!(
        out,
        "- Machine: {} CPUs (`nproc`), {} MiB memory, {}",
        machine.cpus, machine.memory_mib, machine.cpu
    );
    let mut servers: Vec<(Dialect, &str)> = Vec::new();
    for report in reports {
        if !servers.iter().any(|(d, _)| *d == report.dialect) {
            servers.push((report.dialect, &report.server));
        }
    }
    for (dialect, server) in servers {
        let _ = writeln!(out, "- {dialect}: {server}");
    }
    let mut modes: Vec<QueueMode> = reports.iter().map(|r| r.queue_mode).collect();
    modes.sort();
    modes.dedup();
    let modes: Vec<&str> = modes.iter().map(|m| m.label()).collect();
    let _ = writeln!(out, "- Queue modes: {}", modes.join(", "));
    if let Some(pid) = reports.iter().find_map(|r| r.pulsar_pid) {
        let _ = writeln!(
            out,
            "- Pulsar CDC: the Pulsar IO Debezium source (thread runtime) in the Apache \
             Pulsar standalone JVM of scripts/ensure-pulsar.sh (pid {pid}; broker, bookie \
             and connector in one process), measured as a component of its own; shared \
             with any other user of that broker on the machine"
        );
    }
    let _ = writeln!(out, "- Commit: {}", machine.commit);
    let _ = writeln!(
        out,
        "- Load average (1, 5, 15 min) when the report was written: {} (other work on the \
         machine shows here and as \"other work on the machine\" in the CPU tables)",
        machine.load_average
    );
    let _ = writeln!(
        out,
        "- Processes: the worker is in the bench process (SDK over HTTP on loopback); \
         services are the release binaries. Two-state process: `StateA` → `StateB` → \
         graceful complete (no waitUntil, no attributes)"
    );
    let _ = writeln!(
        out,
        "- Databases, and on each the queue modes, run one after the other in one \
         invocation, each on a fresh database with the XDB schema installed and freshly \
         started services; the commit-rate ceiling runs once per database, in the first \
         queue mode's run\n"
    );

    let _ = writeln!(out, "## Targets\n");
    let _ = writeln!(
        out,
        "Issue 8's targets for this 2-core machine. \"not run\" means the scenario was \
         not selected (`--scenarios`).\n"
    );
    let _ = writeln!(
        out,
        "| Database | Target | Measured | Result |\n|---|---|---|---|"
    );
    for report in reports {
        for check in report.targets() {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                report.label(reports),
                check.target,
                check.measured,
                check.verdict.label()
            );
        }
    }
    let comparisons = Comparison::all(reports);
    let databases = comparisons
        .iter()
        .any(|c| matches!(c.sides, Sides::Databases(_)));
    let _ = writeln!(
        out,
        "| both | MySQL figures reported beside PostgreSQL's | {} | {} |",
        if databases {
            "below"
        } else {
            "one database only"
        },
        if databases { "PASS" } else { "not run" }
    );
    if reports.iter().any(|r| r.queue_mode == QueueMode::Pulsar) {
        let queues = comparisons
            .iter()
            .any(|c| matches!(c.sides, Sides::QueueModes(_)));
        let _ = writeln!(
            out,
            "| both | Pulsar CDC figures reported beside the database queue's | {} | {} |",
            if queues {
                "below"
            } else {
                "one queue mode only (`--queue database,pulsar` runs both)"
            },
            if queues { "PASS" } else { "not run" }
        );
    }
    let _ = writeln!(out);
    for comparison in &comparisons {
        comparison.write(&mut out);
    }
    for report in reports {
        report.write_details(&mut out);
    }
    out
}

/// KiB → MB (10^6 bytes).
pub(crate) fn mb(kib: u64) -> f64 {
    kib as f64 * 1024.0 / 1e6
}
