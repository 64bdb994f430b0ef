//! Issue 8's targets, each with the measured figure and PASS, FAIL or not run.

use super::{mb, Report};
use crate::cpu::CpuUsage;
use crate::options::QueueMode;
use crate::scenarios::waiting::combined_throughput;

/// Completed two-state processes per second at the judged in-flight level.
pub const TARGET_LOAD_PER_SECOND: f64 = 800.0;
/// In-flight level the throughput target is set for.
pub const TARGET_CONCURRENCY: usize = 64;
/// Lone start-to-completion p50 and p99, ms (at most).
pub const TARGET_LONE_P50_MS: f64 = 5.0;
pub const TARGET_LONE_P99_MS: f64 = 15.0;
/// Machine CPU per completed process in the load scenario, ms (at most).
pub const TARGET_CPU_MS: f64 = 4.0;
/// Timer lateness p99, ms (under).
pub const TARGET_TIMER_P99_MS: f64 = 50.0;
/// RPC p50, ms (under).
pub const TARGET_RPC_P50_MS: f64 = 5.0;
/// Local-queue publish-to-execute p50, ms (under).
pub const TARGET_QUEUE_P50_MS: f64 = 10.0;
/// Async-service resident memory with the waiting processes, MB (10^6 bytes; under).
pub const TARGET_ASYNC_RSS_MB: f64 = 100.0;
/// Waiting processes the memory target is set for.
pub const TARGET_WAITING: usize = 100_000;
/// Issue 40's scale: waiting processes both services hold under
/// [`TARGET_ASYNC_RSS_MB`] each.
pub const TARGET_SCALE_WAITING: usize = 1_000_000;
/// "Throughput unchanged while they wait": the load while waiting reaches at least this
/// share of the load without them. The issue gives no tolerance; runs on this machine
/// vary by several percent between two identical loads, so 10% is the bar.
pub const MIN_WAITING_THROUGHPUT_RATIO: f64 = 0.9;

/// Issue 40's "against the limit": the share of the rate of XDB's own statements run
/// without it (see `crate::limit`) that XDB reaches at the same in-flight level.
pub const TARGET_LIMIT_SHARE: f64 = 0.7;

/// Executions (over as many business rows) the fleet targets are set for.
pub const TARGET_FLEET: u64 = 1_000_000;

/// The outcome of one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    /// Its scenario did not run (or measured nothing).
    NotRun,
}

impl Verdict {
    fn of(pass: bool) -> Verdict {
        if pass {
            Verdict::Pass
        } else {
            Verdict::Fail
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::NotRun => "not run",
        }
    }
}

/// One target line.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetCheck {
    pub target: String,
    pub measured: String,
    pub verdict: Verdict,
}

fn check(target: String, measured: Option<(String, bool)>) -> TargetCheck {
    match measured {
        Some((measured, pass)) => TargetCheck {
            target,
            measured,
            verdict: Verdict::of(pass),
        },
        None => TargetCheck {
            target,
            measured: "-".into(),
            verdict: Verdict::NotRun,
        },
    }
}

/// Machine CPU (every process on it) per completed process, ms, and the share of it
/// the bench's own components account for.
pub fn machine_cpu_ms(cpu: &CpuUsage, completed: usize) -> Option<(f64, Option<f64>)> {
    let (busy, _) = cpu.machine?;
    let per = |s: f64| s * 1000.0 / completed.max(1) as f64;
    let ours = cpu.unaccounted().map(|other| per(busy - other));
    Some((per(busy), ours))
}

impl Report {
    /// The measured components of this run, in words.
    pub fn components(&self) -> &'static str {
        match self.queue_mode {
            QueueMode::Database => "the services, the database server and the bench",
            QueueMode::Pulsar => {
                "the services, the Pulsar standalone JVM, the database server and the bench"
            }
        }
    }

    /// [`Report::components`] for a table cell.
    pub fn components_short(&self) -> &'static str {
        match self.queue_mode {
            QueueMode::Database => "services + database + bench",
            QueueMode::Pulsar => "services + Pulsar JVM + database + bench",
        }
    }

    /// Issue 8's targets, each with the measured figure and its verdict.
    pub fn targets(&self) -> Vec<TargetCheck> {
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
        let lone = self.lone.as_ref().filter(|l| l.completed > 0);
        let load = self.load();
        let mut checks = vec![
            check(
                format!(
                    ">= {TARGET_LOAD_PER_SECOND} two-state processes/s completed, \
                     {TARGET_CONCURRENCY} in flight"
                ),
                load.map(|l| {
                    let rate = l.throughput();
                    let pass =
                        rate >= TARGET_LOAD_PER_SECOND && l.concurrency == TARGET_CONCURRENCY;
                    (format!("{rate:.0}/s ({} in flight)", l.concurrency), pass)
                }),
            ),
            check(
                format!("lone start-to-completion p50 <= {TARGET_LONE_P50_MS} ms"),
                lone.map(|l| {
                    let p50 = ms(l.latency.p50);
                    (format!("{p50:.2} ms"), p50 <= TARGET_LONE_P50_MS)
                }),
            ),
            check(
                format!("lone start-to-completion p99 <= {TARGET_LONE_P99_MS} ms"),
                lone.map(|l| {
                    let p99 = ms(l.latency.p99);
                    (format!("{p99:.2} ms"), p99 <= TARGET_LONE_P99_MS)
                }),
            ),
            check(
                format!(
                    "machine CPU per completed process (all processes on the machine) <= \
                     {TARGET_CPU_MS} ms"
                ),
                load.zip(self.load_cpu.as_ref()).and_then(|(l, cpu)| {
                    let (all, ours) = machine_cpu_ms(cpu, l.completed)?;
                    let ours = ours.map_or(String::new(), |o| {
                        format!(" ({} alone: {o:.2} ms)", self.components_short())
                    });
                    Some((format!("{all:.2} ms{ours}"), all <= TARGET_CPU_MS))
                }),
            ),
        ];
        let timers = self.timers.as_ref().filter(|t| t.lateness.count > 0);
        checks.push(check(
            format!("timer lateness p99 < {TARGET_TIMER_P99_MS} ms (1,000 one-second timers)"),
            timers.map(|t| {
                let p99 = t.lateness.p99;
                let pass = p99 < TARGET_TIMER_P99_MS && t.complete();
                (format!("{p99:.1} ms ({} timers)", t.lateness.count), pass)
            }),
        ));
        checks.push(check(
            "no timer fires early".into(),
            timers.map(|t| (format!("{} early", t.early), t.early == 0)),
        ));
        let rpc = self.rpc.as_ref().filter(|r| r.latency.count > 0);
        checks.push(check(
            format!("RPC p50 < {TARGET_RPC_P50_MS} ms"),
            rpc.map(|r| {
                let p50 = ms(r.latency.p50);
                (
                    format!("{p50:.2} ms"),
                    p50 < TARGET_RPC_P50_MS && r.failed == 0,
                )
            }),
        ));
        let queue = self.queue_latency.as_ref().filter(|q| q.latency.count > 0);
        checks.push(check(
            format!("local-queue publish to execute p50 < {TARGET_QUEUE_P50_MS} ms"),
            queue.map(|q| {
                let p50 = q.latency.p50;
                (
                    format!("{p50:.2} ms"),
                    p50 < TARGET_QUEUE_P50_MS && q.failed == 0,
                )
            }),
        ));
        let waiting = self.waiting.as_ref();
        checks.push(check(
            format!(
                "async service RSS < {TARGET_ASYNC_RSS_MB} MB with {TARGET_WAITING} waiting \
                 processes"
            ),
            waiting.map(|w| {
                let peak = mb(w.async_memory.peak_kib);
                let enough = w.processes >= TARGET_WAITING && w.not_waiting + w.failed_starts == 0;
                let note = if enough {
                    String::new()
                } else {
                    format!(" (only {} waiting: not the target's size)", w.processes)
                };
                (
                    format!("{peak:.1} MB peak{note}"),
                    peak < TARGET_ASYNC_RSS_MB && enough,
                )
            }),
        ));
        checks.push(check(
            format!(
                "API and async service RSS each < {TARGET_ASYNC_RSS_MB} MB with \
                 {TARGET_SCALE_WAITING} waiting processes"
            ),
            waiting.map(|w| {
                let (async_peak, api_peak) =
                    (mb(w.async_memory.peak_kib), mb(w.api_memory.peak_kib));
                let enough =
                    w.processes >= TARGET_SCALE_WAITING && w.not_waiting + w.failed_starts == 0;
                let note = if enough {
                    String::new()
                } else {
                    format!(" (only {} waiting: not the target's size)", w.processes)
                };
                (
                    format!(
                        "async {async_peak:.1} MB, API {api_peak:.1} MB peak; all waiting \
                         after {:.0} s{note}",
                        w.all_waiting_after.as_secs_f64()
                    ),
                    async_peak < TARGET_ASYNC_RSS_MB && api_peak < TARGET_ASYNC_RSS_MB && enough,
                )
            }),
        ));
        checks.push(check(
            format!(
                "throughput unchanged while they wait (at least {MIN_WAITING_THROUGHPUT_RATIO} \
                 of it without them)"
            ),
            self.waiting_throughput_ratio()
                .map(|(ratio, with, without)| {
                    (
                        format!("{with:.0}/s against {without:.0}/s: {ratio:.2}"),
                        ratio >= MIN_WAITING_THROUGHPUT_RATIO,
                    )
                }),
        ));
        checks.push(self.limit_target());
        checks.extend(self.fleet_targets());
        checks.push(check(
            "no failed process or call".into(),
            Some((format!("{} failed", self.failures()), self.failures() == 0)),
        ));
        checks
    }

    /// Issue 40's "against the limit": XDB's throughput at the judged level against
    /// its statements run without it, by as many clients (pgbench on PostgreSQL).
    fn limit_target(&self) -> TargetCheck {
        let limit = self
            .limit
            .as_ref()
            .and_then(|l| l.as_ref().ok())
            .and_then(|l| l.judged());
        check(
            format!(
                ">= {TARGET_LIMIT_SHARE} of XDB's statements of a two-state process run \
                 without XDB in two commits, as many clients as processes in flight"
            ),
            self.load()
                .zip(limit.filter(|l| l.per_second > 0.0))
                .map(|(load, limit)| {
                    let share = load.throughput() / limit.per_second;
                    (
                        format!(
                            "{:.0}/s against {:.0}/s: {share:.2}",
                            load.throughput(),
                            limit.per_second
                        ),
                        share >= TARGET_LIMIT_SHARE && limit.clients == load.concurrency,
                    )
                }),
        )
    }

    /// The fleet scenario's targets: each of its figures beside the same work without
    /// XDB, measured in the same run.
    fn fleet_targets(&self) -> Vec<TargetCheck> {
        use crate::scenarios::fleet::{MAX_COUNT_RATIO, MAX_LIST_P99_RATIO, MIN_BATCH_RATE_RATIO};
        let fleet = self.fleet.as_ref();
        let size = fleet.and_then(|f| f.shape).map_or(String::new(), |s| {
            if s.executions >= TARGET_FLEET {
                String::new()
            } else {
                format!(" (only {} executions: not the target's size)", s.executions)
            }
        });
        let full = |f: &crate::scenarios::fleet::FleetResult| {
            f.shape.is_some_and(|s| s.executions >= TARGET_FLEET)
        };
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
        vec![
            check(
                format!(
                    "fleet of {TARGET_FLEET}: filtered first page by an indexed business column, \
                     p99 within {MAX_LIST_P99_RATIO}x of the same SQL directly"
                ),
                fleet.and_then(|f| {
                    let r = f.list_ratio()?;
                    Some((
                        format!(
                            "{:.2} ms against {:.2} ms: {r:.2}x{size}",
                            ms(f.list_service.p99),
                            ms(f.list_direct.p99)
                        ),
                        r <= MAX_LIST_P99_RATIO && full(f),
                    ))
                }),
            ),
            check(
                format!(
                    "fleet: count by status within {MAX_COUNT_RATIO}x of the plain \
                     COUNT … GROUP BY status (p50)"
                ),
                fleet.and_then(|f| {
                    let r = f.count_ratio()?;
                    Some((
                        format!(
                            "{:.1} ms against {:.1} ms: {r:.2}x{size}",
                            ms(f.count_service.p50),
                            ms(f.count_direct_grouped.p50)
                        ),
                        r <= MAX_COUNT_RATIO && full(f),
                    ))
                }),
            ),
            check(
                format!(
                    "fleet: TERMINATE batch at >= {MIN_BATCH_RATE_RATIO} of the rate of \
                     64 clients calling stop one by one"
                ),
                fleet.and_then(|f| {
                    let r = f.batch_ratio()?;
                    Some((
                        format!(
                            "{:.0}/s ({} done) against {:.0}/s: {r:.2}{size}",
                            f.batch.rate(),
                            f.batch.done,
                            f.stops.rate()
                        ),
                        r >= MIN_BATCH_RATE_RATIO
                            && f.batch.status == "COMPLETED"
                            && f.stops.clients == 64
                            && full(f),
                    ))
                }),
            ),
            check(
                "fleet: async service RSS flat through the batch".into(),
                fleet.and_then(|f| {
                    let (first, last, max) = f.batch.rss()?;
                    Some((
                        format!(
                            "first {:.1} MB, last {:.1} MB, max {:.1} MB",
                            mb(first),
                            mb(last),
                            mb(max)
                        ),
                        f.batch.rss_flat()?,
                    ))
                }),
            ),
        ]
    }

    /// (with / without, with, without): load throughput beside the waiting processes
    /// against the judged load level without them.
    pub fn waiting_throughput_ratio(&self) -> Option<(f64, f64, f64)> {
        let waiting = self.waiting.as_ref()?;
        let with = combined_throughput(&waiting.beside)?;
        let without = combined_throughput(&waiting.reference)?;
        (without > 0.0).then(|| (with / without, with, without))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::database::Dialect;
    use crate::options::test_options;
    use crate::scenarios::rpc::RpcResult;
    use crate::scenarios::timers::TimerResult;
    use crate::scenarios::waiting::{ServiceMemory, WaitingResult};
    use crate::scenarios::ScenarioResult;
    use crate::stats::{LatencySummary, SignedSummary};

    fn two_state(concurrency: usize, completed: usize, seconds: u64, p50: u64) -> ScenarioResult {
        ScenarioResult {
            name: "load".into(),
            processes: completed,
            concurrency,
            completed,
            failed: 0,
            first_error: None,
            elapsed: Duration::from_secs(seconds),
            latency: LatencySummary {
                count: completed,
                p50: Duration::from_millis(p50),
                p99: Duration::from_millis(p50 * 4),
                ..LatencySummary::default()
            },
            start_latency: LatencySummary::default(),
        }
    }

    fn verdict(report: &Report, starts_with: &str) -> (Verdict, String) {
        let check = report
            .targets()
            .into_iter()
            .find(|c| c.target.starts_with(starts_with))
            .unwrap_or_else(|| panic!("no target {starts_with:?}"));
        (check.verdict, check.measured)
    }

    #[test]
    fn targets_pass_fail_and_not_run() {
        let mut report = Report::new(Dialect::Postgres, &test_options());
        // 900/s at 64 in flight passes; 16 in flight is not the judged level.
        report.levels = vec![two_state(16, 100, 1, 1), two_state(64, 9000, 10, 60)];
        // Lone p50 5 ms passes (at most), its p99 of 20 ms fails.
        report.lone = Some(two_state(1, 100, 1, 5));
        report.timers = Some(TimerResult {
            processes: 1000,
            early: 1,
            lateness: SignedSummary {
                count: 1000,
                p99: 49.0,
                ..SignedSummary::default()
            },
            ..TimerResult::default()
        });
        report.waiting = Some(WaitingResult {
            processes: 10_000,
            async_memory: memory_peak(40_000),
            // Runs of each side combine: 18,000 in 20 s before them, 16,000 beside.
            reference: vec![two_state(64, 9500, 10, 60), two_state(64, 8500, 10, 60)],
            beside: vec![two_state(64, 8000, 10, 60), two_state(64, 8000, 10, 60)],
            ..WaitingResult::default()
        });
        assert_eq!(verdict(&report, ">= 800").0, Verdict::Pass);
        assert_eq!(
            verdict(&report, "lone start-to-completion p50").0,
            Verdict::Pass
        );
        assert_eq!(
            verdict(&report, "lone start-to-completion p99").0,
            Verdict::Fail
        );
        assert_eq!(verdict(&report, "timer lateness").0, Verdict::Pass);
        assert_eq!(verdict(&report, "no timer fires early").0, Verdict::Fail);
        assert_eq!(verdict(&report, "RPC p50").0, Verdict::NotRun);
        // Under 100 MB, but 10,000 waiting is not the target's 100,000.
        let (rss, measured) = verdict(&report, "async service RSS");
        assert_eq!(rss, Verdict::Fail);
        assert!(measured.contains("only 10000 waiting"), "{measured}");
        let (scale, measured) = verdict(&report, "API and async service RSS");
        assert_eq!(scale, Verdict::Fail);
        assert!(measured.contains("only 10000 waiting"), "{measured}");
        // 800/s beside them against 900/s just before them: 0.89, under the 0.9 bar.
        let (unchanged, measured) = verdict(&report, "throughput unchanged");
        assert_eq!(unchanged, Verdict::Fail);
        assert!(measured.contains("0.89"), "{measured}");

        report.rpc = Some(RpcResult {
            calls: 10,
            latency: LatencySummary {
                count: 10,
                p50: Duration::from_millis(5),
                ..LatencySummary::default()
            },
            ..RpcResult::default()
        });
        // "under 5 ms": exactly 5 fails.
        assert_eq!(verdict(&report, "RPC p50").0, Verdict::Fail);
        assert_eq!(report.failures(), 0);
    }

    fn memory_peak(peak_kib: u64) -> ServiceMemory {
        ServiceMemory {
            peak_kib,
            ..ServiceMemory::default()
        }
    }

    #[test]
    fn the_scale_target_needs_both_services_under_the_bound() {
        let mut report = Report::new(Dialect::Postgres, &test_options());
        let mut waiting = WaitingResult {
            processes: 1_000_000,
            async_memory: memory_peak(60_000),
            api_memory: memory_peak(90_000),
            all_waiting_after: Duration::from_secs(700),
            ..WaitingResult::default()
        };
        report.waiting = Some(waiting.clone());
        let (scale, measured) = verdict(&report, "API and async service RSS");
        assert_eq!(scale, Verdict::Pass, "{measured}");
        assert!(measured.contains("all waiting after 700 s"), "{measured}");
        // 100,000 KiB is 102.4 MB: past the bound.
        waiting.api_memory.peak_kib = 100_000;
        report.waiting = Some(waiting);
        assert_eq!(
            verdict(&report, "API and async service RSS").0,
            Verdict::Fail
        );
    }

    #[test]
    fn the_limit_target_is_a_share_at_the_same_in_flight_level_on_both_databases() {
        let limit = |clients: usize, per_second: f64| {
            let run = |commits, per_second: f64| {
                let ceiling = crate::ceiling::Ceiling {
                    tool: "pgbench".into(),
                    clients,
                    seconds: 10.0,
                    transactions: (per_second * 10.0) as u64,
                    per_second,
                    latency_ms: None,
                };
                (commits, ceiling)
            };
            // The five-commit form is slower; the two-commit one is judged.
            crate::limit::Limit {
                runs: vec![
                    run(crate::limit::Commits::Apart, per_second / 2.0),
                    run(crate::limit::Commits::Together, per_second),
                ],
            }
        };
        let mut report = Report::new(Dialect::Postgres, &test_options());
        let target = ">= 0.7 of XDB's statements of a two-state process run without XDB";
        assert_eq!(verdict(&report, target).0, Verdict::NotRun);
        // 900/s against 1,200/s: 0.75.
        report.levels = vec![two_state(64, 9000, 10, 60)];
        report.limit = Some(Ok(limit(64, 1200.0)));
        let (pass, measured) = verdict(&report, target);
        assert_eq!(pass, Verdict::Pass, "{measured}");
        assert!(
            measured.contains("900/s against 1200/s: 0.75"),
            "{measured}"
        );
        // 0.69 fails; so does a run of other clients than the load's in flight.
        report.limit = Some(Ok(limit(64, 1300.0)));
        assert_eq!(verdict(&report, target).0, Verdict::Fail);
        report.limit = Some(Ok(limit(32, 1000.0)));
        assert_eq!(verdict(&report, target).0, Verdict::Fail);
        report.limit = Some(Err("pgbench failed".into()));
        assert_eq!(verdict(&report, target).0, Verdict::NotRun);
        let mut mysql = Report::new(Dialect::MySql, &test_options());
        mysql.levels = vec![two_state(64, 9000, 10, 60)];
        mysql.limit = Some(Ok(limit(64, 1200.0)));
        assert_eq!(verdict(&mysql, target).0, Verdict::Pass);
    }

    #[test]
    fn the_markdown_holds_every_target_and_the_scenarios() {
        let mut report = Report::new(Dialect::Postgres, &test_options());
        report.levels = vec![two_state(64, 500, 1, 60)];
        let markdown = super::super::to_markdown(&super::super::Machine::default(), &[report]);
        assert!(markdown.contains(
            "| PostgreSQL | >= 800 two-state processes/s completed, 64 in flight | 500/s (64 in \
             flight) | FAIL |"
        ));
        assert!(markdown.contains("| PostgreSQL | RPC p50 < 5 ms | - | not run |"));
        assert!(markdown.contains(
            "- Scenarios: lone, load, timers, rpc, queue, waiting, overload, fleet, backlog, pgbench"
        ));
        assert!(markdown.contains("| load | 500 | 64 | 0 | 60.00 |"));
    }
}
