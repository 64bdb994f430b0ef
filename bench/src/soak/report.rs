//! The soak's report: a row a minute, and its three goals judged on first and last
//! windows of the same run.

use std::fmt::Write as _;
use std::time::Duration;

use super::load::{MinuteOutcomes, UnitKind};
use super::{mib, MinuteSample, SoakOptions};
use crate::database::Dialect;
use crate::stats::{percentile, LatencySummary};

/// The queue table: every unit inserts and deletes its rows, so its size shows bloat.
pub const TASK_TABLE: &str = "xdb_sys_tasks";
/// Minutes compared at each end of the run, at most.
const WINDOW_MINUTES: usize = 10;

/// One minute of the soak.
#[derive(Debug, Clone, Default)]
pub struct MinuteRow {
    pub outcomes: MinuteOutcomes,
    pub sample: MinuteSample,
    pub events: Vec<String>,
}

impl MinuteRow {
    fn p99_ms(&self, kind: UnitKind) -> Option<f64> {
        let mut sorted = self.outcomes.of(kind).to_vec();
        sorted.sort_unstable();
        (!sorted.is_empty()).then(|| percentile(&sorted, 99.0).as_secs_f64() * 1000.0)
    }
}

/// What a soak measured.
#[derive(Debug, Clone)]
pub struct SoakReport {
    pub dialect: Dialect,
    pub server: String,
    /// Units per second of the mix, closed-loop, measured first.
    pub maximum: f64,
    /// Units per second sent.
    pub rate: f64,
    pub hold: Duration,
    pub minutes: Vec<MinuteRow>,
    /// The first failed unit's error.
    pub first_error: Option<String>,
}

impl SoakReport {
    /// Joins the outcomes by minute with the samples taken at each minute's end.
    pub fn new(
        dialect: Dialect,
        options: &SoakOptions,
        maximum: f64,
        rate: f64,
        mut outcomes: Vec<MinuteOutcomes>,
        samples: Vec<(MinuteSample, Vec<String>)>,
        first_error: Option<String>,
    ) -> SoakReport {
        let count = samples.len();
        // Units still in flight when the load stopped ended after the last minute: they
        // count in it.
        if outcomes.len() > count && count > 0 {
            for late in outcomes.split_off(count) {
                let last = &mut outcomes[count - 1];
                for (slot, latencies) in late.latencies.into_iter().enumerate() {
                    last.latencies[slot].extend(latencies);
                }
                last.failed += late.failed;
                last.shed += late.shed;
            }
        }
        outcomes.resize_with(count, MinuteOutcomes::default);
        let minutes = outcomes
            .into_iter()
            .zip(samples)
            .map(|(outcomes, (sample, events))| MinuteRow {
                outcomes,
                sample,
                events,
            })
            .collect();
        SoakReport {
            dialect,
            server: String::new(),
            maximum,
            rate,
            hold: options.hold,
            minutes,
            first_error,
        }
    }

    /// Units that failed in the whole run.
    pub fn failed(&self) -> usize {
        self.minutes.iter().map(|m| m.outcomes.failed).sum()
    }

    /// Units not sent because too many were in flight.
    pub fn shed(&self) -> usize {
        self.minutes.iter().map(|m| m.outcomes.shed).sum()
    }

    fn window(&self) -> usize {
        (self.minutes.len() / 3).clamp(1, WINDOW_MINUTES)
    }

    /// Mean of `value` over the first and the last window.
    fn ends(&self, value: impl Fn(&MinuteRow) -> f64) -> (f64, f64) {
        let window = self.window();
        let mean = |rows: &[MinuteRow]| rows.iter().map(&value).sum::<f64>() / rows.len() as f64;
        let n = self.minutes.len();
        if n == 0 {
            return (0.0, 0.0);
        }
        (
            mean(&self.minutes[..window]),
            mean(&self.minutes[n - window..]),
        )
    }

    /// The goals: (what, measured, met).
    pub fn goals(&self) -> Vec<(String, String, bool)> {
        let window = self.window();
        let mut goals = Vec::new();
        let (first, last) = self.ends(|m| m.outcomes.completed() as f64 / 60.0);
        goals.push((
            format!("throughput of the last {window} min within 10% of the first {window}"),
            format!(
                "{first:.1} → {last:.1} units/s ({:+.1}%)",
                percent(first, last)
            ),
            last >= first * 0.9,
        ));
        for (name, rss) in [
            (
                "API",
                (|m: &MinuteRow| mib(m.sample.api_rss_kib)) as fn(&MinuteRow) -> f64,
            ),
            ("async instances", |m: &MinuteRow| {
                mib(m.sample.async_rss_kib)
            }),
        ] {
            let (first, last) = self.ends(rss);
            goals.push((
                format!("{name} RSS flat (last {window} min within 10% or 8 MiB of the first)"),
                format!("{first:.0} → {last:.0} MiB"),
                last <= (first * 1.1).max(first + 8.0),
            ));
        }
        if let Some((before, ended, end)) = self.task_table_sizes() {
            goals.push((
                format!(
                    "{TASK_TABLE} stops growing once the held transaction ends \
                     (at the end within 10% of its size then)"
                ),
                format!(
                    "{:.1} MiB before the hold, {:.1} when it ended, {:.1} at the end",
                    before as f64 / 1048576.0,
                    ended as f64 / 1048576.0,
                    end as f64 / 1048576.0
                ),
                end as f64 <= ended as f64 * 1.1,
            ));
        }
        goals
    }

    /// The task table's size before the hold, when it ended and at the end.
    fn task_table_sizes(&self) -> Option<(i64, i64, i64)> {
        let began = self.minutes.iter().position(|m| has(m, "held open"))?;
        let ended = self
            .minutes
            .iter()
            .position(|m| has(m, "held transaction ends"))?;
        let size = |i: usize| self.minutes[i].sample.gauges.table(TASK_TABLE).bytes;
        Some((size(began), size(ended), size(self.minutes.len() - 1)))
    }

    /// The report as markdown.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        let horizon = match self.dialect {
            Dialect::Postgres => "xmin age",
            Dialect::MySql => "history list",
        };
        let _ = writeln!(
            out,
            "### Soak on {} ({})\n\n{} minutes at {:.0} units/s, {:.0}% of the {:.0} units/s \
             measured first with 64 in flight; a transaction held open for {} min in the \
             middle; the oldest async instance replaced every few minutes. Units: 7 in 10 \
             two-state processes, 1 a one-second timer, 2 a queue wait with one RPC and one \
             message. {} units failed, {} shed.{}\n",
            self.dialect,
            self.server,
            self.minutes.len(),
            self.rate,
            self.rate / self.maximum.max(f64::EPSILON) * 100.0,
            self.maximum,
            self.hold.as_secs() / 60,
            self.failed(),
            self.shed(),
            self.first_error
                .as_ref()
                .map(|e| format!(" First failure: `{e}`."))
                .unwrap_or_default()
        );
        let _ = writeln!(out, "| goal | measured | met |\n|---|---|---|");
        for (goal, measured, met) in self.goals() {
            let _ = writeln!(
                out,
                "| {goal} | {measured} | {} |",
                if met { "yes" } else { "**no**" }
            );
        }
        let _ = writeln!(
            out,
            "\n| min | units/s | p99 steps ms | p99 timer ms | p99 queue+RPC ms | API MiB | \
             async MiB | database MiB | XDB tables MiB | XDB live rows | {TASK_TABLE} MiB | dead rows | \
             {horizon} | events |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        );
        for (i, row) in self.minutes.iter().enumerate() {
            let p99 = |kind| row.p99_ms(kind).map_or("-".into(), |v| format!("{v:.0}"));
            let gauges = &row.sample.gauges;
            let _ = writeln!(
                out,
                "| {} | {:.1} | {} | {} | {} | {:.0} | {:.0} | {:.0} | {:.1} | {} | {:.1} | {} | {} | {} |",
                i + 1,
                row.outcomes.completed() as f64 / 60.0,
                p99(UnitKind::Steps),
                p99(UnitKind::Timer),
                p99(UnitKind::QueueAndRpc),
                mib(row.sample.api_rss_kib),
                mib(row.sample.async_rss_kib),
                mib(row.sample.db_kib),
                gauges.total_bytes() as f64 / 1048576.0,
                gauges.total_live_rows(),
                gauges.table(TASK_TABLE).bytes as f64 / 1048576.0,
                gauges.total_dead_rows(),
                gauges.horizon,
                row.events.join("; ")
            );
        }
        let all: Vec<Duration> = self
            .minutes
            .iter()
            .flat_map(|m| m.outcomes.of(UnitKind::Steps).iter().copied())
            .collect();
        let steps = LatencySummary::of(&all);
        let _ = writeln!(
            out,
            "\nTwo-state processes over the whole run: p50 {:.1} ms, p99 {:.1} ms, max {:.0} ms.",
            steps.p50.as_secs_f64() * 1000.0,
            steps.p99.as_secs_f64() * 1000.0,
            steps.max.as_secs_f64() * 1000.0
        );
        out
    }
}

fn has(row: &MinuteRow, event: &str) -> bool {
    row.events.iter().any(|e| e.contains(event))
}

fn percent(first: f64, last: f64) -> f64 {
    (last - first) / first.max(f64::EPSILON) * 100.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::soak::gauges::TableGauge;

    fn options() -> SoakOptions {
        SoakOptions {
            admin_url: String::new(),
            minutes: 3,
            rate: None,
            share: 0.5,
            probe: Duration::from_secs(1),
            hold: Duration::from_secs(60),
            replace_every: Duration::from_secs(60),
            async_instances: 2,
            max_in_flight: 10,
            timer_delay: Duration::from_secs(1),
        }
    }

    fn minute(
        done: usize,
        api_kib: u64,
        task_bytes: i64,
        event: &str,
    ) -> (MinuteOutcomes, (MinuteSample, Vec<String>)) {
        let mut outcomes = MinuteOutcomes::default();
        outcomes.latencies[0] = vec![Duration::from_millis(10); done];
        let mut sample = MinuteSample {
            api_rss_kib: api_kib,
            ..MinuteSample::default()
        };
        let gauge = TableGauge {
            bytes: task_bytes,
            ..TableGauge::default()
        };
        sample.gauges.tables.insert(TASK_TABLE.into(), gauge);
        (outcomes, (sample, vec![event.to_string()]))
    }

    #[test]
    fn goals_compare_the_first_and_last_minutes() {
        let rows = [
            minute(600, 10_240, 100, "a transaction is held open for 1 min"),
            minute(590, 10_240, 500, "the held transaction ends"),
            minute(500, 40_960, 600, ""),
        ];
        let (outcomes, samples): (Vec<_>, Vec<_>) = rows.into_iter().unzip();
        let report = SoakReport::new(
            Dialect::Postgres,
            &options(),
            20.0,
            10.0,
            outcomes,
            samples,
            None,
        );
        let goals = report.goals();
        assert_eq!(goals.len(), 4);
        assert!(
            !goals[0].2,
            "600 → 500 a minute is a 17% loss: {:?}",
            goals[0]
        );
        assert!(
            !goals[1].2,
            "the API's RSS grew 10 → 40 MiB: {:?}",
            goals[1]
        );
        assert!(goals[2].2, "no async instance ran: 0 → 0");
        assert!(
            !goals[3].2,
            "the task table grew 20% after the hold: {:?}",
            goals[3]
        );
        assert!(report.to_markdown().contains("| 3 | 8.3 |"));
    }

    #[test]
    fn units_ending_after_the_last_minute_count_in_it() {
        let (mut outcomes, samples): (Vec<_>, Vec<_>) =
            [minute(60, 0, 0, ""), minute(60, 0, 0, "")]
                .into_iter()
                .unzip();
        outcomes.push(MinuteOutcomes {
            failed: 2,
            ..minute(6, 0, 0, "").0
        });
        let report = SoakReport::new(
            Dialect::MySql,
            &options(),
            1.0,
            1.0,
            outcomes,
            samples,
            None,
        );
        assert_eq!(report.minutes.len(), 2);
        assert_eq!(report.minutes[1].outcomes.completed(), 66);
        assert_eq!(report.failed(), 2);
    }
}
