//! The peers report: one table of every contender's figures with XDB's ratio to each
//! peer, issue 40's targets against Restate, and each contender's components.

use std::fmt::Write as _;

use super::ContenderResult;

/// Issue 40's targets for XDB on PostgreSQL against Restate: (figure, bar on
/// XDB / Restate, whether XDB must be at least the bar rather than at most).
pub const RESTATE_TARGETS: [(Figure, f64, bool); 4] = [
    (Figure::Throughput, 5.0, true),
    (Figure::LoneP50, 0.25, false),
    (Figure::LatenessP99, 0.05, false),
    (Figure::CpuPerProcess, 1.0 / 6.0, false),
];

/// A figure of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    Throughput,
    LoneP50,
    LoneP99,
    LatenessP50,
    LatenessP99,
    CpuPerProcess,
    OwnCpuPerProcess,
    PeakMemory,
}

impl Figure {
    pub const ALL: [Figure; 8] = [
        Figure::Throughput,
        Figure::LoneP50,
        Figure::LoneP99,
        Figure::LatenessP50,
        Figure::LatenessP99,
        Figure::CpuPerProcess,
        Figure::OwnCpuPerProcess,
        Figure::PeakMemory,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Figure::Throughput => "Two-step processes/s, 64 in flight (mean of the loads)",
            Figure::LoneP50 => "Lone p50 (ms)",
            Figure::LoneP99 => "Lone p99 (ms)",
            Figure::LatenessP50 => "Timer lateness p50 (ms)",
            Figure::LatenessP99 => "Timer lateness p99 (ms)",
            Figure::CpuPerProcess => "Machine CPU per process (ms, mean of the loads)",
            Figure::OwnCpuPerProcess => {
                "CPU of its components and the bench per process (ms, over the loads)"
            }
            Figure::PeakMemory => "Peak RSS, sum of the components' peaks (MB)",
        }
    }

    /// The figure of `result`; `None` when it was not measured.
    pub fn of(self, result: &ContenderResult) -> Option<f64> {
        if result.error.is_some() {
            return None;
        }
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
        let measured_timers = result.lateness.count > 0;
        match self {
            Figure::Throughput => mean(result.loads.iter().map(|l| l.throughput())),
            Figure::LoneP50 => (result.lone.latency.count > 0).then(|| ms(result.lone.latency.p50)),
            Figure::LoneP99 => (result.lone.latency.count > 0).then(|| ms(result.lone.latency.p99)),
            Figure::LatenessP50 => measured_timers.then_some(result.lateness.p50),
            Figure::LatenessP99 => measured_timers.then_some(result.lateness.p99),
            Figure::CpuPerProcess => mean(result.cpu_ms.iter().copied()),
            // Other work on a shared machine is left out, but so is the kernel's for them.
            Figure::OwnCpuPerProcess => (!result.component_cpu_ms.is_empty())
                .then(|| result.component_cpu_ms.iter().map(|(_, ms)| ms).sum()),
            Figure::PeakMemory => (!result.memory.is_empty()).then(|| {
                result
                    .memory
                    .iter()
                    .map(|(_, kib)| *kib as f64 * 1024.0 / 1e6)
                    .sum()
            }),
        }
    }

    /// The cell: the figure, and each load's figure when there were several.
    fn cell(self, result: &ContenderResult) -> String {
        let Some(value) = self.of(result) else {
            return "—".into();
        };
        let each: Vec<f64> = match self {
            Figure::Throughput => result.loads.iter().map(|l| l.throughput()).collect(),
            Figure::CpuPerProcess => result.cpu_ms.clone(),
            _ => Vec::new(),
        };
        let decimals = self.decimals(value);
        if each.len() > 1 {
            let each: Vec<String> = each.iter().map(|v| format!("{v:.decimals$}")).collect();
            format!("{value:.decimals$} ({})", each.join(" / "))
        } else {
            format!("{value:.decimals$}")
        }
    }

    fn decimals(self, value: f64) -> usize {
        match self {
            Figure::Throughput | Figure::PeakMemory => 0,
            _ if value.abs() >= 100.0 => 0,
            _ if value.abs() >= 10.0 => 1,
            _ => 2,
        }
    }
}

/// The mean of `values`; `None` when there are none.
fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let values: Vec<f64> = values.collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// XDB's figure over the peer's: `None` when either is missing or the peer's is not
/// positive (a lateness can be zero or negative, and then no ratio means anything).
pub fn ratio(figure: Figure, xdb: &ContenderResult, peer: &ContenderResult) -> Option<f64> {
    let (x, p) = (figure.of(xdb)?, figure.of(peer)?);
    (p > 0.0).then(|| x / p)
}

fn ratio_text(value: Option<f64>) -> String {
    match value {
        Some(r) if r >= 10.0 => format!("{r:.0}x"),
        Some(r) if r >= 0.1 => format!("{r:.2}x"),
        Some(r) => format!("{r:.3}x"),
        None => "—".into(),
    }
}

/// Whether a target is met: `None` when it could not be judged.
pub fn target_met(ratio: Option<f64>, bar: f64, at_least: bool) -> Option<bool> {
    let ratio = ratio?;
    Some(if at_least { ratio >= bar } else { ratio <= bar })
}

/// The markdown of the peers report.
pub fn to_markdown(results: &[ContenderResult]) -> String {
    let mut out = String::new();
    let xdb: Vec<&ContenderResult> = results.iter().filter(|r| r.xdb).collect();
    let peers: Vec<&ContenderResult> = results.iter().filter(|r| !r.xdb).collect();
    let _ = writeln!(out, "## XDB beside its peers\n");
    let mut header = String::from("| Figure |");
    let mut rule = String::from("|---|");
    for contender in &xdb {
        let _ = write!(header, " {} |", contender.name);
        rule.push_str("---|");
    }
    for peer in &peers {
        let names: Vec<&str> = xdb.iter().map(|x| short(&x.name)).collect();
        let _ = write!(
            header,
            " {} | XDB / {} ({}) |",
            peer.name,
            peer.name,
            names.join(", ")
        );
        rule.push_str("---|---|");
    }
    let _ = writeln!(out, "{header}\n{rule}");
    for figure in Figure::ALL {
        let mut row = format!("| {} |", figure.label());
        for contender in &xdb {
            let _ = write!(row, " {} |", figure.cell(contender));
        }
        for peer in &peers {
            let ratios: Vec<String> = xdb
                .iter()
                .map(|x| ratio_text(ratio(figure, x, peer)))
                .collect();
            let _ = write!(row, " {} | {} |", figure.cell(peer), ratios.join(", "));
        }
        let _ = writeln!(out, "{row}");
    }
    write_targets(&mut out, results);
    write_components(&mut out, results);
    out
}

/// "PostgreSQL" of "XDB, PostgreSQL".
fn short(name: &str) -> &str {
    name.strip_prefix("XDB, ").unwrap_or(name)
}

fn write_targets(out: &mut String, results: &[ContenderResult]) {
    let xdb = results
        .iter()
        .find(|r| r.xdb && r.name.ends_with("PostgreSQL"));
    let restate = results.iter().find(|r| r.name == "Restate");
    let _ = writeln!(
        out,
        "\nIssue 40's targets, XDB on PostgreSQL (database queue) against Restate:\n"
    );
    let _ = writeln!(out, "| Target | XDB / Restate | Result |\n|---|---|---|");
    for (figure, bar, at_least) in RESTATE_TARGETS {
        let value = match (xdb, restate) {
            (Some(x), Some(r)) => ratio(figure, x, r),
            _ => None,
        };
        let verdict = match target_met(value, bar, at_least) {
            Some(true) => "met",
            Some(false) => "missed",
            None => "not measured",
        };
        let sign = if at_least { ">=" } else { "<=" };
        let _ = writeln!(
            out,
            "| {} {sign} {bar:.3}x Restate's | {} | {verdict} |",
            figure.label(),
            ratio_text(value)
        );
    }
}

fn write_components(out: &mut String, results: &[ContenderResult]) {
    let _ = writeln!(out, "\nEach contender's components: peak RSS (MB), and CPU per process over the loads (ms; \"bench\" is the load generator, and XDB's worker).\n");
    let _ = writeln!(
        out,
        "| Contender | Peak RSS | CPU per process | Failed calls |\n|---|---|---|---|"
    );
    for result in results {
        if let Some(error) = &result.error {
            let _ = writeln!(
                out,
                "| {} | did not run: `{}` | | |",
                result.name,
                error.replace('\n', " ")
            );
            continue;
        }
        let memory: Vec<String> = result
            .memory
            .iter()
            .map(|(n, kib)| format!("{n} {:.0}", *kib as f64 * 1024.0 / 1e6))
            .collect();
        let cpu: Vec<String> = result
            .component_cpu_ms
            .iter()
            .map(|(n, ms)| format!("{n} {ms:.2}"))
            .collect();
        let failures = match [&result.lone, &result.timers]
            .into_iter()
            .chain(&result.loads)
            .find_map(|b| b.first_error.as_ref())
        {
            Some(error) => format!(
                "{} (first: `{}`)",
                result.failures(),
                error.replace('\n', " ")
            ),
            None => "0".into(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {failures} |",
            result.name,
            memory.join(", "),
            cpu.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::peers::generator::Batch;
    use crate::stats::{LatencySummary, SignedSummary};

    fn contender(
        name: &str,
        xdb: bool,
        per_second: &[f64],
        lone_p50_ms: u64,
        late_p99: f64,
        cpu: &[f64],
    ) -> ContenderResult {
        let loads = per_second
            .iter()
            .map(|rate| Batch {
                calls: (*rate as usize) * 10,
                elapsed: Duration::from_secs(10),
                ..Batch::default()
            })
            .collect();
        ContenderResult {
            name: name.into(),
            xdb,
            loads,
            cpu_ms: cpu.to_vec(),
            lone: Batch {
                calls: 1,
                latency: LatencySummary {
                    count: 1,
                    p50: Duration::from_millis(lone_p50_ms),
                    p99: Duration::from_millis(lone_p50_ms * 2),
                    ..LatencySummary::default()
                },
                ..Batch::default()
            },
            component_cpu_ms: cpu.iter().map(|ms| ("c".to_string(), ms / 2.0)).collect(),
            lateness: SignedSummary {
                count: 1,
                p50: late_p99 / 2.0,
                p99: late_p99,
                ..SignedSummary::default()
            },
            memory: vec![("a".into(), 1000), ("b".into(), 2000)],
            ..ContenderResult::default()
        }
    }

    #[test]
    fn ratios_are_xdb_over_the_peer_of_the_means() {
        let xdb = contender(
            "XDB, PostgreSQL",
            true,
            &[1200.0, 1500.0, 1800.0],
            3,
            40.0,
            &[1.0, 2.0],
        );
        let restate = contender("Restate", false, &[500.0], 6, 800.0, &[6.0]);
        let r = ratio(Figure::Throughput, &xdb, &restate).unwrap();
        assert!((r - 3.0).abs() < 1e-9, "{r}");
        assert!((ratio(Figure::LoneP50, &xdb, &restate).unwrap() - 0.5).abs() < 1e-9);
        assert!((ratio(Figure::CpuPerProcess, &xdb, &restate).unwrap() - 0.25).abs() < 1e-9);
        assert!((Figure::PeakMemory.of(&xdb).unwrap() - 3.072).abs() < 1e-9);
        assert!((Figure::OwnCpuPerProcess.of(&xdb).unwrap() - 1.5).abs() < 1e-9);
        // A peer whose lateness is not positive gives no ratio.
        let punctual = contender("P", false, &[1.0], 1, -1.0, &[1.0]);
        assert_eq!(ratio(Figure::LatenessP99, &xdb, &punctual), None);
    }

    #[test]
    fn targets_judge_the_right_direction() {
        assert_eq!(target_met(Some(5.0), 5.0, true), Some(true));
        assert_eq!(target_met(Some(3.1), 5.0, true), Some(false));
        assert_eq!(target_met(Some(0.3), 0.25, false), Some(false));
        assert_eq!(target_met(Some(0.04), 0.05, false), Some(true));
        assert_eq!(target_met(None, 0.05, false), None);
    }

    #[test]
    fn the_table_has_a_column_per_contender_and_a_ratio_per_peer() {
        let results = vec![
            contender(
                "XDB, PostgreSQL",
                true,
                &[1500.0, 1500.0, 1500.0],
                3,
                40.0,
                &[1.4],
            ),
            contender("XDB, MariaDB", true, &[1000.0], 5, 50.0, &[2.0]),
            contender("Restate", false, &[500.0], 6, 800.0, &[9.0]),
            ContenderResult::failed("Temporal", false, &anyhow::anyhow!("no binary")),
        ];
        let text = to_markdown(&results);
        let header = text.lines().find(|l| l.starts_with("| Figure |")).unwrap();
        assert_eq!(header.matches(" | ").count() + 1, 1 + 2 + 2 * 2, "{header}");
        assert!(header.contains("XDB / Restate (PostgreSQL, MariaDB)"));
        let throughput = text.lines().find(|l| l.starts_with("| Two-step")).unwrap();
        assert!(
            throughput.contains("| 1500 (1500 / 1500 / 1500) |"),
            "{throughput}"
        );
        assert!(throughput.contains("| 3.00x, 2.00x |"), "{throughput}");
        assert!(text.contains("| Two-step processes/s, 64 in flight (mean of the loads) >= 5.000x Restate's | 3.00x | missed |"));
        // CPU 1.4 ms against 9: under a sixth.
        assert!(text.contains(
            "| Machine CPU per process (ms, mean of the loads) <= 0.167x Restate's | 0.16x | met |"
        ));
        assert!(text.contains("| Temporal | did not run: `no binary` | | |"));
    }
}
