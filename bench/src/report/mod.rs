//! The markdown report: machine, figures per database, PASS/FAIL against the targets,
//! and MySQL against PostgreSQL side by side.

use std::fmt::Write as _;

mod compare;
mod machine;
mod profile;

pub use compare::{Comparison, ComparisonRow, MAX_RATIO};
pub use machine::Machine;

use crate::cpu::CpuUsage;
use crate::database::{DbWork, Dialect};
use crate::profile::StatementStat;
use crate::rss::MemoryReport;
use crate::scenarios::ScenarioResult;
use crate::stats::ms;

/// Lone start-to-completion p50 must stay below this, in milliseconds.
pub const TARGET_LONE_P50_MS: f64 = 15.0;
/// Completed processes per second the load scenario must reach.
pub const TARGET_LOAD_PER_SECOND: f64 = 400.0;
/// Peak resident memory of the async service must stay below this, in MB (10^6 bytes).
pub const TARGET_ASYNC_RSS_MB: f64 = 100.0;

/// Everything one run against one database measured.
#[derive(Debug, Clone)]
pub struct Report {
    pub dialect: Dialect,
    /// Where the async service got its work: "database queue" or "Pulsar CDC".
    pub queue: &'static str,
    /// The database server's version string.
    pub server: String,
    pub date: String,
    pub lone: ScenarioResult,
    pub load: ScenarioResult,
    pub api_memory: MemoryReport,
    pub async_memory: MemoryReport,
    /// Processes run in all, warm-up included: the divisor of per-process figures.
    pub processes: usize,
    /// Database counters over the whole run.
    pub db: Option<DbWork>,
    /// CPU used during the load scenario.
    pub load_cpu: Option<CpuUsage>,
    /// Statement statistics over the whole run, when the server keeps them.
    pub statements: Option<Vec<StatementStat>>,
}

/// One target line.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetCheck {
    pub target: String,
    pub measured: String,
    pub pass: bool,
}

impl Report {
    /// The targets, each with the measured figure and whether it was met.
    pub fn targets(&self) -> Vec<TargetCheck> {
        let p50_ms = self.lone.latency.p50.as_secs_f64() * 1000.0;
        let per_second = self.load.throughput();
        let async_mb = mb(self.async_memory.peak_kib);
        let failed = self.lone.failed + self.load.failed;
        vec![
            TargetCheck {
                target: format!("lone p50 < {TARGET_LONE_P50_MS} ms"),
                measured: format!("{p50_ms:.2} ms"),
                pass: self.lone.completed > 0 && p50_ms < TARGET_LONE_P50_MS,
            },
            TargetCheck {
                target: format!(
                    ">= {TARGET_LOAD_PER_SECOND} processes/s with {} in flight",
                    self.load.concurrency
                ),
                measured: format!("{per_second:.0} processes/s"),
                pass: per_second >= TARGET_LOAD_PER_SECOND,
            },
            TargetCheck {
                target: format!("async service peak RSS < {TARGET_ASYNC_RSS_MB} MB"),
                measured: format!("{async_mb:.1} MB"),
                pass: async_mb < TARGET_ASYNC_RSS_MB,
            },
            TargetCheck {
                target: "no failed process".into(),
                measured: format!("{failed} failed"),
                pass: failed == 0,
            },
        ]
    }

    /// This database's detail sections (level-2 heading, level-3 subsections).
    fn write_details(&self, out: &mut String) {
        let _ = writeln!(out, "\n## {} ({}) in detail\n", self.dialect, self.queue);
        let _ = writeln!(out, "Server: {}\n", self.server);
        let _ = writeln!(out, "### Start-to-completion latency\n");
        let _ = writeln!(
            out,
            "From sending start until wait-for-completion answers COMPLETED, in ms.\n"
        );
        let _ = writeln!(
            out,
            "| Scenario | Processes | In flight | Failed | p50 | p90 | p99 | max | mean | Processes/s |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|");
        for s in [&self.lone, &self.load] {
            let l = &s.latency;
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} |",
                s.name,
                s.processes,
                s.concurrency,
                s.failed,
                ms(l.p50),
                ms(l.p90),
                ms(l.p99),
                ms(l.max),
                ms(l.mean),
                s.throughput()
            );
        }
        let _ = writeln!(
            out,
            "\nOf which the start call alone (the rest is the wait-for-completion call):\n"
        );
        let _ = writeln!(
            out,
            "| Scenario | p50 | p90 | p99 | max | mean |\n|---|---|---|---|---|---|"
        );
        for s in [&self.lone, &self.load] {
            let l = &s.start_latency;
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                s.name,
                ms(l.p50),
                ms(l.p90),
                ms(l.p99),
                ms(l.max),
                ms(l.mean)
            );
        }
        for s in [&self.lone, &self.load] {
            if let Some(error) = &s.first_error {
                let _ = writeln!(out, "\nFirst failure in {}: `{error}`", s.name);
            }
        }

        let _ = writeln!(out, "\n### Memory\n");
        let _ = writeln!(
            out,
            "Resident set size from `/proc/<pid>/status` (VmRSS every 100 ms, and VmHWM).\n"
        );
        let _ = writeln!(out, "| Service | After start-up | Peak |\n|---|---|---|");
        for (name, memory) in [
            ("xdb-api-service", &self.api_memory),
            ("xdb-async-service", &self.async_memory),
        ] {
            let _ = writeln!(
                out,
                "| {name} | {:.1} MB | {:.1} MB |",
                mb(memory.start_kib),
                mb(memory.peak_kib)
            );
        }

        if let Some(cpu) = &self.load_cpu {
            profile::write_cpu(out, self.dialect, cpu, self.load.completed);
        }
        match &self.db {
            Some(DbWork::Postgres(db)) => profile::write_db(out, db, self.processes),
            Some(DbWork::MySql(counters)) => profile::write_status(out, counters, self.processes),
            None => {}
        }
        profile::write_statements(
            out,
            self.dialect,
            self.statements.as_deref(),
            self.processes,
        );
    }
}

/// The whole report: every database's run, compared when both ran.
pub fn to_markdown(machine: &Machine, reports: &[Report]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# XDB benchmark\n");
    if let Some(first) = reports.first() {
        let _ = writeln!(out, "- Date: {}", first.date);
    }
    let _ = writeln!(
        out,
        "- Machine: {} CPUs (`nproc`), {} MiB memory, {}",
        machine.cpus, machine.memory_mib, machine.cpu
    );
    for report in reports {
        let _ = writeln!(out, "- {}: {}", report.dialect, report.server);
    }
    let _ = writeln!(out, "- Commit: {}", machine.commit);
    let _ = writeln!(
        out,
        "- Process: `StateA` → `StateB` → graceful complete (no waitUntil, no \
         attributes); worker in the bench process; services are the release binaries"
    );
    let _ = writeln!(
        out,
        "- Databases run one after the other in one invocation, each on a fresh database \
         with the XDB schema installed and freshly started services\n"
    );

    if let Some(comparison) = Comparison::of(reports) {
        comparison.write(&mut out);
    }

    let _ = writeln!(out, "## Targets\n");
    let _ = writeln!(
        out,
        "| Database | Target | Measured | Result |\n|---|---|---|---|"
    );
    for report in reports {
        for check in report.targets() {
            let verdict = if check.pass { "PASS" } else { "FAIL" };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {verdict} |",
                report.dialect, check.target, check.measured
            );
        }
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
