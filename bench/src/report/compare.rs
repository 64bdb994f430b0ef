//! Two runs of one invocation side by side: MySQL against PostgreSQL (in one queue
//! mode), with their ratio and whether MySQL stays within [`MAX_RATIO`] of PostgreSQL;
//! and Pulsar CDC against the database queue (on one database), with their ratio.

use std::fmt::Write as _;

use super::{machine_cpu_ms, mb, Report};
use crate::cpu::{BENCH, DB_SERVER, DB_SESSIONS, PULSAR};
use crate::database::Dialect;
use crate::options::QueueMode;
use crate::services::{API_SERVICE, ASYNC_SERVICE};

/// MySQL may be this many times worse than PostgreSQL on a judged figure.
pub const MAX_RATIO: f64 = 2.0;

/// One figure of both sides.
#[derive(Debug, Clone, PartialEq)]
pub struct ComparisonRow {
    pub figure: String,
    /// PostgreSQL's, or the database queue's.
    pub left: Option<f64>,
    /// MySQL's, or Pulsar CDC's.
    pub right: Option<f64>,
    /// Throughput: more is better; everything else: less is better.
    pub higher_is_better: bool,
    /// Whether the within-2x bar applies (not to figures measured differently on the
    /// two servers, nor to any figure of the queue modes' comparison, which has no bar).
    pub judged: bool,
    /// Decimals to print.
    pub decimals: usize,
}

impl ComparisonRow {
    /// Right / left: MySQL / PostgreSQL, or Pulsar CDC / database queue.
    pub fn ratio(&self) -> Option<f64> {
        match (self.left, self.right) {
            (Some(left), Some(right)) if left > 0.0 => Some(right / left),
            _ => None,
        }
    }

    /// Whether MySQL is within [`MAX_RATIO`] of PostgreSQL; `None` when not judged or
    /// not measured on both.
    pub fn within_bar(&self) -> Option<bool> {
        if !self.judged {
            return None;
        }
        let ratio = self.ratio()?;
        Some(if self.higher_is_better {
            ratio >= 1.0 / MAX_RATIO
        } else {
            ratio <= MAX_RATIO
        })
    }
}

/// What a comparison sets side by side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sides {
    /// MySQL (right) against PostgreSQL (left), both in one queue mode; judged.
    Databases(QueueMode),
    /// Pulsar CDC (right) against the database queue (left), both on one database.
    QueueModes(Dialect),
}

/// Two runs of one invocation.
pub struct Comparison<'a> {
    pub left: &'a Report,
    pub right: &'a Report,
    pub sides: Sides,
}

impl<'a> Comparison<'a> {
    /// MySQL against PostgreSQL in queue mode `mode`, when both ran in it.
    pub fn of_databases(reports: &'a [Report], mode: QueueMode) -> Option<Comparison<'a>> {
        let find = |d: Dialect| {
            reports
                .iter()
                .find(|r| r.dialect == d && r.queue_mode == mode)
        };
        Some(Comparison {
            left: find(Dialect::Postgres)?,
            right: find(Dialect::MySql)?,
            sides: Sides::Databases(mode),
        })
    }

    /// Pulsar CDC against the database queue on `dialect`, when both ran on it.
    pub fn of_queue_modes(reports: &'a [Report], dialect: Dialect) -> Option<Comparison<'a>> {
        let find = |q: QueueMode| {
            reports
                .iter()
                .find(|r| r.dialect == dialect && r.queue_mode == q)
        };
        Some(Comparison {
            left: find(QueueMode::Database)?,
            right: find(QueueMode::Pulsar)?,
            sides: Sides::QueueModes(dialect),
        })
    }

    /// Every comparison `reports` allow: MySQL against PostgreSQL in each queue mode,
    /// then Pulsar CDC against the database queue on each database.
    pub fn all(reports: &'a [Report]) -> Vec<Comparison<'a>> {
        let databases = [QueueMode::Database, QueueMode::Pulsar]
            .into_iter()
            .filter_map(|mode| Comparison::of_databases(reports, mode));
        let queues = [Dialect::Postgres, Dialect::MySql]
            .into_iter()
            .filter_map(|dialect| Comparison::of_queue_modes(reports, dialect));
        databases.chain(queues).collect()
    }

    /// Whether either side ran in Pulsar CDC mode (so the Pulsar JVM's rows apply).
    fn with_pulsar(&self) -> bool {
        [self.left, self.right]
            .iter()
            .any(|r| r.queue_mode == QueueMode::Pulsar)
    }

    pub fn rows(&self) -> Vec<ComparisonRow> {
        let (left, right) = (self.left, self.right);
        let databases = matches!(self.sides, Sides::Databases(_));
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
        let row = |figure: &str, f: &dyn Fn(&Report) -> Option<f64>, decimals| ComparisonRow {
            figure: figure.to_string(),
            left: f(left),
            right: f(right),
            higher_is_better: false,
            judged: databases,
            decimals,
        };
        let not_judged = |row: ComparisonRow| ComparisonRow {
            judged: false,
            ..row
        };
        let higher = |row: ComparisonRow| ComparisonRow {
            higher_is_better: true,
            ..row
        };
        let mut rows = vec![
            row(
                "lone p50 (ms)",
                &|r| Some(ms(r.lone.as_ref()?.latency.p50)),
                2,
            ),
            row(
                "lone p99 (ms)",
                &|r| Some(ms(r.lone.as_ref()?.latency.p99)),
                2,
            ),
        ];
        for level in &left.levels {
            let c = level.concurrency;
            let at = move |r: &Report| r.levels.iter().find(|l| l.concurrency == c).cloned();
            rows.push(higher(row(
                &format!("load throughput (processes/s, {c} in flight)"),
                &|r| Some(at(r)?.throughput()),
                0,
            )));
            if c == left.judged_concurrency {
                rows.push(row(
                    &format!("load p50 (ms, {c} in flight)"),
                    &|r| Some(ms(at(r)?.latency.p50)),
                    2,
                ));
                rows.push(row(
                    &format!("load p99 (ms, {c} in flight)"),
                    &|r| Some(ms(at(r)?.latency.p99)),
                    2,
                ));
            }
        }
        rows.extend([
            row(
                "RPC p50 (ms)",
                &|r| Some(ms(r.rpc.as_ref()?.latency.p50)),
                2,
            ),
            row(
                "RPC p99 (ms)",
                &|r| Some(ms(r.rpc.as_ref()?.latency.p99)),
                2,
            ),
            row(
                "local-queue publish to execute p50 (ms)",
                &|r| Some(r.queue_latency.as_ref()?.latency.p50),
                2,
            ),
            row(
                "timer lateness p50 (ms)",
                &|r| Some(r.timers.as_ref()?.lateness.p50),
                1,
            ),
            row(
                "timer lateness p99 (ms)",
                &|r| Some(r.timers.as_ref()?.lateness.p99),
                1,
            ),
            row(
                "xdb-api-service peak RSS (MB)",
                &|r| Some(mb(r.api_memory.peak_kib)),
                1,
            ),
            row(
                "xdb-async-service peak RSS (MB)",
                &|r| Some(mb(r.async_memory.peak_kib)),
                1,
            ),
        ]);
        if self.with_pulsar() {
            rows.push(not_judged(row(
                "Pulsar standalone JVM peak RSS (MB, sampled; broker + bookie + Debezium source)",
                &|r| Some(mb(r.pulsar_memory?.peak_kib)),
                1,
            )));
        }
        rows.extend([
            not_judged(row(
                "database server peak memory, whole (MB, summed PSS of its processes)",
                &|r| Some(mb(r.db_memory?.peak_kib)),
                1,
            )),
            not_judged(row(
                "xdb-bench (worker + client) peak RSS (MB, sampled)",
                &|r| Some(mb(r.bench_memory.peak_kib)).filter(|_| r.bench_memory.samples > 0),
                1,
            )),
            row(
                "xdb-async-service peak RSS with the waiting processes (MB)",
                &|r| Some(mb(r.waiting.as_ref()?.async_memory.peak_kib)),
                1,
            ),
            higher(row(
                "throughput beside the waiting processes / without",
                &|r| Some(r.waiting_throughput_ratio()?.0),
                2,
            )),
            higher(row(
                "processes/s until all waiting processes wait",
                &|r| Some(r.waiting.as_ref()?.start_rate()),
                0,
            )),
        ]);
        if databases {
            // Different tools on the two servers (pgbench, an in-process generator). Not
            // in the queue modes' comparison: the database's ceiling, whatever feeds the
            // async service, measured in the first queue mode's run only.
            rows.push(not_judged(higher(row(
                "commit-rate ceiling (insert + update transactions/s, 32 clients)",
                &|r| Some(r.ceiling.as_ref()?.as_ref().ok()?.per_second),
                0,
            ))));
        }
        let pulsar_group = self.with_pulsar().then_some((
            PULSAR,
            "Pulsar standalone JVM (broker + bookie + Pulsar IO Debezium source)",
            // Pulsar's, not XDB's; the machine's figure below includes it.
            false,
        ));
        let groups = [
            (API_SERVICE, "xdb-api-service", true),
            (ASYNC_SERVICE, "xdb-async-service", true),
        ]
        .into_iter()
        .chain(pulsar_group)
        .chain([
            // Not judged: a MariaDB connection thread that goes back to the thread
            // cache is no longer counted, so churning connections are undercounted.
            (
                DB_SESSIONS,
                "database server, bench connections (postgres backends / mariadbd threads)",
                false,
            ),
            (
                DB_SERVER,
                "database server, whole (shared with other databases on it)",
                true,
            ),
            (BENCH, "xdb-bench (worker + client)", true),
        ]);
        for (group, label, judged) in groups {
            let per_process = |r: &Report| {
                let cpu = r.load_cpu.as_ref()?.group(group)?;
                Some(cpu * 1000.0 / r.load()?.completed.max(1) as f64)
            };
            let row = row(&format!("CPU ms per process: {label}"), &per_process, 3);
            rows.push(ComparisonRow {
                judged: row.judged && judged,
                ..row
            });
        }
        rows.push(row(
            "CPU ms per process: machine, every process",
            &|r| Some(machine_cpu_ms(r.load_cpu.as_ref()?, r.load()?.completed)?.0),
            3,
        ));
        rows
    }

    /// `(judged rows within the bar, judged rows measured on both)`.
    pub fn bar(&self) -> (usize, usize) {
        let verdicts: Vec<bool> = self.rows().iter().filter_map(|r| r.within_bar()).collect();
        (verdicts.iter().filter(|v| **v).count(), verdicts.len())
    }

    /// The verdict line of MySQL against PostgreSQL: every judged figure within the
    /// bar. `None` for the queue modes' comparison, which has no bar.
    pub fn verdict(&self) -> Option<String> {
        let Sides::Databases(mode) = self.sides else {
            return None;
        };
        let (within, judged) = self.bar();
        let pass = judged > 0 && within == judged;
        Some(format!(
            "{}  MySQL within {MAX_RATIO}x of PostgreSQL, {} ({within} of {judged} figures)",
            if pass { "PASS" } else { "FAIL" },
            mode.label()
        ))
    }

    /// The section's heading.
    pub fn title(&self) -> String {
        match self.sides {
            Sides::Databases(mode) => format!("MySQL against PostgreSQL ({})", mode.label()),
            Sides::QueueModes(dialect) => {
                format!("Pulsar CDC against the database queue ({dialect})")
            }
        }
    }

    pub(super) fn write(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "## {}
",
            self.title()
        );
        let (left, right, ratio) = match self.sides {
            Sides::Databases(_) => {
                let _ = writeln!(
                    out,
                    "Same scenarios, same machine, one invocation. CPU figures cover the \
                     judged load level. The bar: every figure of MySQL within {MAX_RATIO}x of \
                     PostgreSQL's (throughput at least 1/{MAX_RATIO} of it). The bench \
                     connections' CPU is not judged: MariaDB's per-connection threads are \
                     only counted while connected, so a client that reconnects is \
                     undercounted; the whole server's figure is. Memory of the database \
                     server and the bench, and the Pulsar JVM's figures, are not judged.\n"
                );
                ("PostgreSQL", "MySQL", "MySQL / PostgreSQL")
            }
            Sides::QueueModes(dialect) => {
                let _ = writeln!(
                    out,
                    "The same scenarios on {dialect}, one invocation, each mode on a fresh \
                     database with freshly started services: the async service claiming \
                     task rows (database queue), and consuming the change topics that the \
                     Pulsar IO Debezium source publishes from the database's log (Pulsar \
                     CDC). CPU figures cover the judged load level; the Pulsar standalone \
                     JVM (pid {}) is its own component, in Pulsar CDC mode only (\"-\" \
                     under the database queue); it is shared with any other user of the \
                     broker on the machine, whose work it includes. The machine's figure \
                     counts every process either way. No bar: the figures are reported \
                     side by side. The commit-rate ceiling is the database's, measured once \
                     (in the run of the first mode `--queue` lists).\n",
                    self.right
                        .pulsar_pid
                        .map_or("unknown".into(), |pid| pid.to_string())
                );
                ("database queue", "Pulsar CDC", "Pulsar / database queue")
            }
        };
        let judged = matches!(self.sides, Sides::Databases(_));
        if judged {
            let _ = writeln!(
                out,
                "| Figure | {left} | {right} | {ratio} | Within {MAX_RATIO}x |"
            );
            let _ = writeln!(out, "|---|---|---|---|---|");
        } else {
            let _ = writeln!(out, "| Figure | {left} | {right} | {ratio} |");
            let _ = writeln!(out, "|---|---|---|---|");
        }
        let value = |v: Option<f64>, decimals: usize| {
            v.map_or(if judged { "not measured" } else { "-" }.to_string(), |v| {
                format!("{v:.decimals$}")
            })
        };
        for row in self.rows() {
            let cells = format!(
                "| {} | {} | {} | {} |",
                row.figure,
                value(row.left, row.decimals),
                value(row.right, row.decimals),
                row.ratio().map_or("-".into(), |r| format!("{r:.2}")),
            );
            if !judged {
                let _ = writeln!(out, "{cells}");
                continue;
            }
            let verdict = match row.within_bar() {
                Some(true) => "PASS",
                Some(false) => "FAIL",
                None if row.judged => "n/a",
                None => "not judged",
            };
            let _ = writeln!(out, "{cells} {verdict} |");
        }
        match self.verdict() {
            Some(verdict) => {
                let _ = writeln!(out, "\n**{verdict}**\n");
            }
            None => {
                let _ = writeln!(out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(pg: f64, my: f64, higher_is_better: bool) -> ComparisonRow {
        ComparisonRow {
            figure: "x".into(),
            left: Some(pg),
            right: Some(my),
            higher_is_better,
            judged: true,
            decimals: 1,
        }
    }

    #[test]
    fn the_bar_is_two_x_either_way() {
        assert_eq!(row(10.0, 20.0, false).within_bar(), Some(true));
        assert_eq!(row(10.0, 20.1, false).within_bar(), Some(false));
        assert_eq!(row(400.0, 200.0, true).within_bar(), Some(true));
        assert_eq!(row(400.0, 199.0, true).within_bar(), Some(false));
        let unmeasured = ComparisonRow {
            right: None,
            ..row(1.0, 1.0, false)
        };
        assert_eq!(unmeasured.within_bar(), None);
        let not_judged = ComparisonRow {
            judged: false,
            ..row(1.0, 9.0, false)
        };
        assert_eq!(not_judged.within_bar(), None);
    }

    /// A run of `mode` on `dialect` whose judged load completed 1,000 processes in one
    /// second, with the CPU of each group in `cpu` (seconds) and a machine total.
    fn run(dialect: Dialect, mode: QueueMode, cpu: &[(&str, f64)]) -> Report {
        use crate::cdc::PulsarTarget;
        use crate::cpu::CpuUsage;
        use crate::options::test_options;
        use crate::rss::MemoryReport;
        use crate::scenarios::ScenarioResult;
        use crate::stats::LatencySummary;
        use std::time::Duration;

        let options = crate::options::BenchOptions {
            pulsar: (mode == QueueMode::Pulsar).then(|| PulsarTarget {
                broker_url: "pulsar://127.0.0.1:6650".into(),
                admin_url: "http://127.0.0.1:8080".into(),
            }),
            ..test_options()
        };
        let mut report = Report::new(dialect, &options);
        report.levels = vec![ScenarioResult {
            name: "load".into(),
            processes: 1000,
            concurrency: 64,
            completed: 1000,
            failed: 0,
            first_error: None,
            elapsed: Duration::from_secs(1),
            latency: LatencySummary::default(),
            start_latency: LatencySummary::default(),
        }];
        report.load_cpu = Some(CpuUsage {
            groups: cpu.iter().map(|(g, s)| (g.to_string(), Some(*s))).collect(),
            machine: Some((cpu.iter().map(|(_, s)| s).sum(), 2.0)),
        });
        if mode == QueueMode::Pulsar {
            report.pulsar_pid = Some(4242);
            report.pulsar_memory = Some(MemoryReport {
                start_kib: 600_000,
                peak_kib: 700_000,
                samples: 10,
            });
        }
        report
    }

    #[test]
    fn queue_modes_side_by_side_with_the_pulsar_jvm_as_a_component() {
        let reports = vec![
            run(
                Dialect::Postgres,
                QueueMode::Database,
                &[(API_SERVICE, 0.1), (ASYNC_SERVICE, 0.2), (BENCH, 0.1)],
            ),
            run(
                Dialect::Postgres,
                QueueMode::Pulsar,
                &[
                    (API_SERVICE, 0.2),
                    (ASYNC_SERVICE, 0.5),
                    (PULSAR, 2.0),
                    (BENCH, 0.2),
                ],
            ),
        ];
        let comparisons = Comparison::all(&reports);
        assert_eq!(comparisons.len(), 1, "no MySQL run: only the queue modes");
        let queues = &comparisons[0];
        assert_eq!(queues.sides, Sides::QueueModes(Dialect::Postgres));
        assert_eq!(queues.verdict(), None);
        let rows = queues.rows();
        let mut figures: Vec<&str> = rows.iter().map(|r| r.figure.as_str()).collect();
        let count = figures.len();
        figures.sort_unstable();
        figures.dedup();
        assert_eq!(figures.len(), count, "a figure twice");
        let figure = |starts: &str| {
            rows.iter()
                .find(|r| r.figure.starts_with(starts))
                .unwrap_or_else(|| panic!("no row {starts:?}"))
        };
        let jvm = figure("CPU ms per process: Pulsar standalone JVM");
        assert_eq!((jvm.left, jvm.right), (None, Some(2.0)));
        let machine = figure("CPU ms per process: machine");
        assert_eq!(machine.left.map(|v| (v * 1000.0).round()), Some(400.0));
        assert_eq!(machine.right.map(|v| (v * 1000.0).round()), Some(2900.0));
        assert_eq!(
            figure("Pulsar standalone JVM peak RSS").right,
            Some(mb(700_000))
        );
        assert!(rows.iter().all(|r| !r.judged));
        assert!(!rows.iter().any(|r| r.figure.starts_with("commit-rate")));

        let markdown = super::super::to_markdown(&super::super::Machine::default(), &reports);
        assert!(markdown.contains("## Pulsar CDC against the database queue (PostgreSQL)"));
        assert!(
            markdown.contains("| Figure | database queue | Pulsar CDC | Pulsar / database queue |")
        );
        assert!(markdown.contains(
            "| CPU ms per process: Pulsar standalone JVM (broker + bookie + Pulsar IO \
             Debezium source) | - | 2.000 | - |"
        ));
        assert!(markdown.contains("| PostgreSQL (Pulsar CDC) | lone start-to-completion"));
        assert!(markdown.contains("- Queue modes: database queue, Pulsar CDC"));
        assert!(markdown.contains(
            "| Pulsar standalone JVM (broker + bookie + Pulsar IO Debezium source) | 2.00 | \
             2.000 |"
        ));
        assert!(markdown.contains("| Pulsar standalone JVM (broker + bookie + Pulsar IO Debezium source) | 614.4 MB | 716.8 MB |"));
    }

    #[test]
    fn databases_are_compared_within_one_queue_mode() {
        let cpu = [(API_SERVICE, 0.1)];
        let reports = vec![
            run(Dialect::Postgres, QueueMode::Database, &cpu),
            run(Dialect::Postgres, QueueMode::Pulsar, &cpu),
            run(Dialect::MySql, QueueMode::Database, &cpu),
            run(Dialect::MySql, QueueMode::Pulsar, &cpu),
        ];
        let sides: Vec<Sides> = Comparison::all(&reports).iter().map(|c| c.sides).collect();
        assert_eq!(
            sides,
            vec![
                Sides::Databases(QueueMode::Database),
                Sides::Databases(QueueMode::Pulsar),
                Sides::QueueModes(Dialect::Postgres),
                Sides::QueueModes(Dialect::MySql),
            ]
        );
        let pulsar = Comparison::of_databases(&reports, QueueMode::Pulsar).unwrap();
        assert_eq!(pulsar.left.queue_mode, QueueMode::Pulsar);
        assert_eq!(pulsar.right.dialect, Dialect::MySql);
        assert!(pulsar.verdict().unwrap().contains("Pulsar CDC"));
        let database = Comparison::of_databases(&reports, QueueMode::Database).unwrap();
        assert!(!database
            .rows()
            .iter()
            .any(|r| r.figure.contains("Pulsar standalone JVM")));
    }
}
