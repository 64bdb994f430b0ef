//! One database's detail sections: latency and throughput, memory, CPU, database work.

use std::fmt::Write as _;

use super::{figures, mb, profile, targets::machine_cpu_ms, Report};
use crate::database::DbWork;
use crate::options::QueueMode;
use crate::scenarios::ScenarioResult;
use crate::stats::ms;

impl Report {
    /// This database's detail sections (level-2 heading, level-3 subsections).
    pub(super) fn write_details(&self, out: &mut String) {
        let _ = writeln!(out, "\n## {} ({}) in detail\n", self.dialect, self.queue);
        let _ = writeln!(out, "Server: {}\n", self.server);
        let two_state: Vec<&ScenarioResult> = self.lone.iter().chain(&self.levels).collect();
        if !two_state.is_empty() {
            write_latency(out, &two_state);
        }
        figures::write_rpc(out, self.rpc.as_ref());
        figures::write_queue(out, self.queue_latency.as_ref());
        figures::write_timers(out, self.timers.as_ref());
        write_memory(out, self);
        figures::write_waiting(out, self.waiting.as_ref(), self.waiting_throughput_ratio());
        if let Some(overload) = &self.overload {
            overload.write_markdown(out);
        }
        if let Some(fleet) = &self.fleet {
            fleet.write_markdown(out, self.dialect);
        }
        if let Some(backlog) = &self.backlog {
            backlog.write_markdown(out, self.lone.as_ref().map(|lone| lone.latency.p50));
        }
        if let (Some(cpu), Some(load)) = (&self.load_cpu, self.load()) {
            profile::write_cpu(out, self.dialect, cpu, load.completed);
            if let Some((all, ours)) = machine_cpu_ms(cpu, load.completed) {
                let _ = writeln!(
                    out,
                    "\nMachine CPU per completed process (every process on the machine, \
                     busy CPU time from `/proc/stat`): **{all:.2} ms**{}.",
                    ours.map_or(String::new(), |o| format!(
                        "; {} alone: {o:.2} ms",
                        self.components()
                    ))
                );
            }
        }
        figures::write_ceiling(out, self.dialect, self.ceiling.as_ref(), self.load());
        figures::write_limit(out, self.limit.as_ref(), self.load());
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

fn write_latency(out: &mut String, scenarios: &[&ScenarioResult]) {
    let _ = writeln!(out, "### Two-state processes: latency and throughput\n");
    let _ = writeln!(
        out,
        "From sending start until wait-for-completion answers COMPLETED, in ms. \"load\" \
         keeps that many processes in flight (each client task starts the next as soon as \
         its last completed); throughput is completed processes per second of wall time.\n"
    );
    let _ = writeln!(
        out,
        "| Scenario | Processes | In flight | Failed | p50 | p90 | p99 | max | mean | Processes/s |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|");
    for s in scenarios {
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
        "| Scenario | In flight | p50 | p90 | p99 | max | mean |\n|---|---|---|---|---|---|---|"
    );
    for s in scenarios {
        let l = &s.start_latency;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            s.name,
            s.concurrency,
            ms(l.p50),
            ms(l.p90),
            ms(l.p99),
            ms(l.max),
            ms(l.mean)
        );
    }
    for s in scenarios {
        if let Some(error) = &s.first_error {
            let _ = writeln!(
                out,
                "\nFirst failure in {} ({} in flight): `{error}`",
                s.name, s.concurrency
            );
        }
    }
}

fn write_memory(out: &mut String, report: &Report) {
    let _ = writeln!(out, "\n### Memory\n");
    let _ = writeln!(
        out,
        "Resident set size from `/proc/<pid>/status`, over every scenario but \
         \"waiting\", which reports its own below. The services were started for this run: \
         VmRSS every 100 ms, and VmHWM. The bench and the Pulsar JVM ran before it: VmRSS \
         every 100 ms alone. The database server: the summed proportional set size \
         (`Pss` of `/proc/<pid>/smaps_rollup`, shared memory counted once) of all its \
         processes every second, the whole server (other databases' sessions included).\n"
    );
    let _ = writeln!(out, "| Component | At the start | Peak |\n|---|---|---|");
    let mut rows = vec![
        ("xdb-api-service", Some(&report.api_memory)),
        ("xdb-async-service", Some(&report.async_memory)),
    ];
    if report.queue_mode == QueueMode::Pulsar {
        rows.push((
            "Pulsar standalone JVM (broker + bookie + Pulsar IO Debezium source)",
            report.pulsar_memory.as_ref(),
        ));
    }
    rows.extend([
        (
            "database server, whole (summed PSS)",
            report.db_memory.as_ref(),
        ),
        (
            "xdb-bench (worker + client)",
            Some(&report.bench_memory).filter(|m| m.samples > 0),
        ),
    ]);
    for (name, memory) in rows {
        match memory {
            Some(memory) => {
                let _ = writeln!(
                    out,
                    "| {name} | {:.1} MB | {:.1} MB |",
                    mb(memory.start_kib),
                    mb(memory.peak_kib)
                );
            }
            None => {
                let _ = writeln!(out, "| {name} | not measured | - |");
            }
        }
    }
}
