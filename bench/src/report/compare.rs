//! MySQL against PostgreSQL: the same figures side by side, their ratio, and whether
//! MySQL stays within [`MAX_RATIO`] of PostgreSQL.

use std::fmt::Write as _;

use super::{machine_cpu_ms, mb, Report};
use crate::cpu::{BENCH, DB_SERVER, DB_SESSIONS};
use crate::database::Dialect;
use crate::services::{API_SERVICE, ASYNC_SERVICE};

/// MySQL may be this many times worse than PostgreSQL on a judged figure.
pub const MAX_RATIO: f64 = 2.0;

/// One figure of both databases.
#[derive(Debug, Clone, PartialEq)]
pub struct ComparisonRow {
    pub figure: String,
    pub postgres: Option<f64>,
    pub mysql: Option<f64>,
    /// Throughput: more is better; everything else: less is better.
    pub higher_is_better: bool,
    /// Whether the within-2x bar applies (not to figures measured differently on the
    /// two servers).
    pub judged: bool,
    /// Decimals to print.
    pub decimals: usize,
}

impl ComparisonRow {
    /// MySQL / PostgreSQL.
    pub fn ratio(&self) -> Option<f64> {
        match (self.postgres, self.mysql) {
            (Some(pg), Some(my)) if pg > 0.0 => Some(my / pg),
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

/// The PostgreSQL and the MySQL run of one invocation.
pub struct Comparison<'a> {
    pub postgres: &'a Report,
    pub mysql: &'a Report,
}

impl<'a> Comparison<'a> {
    /// The comparison when `reports` hold both a PostgreSQL and a MySQL run.
    pub fn of(reports: &'a [Report]) -> Option<Comparison<'a>> {
        let find = |d: Dialect| reports.iter().find(|r| r.dialect == d);
        Some(Comparison {
            postgres: find(Dialect::Postgres)?,
            mysql: find(Dialect::MySql)?,
        })
    }

    pub fn rows(&self) -> Vec<ComparisonRow> {
        let (pg, my) = (self.postgres, self.mysql);
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
        let row = |figure: &str, f: &dyn Fn(&Report) -> Option<f64>, decimals| ComparisonRow {
            figure: figure.to_string(),
            postgres: f(pg),
            mysql: f(my),
            higher_is_better: false,
            judged: true,
            decimals,
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
        for level in &pg.levels {
            let c = level.concurrency;
            let at = move |r: &Report| r.levels.iter().find(|l| l.concurrency == c).cloned();
            rows.push(higher(row(
                &format!("load throughput (processes/s, {c} in flight)"),
                &|r| Some(at(r)?.throughput()),
                0,
            )));
            if c == pg.judged_concurrency {
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
            row(
                "xdb-async-service peak RSS with the waiting processes (MB)",
                &|r| Some(mb(r.waiting.as_ref()?.async_peak_kib)),
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
            ComparisonRow {
                // Different tools on the two servers (pgbench, an in-process generator).
                judged: false,
                ..higher(row(
                    "commit-rate ceiling (insert + update transactions/s, 32 clients)",
                    &|r| Some(r.ceiling.as_ref()?.as_ref().ok()?.per_second),
                    0,
                ))
            },
        ]);
        for (group, label, judged) in [
            (API_SERVICE, "xdb-api-service", true),
            (ASYNC_SERVICE, "xdb-async-service", true),
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
        ] {
            let per_process = |r: &Report| {
                let cpu = r.load_cpu.as_ref()?.group(group)?;
                Some(cpu * 1000.0 / r.load()?.completed.max(1) as f64)
            };
            rows.push(ComparisonRow {
                judged,
                ..row(&format!("CPU ms per process: {label}"), &per_process, 3)
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

    /// The verdict line: every judged figure within the bar.
    pub fn verdict(&self) -> String {
        let (within, judged) = self.bar();
        let pass = judged > 0 && within == judged;
        format!(
            "{}  MySQL within {MAX_RATIO}x of PostgreSQL ({within} of {judged} figures)",
            if pass { "PASS" } else { "FAIL" }
        )
    }

    pub(super) fn write(&self, out: &mut String) {
        let _ = writeln!(out, "## MySQL against PostgreSQL\n");
        let _ = writeln!(
            out,
            "Same scenarios, same machine, one invocation. CPU figures cover the judged \
             load level. The bar: every figure of MySQL within {MAX_RATIO}x of \
             PostgreSQL's (throughput at least 1/{MAX_RATIO} of it). The bench \
             connections' CPU is not judged: MariaDB's per-connection threads are only \
             counted while connected, so a client that reconnects is undercounted; the \
             whole server's figure is.\n"
        );
        let _ = writeln!(
            out,
            "| Figure | PostgreSQL | MySQL | MySQL / PostgreSQL | Within {MAX_RATIO}x |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|");
        let value = |v: Option<f64>, decimals: usize| {
            v.map_or("not measured".to_string(), |v| format!("{v:.decimals$}"))
        };
        for row in self.rows() {
            let verdict = match row.within_bar() {
                Some(true) => "PASS",
                Some(false) => "FAIL",
                None if row.judged => "n/a",
                None => "not judged",
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {verdict} |",
                row.figure,
                value(row.postgres, row.decimals),
                value(row.mysql, row.decimals),
                row.ratio().map_or("-".into(), |r| format!("{r:.2}")),
            );
        }
        let _ = writeln!(out, "\n**{}**\n", self.verdict());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(pg: f64, my: f64, higher_is_better: bool) -> ComparisonRow {
        ComparisonRow {
            figure: "x".into(),
            postgres: Some(pg),
            mysql: Some(my),
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
            mysql: None,
            ..row(1.0, 1.0, false)
        };
        assert_eq!(unmeasured.within_bar(), None);
        let not_judged = ComparisonRow {
            judged: false,
            ..row(1.0, 9.0, false)
        };
        assert_eq!(not_judged.within_bar(), None);
    }
}
