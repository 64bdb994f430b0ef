//! Sections of the scenarios beyond two-state processes: RPC, local queue, timers,
//! waiting processes, and the commit-rate ceiling.

use std::fmt::Write as _;

use super::mb;
use crate::ceiling::Ceiling;
use crate::database::Dialect;
use crate::limit::{Limit, STATEMENTS_PER_PROCESS};
use crate::scenarios::queue::QueueResult;
use crate::scenarios::rpc::RpcResult;
use crate::scenarios::timers::TimerResult;
use crate::scenarios::waiting::WaitingResult;
use crate::scenarios::ScenarioResult;
use crate::stats::{ms, SignedSummary};

const SIGNED_HEADER: &str = "| Figure | n | min | p50 | p90 | p99 | max | mean |\n\
                             |---|---|---|---|---|---|---|---|";

fn signed_row(out: &mut String, figure: &str, s: &SignedSummary) {
    let _ = writeln!(
        out,
        "| {figure} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
        s.count, s.min, s.p50, s.p90, s.p99, s.max, s.mean
    );
}

fn first_error(out: &mut String, error: Option<&String>) {
    if let Some(error) = error {
        let _ = writeln!(out, "\nFirst failure: `{error}`");
    }
}

pub(super) fn write_rpc(out: &mut String, rpc: Option<&RpcResult>) {
    let Some(rpc) = rpc else { return };
    let _ = writeln!(out, "\n### RPC\n");
    let _ = writeln!(
        out,
        "RPC `echo` (no attributes to load or write) on one process waiting on a local \
         queue, {} calls one at a time after 10 unmeasured ones; from sending the request \
         until the answer is read, in ms. {} failed.\n",
        rpc.calls, rpc.failed
    );
    let l = &rpc.latency;
    let _ = writeln!(
        out,
        "| p50 | p90 | p99 | max | mean |\n|---|---|---|---|---|\n| {} | {} | {} | {} | {} |",
        ms(l.p50),
        ms(l.p90),
        ms(l.p99),
        ms(l.max),
        ms(l.mean)
    );
    first_error(out, rpc.first_error.as_ref());
}

pub(super) fn write_queue(out: &mut String, queue: Option<&QueueResult>) {
    let Some(queue) = queue else { return };
    let _ = writeln!(out, "\n### Local queue: publish to execute\n");
    let _ = writeln!(
        out,
        "{} processes wait on a local queue; one message is published to each, one at a \
         time. Latency runs from sending the publish call to the worker's `execute` call \
         (both on this machine's clock), in ms. {} failed.\n",
        queue.messages, queue.failed
    );
    let _ = writeln!(out, "{SIGNED_HEADER}");
    signed_row(out, "publish to execute", &queue.latency);
    signed_row(out, "the publish call alone", &queue.publish_call);
    first_error(out, queue.first_error.as_ref());
}

pub(super) fn write_timers(out: &mut String, timers: Option<&TimerResult>) {
    let Some(t) = timers else { return };
    let _ = writeln!(out, "\n### Timers\n");
    let _ = writeln!(
        out,
        "{} processes started together (every start call sent at once; the last answered \
         after {:.2} s), each asking in its `waitUntil` for a {} s durable timer; their \
         requested fire times spread over {:.2} s. Lateness is when the worker's `execute` \
         was called minus the requested fire time, in ms; negative is early. The \
         requested fire time is the later of the `WAIT_UNTIL_COMPLETED` history event \
         (whole ms) plus the delay and the worker's `waitUntil` answer plus the delay, so \
         lateness is over-stated by under 1 ms and an early firing is certain. \"Service \
         side\" is the `TIMER_FIRED` history event (whole ms) against the same time.\n",
        t.processes,
        t.start_elapsed.as_secs_f64(),
        t.delay.as_secs_f64(),
        t.requested_spread.as_secs_f64()
    );
    let _ = writeln!(out, "{SIGNED_HEADER}");
    signed_row(out, "execute called (worker)", &t.lateness);
    signed_row(out, "timer fired (service side)", &t.fire_lateness);
    let _ = writeln!(
        out,
        "\nEarly: **{}**. Failed starts: {}; never executed: {}; history unreadable: {}. \
         Fired after the last start call answered: {} of {}.",
        t.early, t.failed_starts, t.not_fired, t.unmeasured, t.fired_after_starts, t.lateness.count
    );
    first_error(out, t.first_error.as_ref());
}

pub(super) fn write_waiting(
    out: &mut String,
    waiting: Option<&WaitingResult>,
    ratio: Option<(f64, f64, f64)>,
) {
    let Some(w) = waiting else { return };
    let _ = writeln!(out, "\n### Waiting processes\n");
    let _ = writeln!(
        out,
        "{} processes started with many start calls in flight, each waiting in its \
         `waitUntil` for a one-week timer or a local-queue message (any of), so each holds a \
         timer row and a queue wait. The start calls took {:.1} s; all {} were waiting \
         (their `waitUntil` called) after {:.1} s: {:.0} processes/s. Failed starts: {}; \
         never waiting: {}.\n",
        w.processes,
        w.starts_elapsed.as_secs_f64(),
        w.processes - w.failed_starts - w.not_waiting,
        w.all_waiting_after.as_secs_f64(),
        w.start_rate(),
        w.failed_starts,
        w.not_waiting
    );
    let _ = writeln!(
        out,
        "| Resident memory (MB) | xdb-async-service | xdb-api-service |\n|---|---|---|"
    );
    let (a, p) = (&w.async_memory, &w.api_memory);
    for (label, async_kib, api_kib) in [
        ("before they were started", a.before_kib, p.before_kib),
        ("all waiting", a.waiting_kib, p.waiting_kib),
        (
            "after the load beside them",
            a.after_load_kib,
            p.after_load_kib,
        ),
        (
            "peak (async: sampled every 100 ms and VmHWM over its life; API: sampled \
             every 100 ms over this scenario)",
            a.peak_kib,
            p.peak_kib,
        ),
    ] {
        let _ = writeln!(
            out,
            "| {label} | {:.1} | {:.1} |",
            mb(async_kib),
            mb(api_kib)
        );
    }
    let _ = writeln!(
        out,
        "\nThe load scenario just before they were started (the reference), then beside \
         them, each run after the database settled:\n"
    );
    for (run, load) in w.reference.iter().enumerate() {
        write_load_line(out, &format!("- before them, run {}", run + 1), load);
    }
    for (run, load) in w.beside.iter().enumerate() {
        write_load_line(out, &format!("- beside them, run {}", run + 1), load);
    }
    if let Some((ratio, with, without)) = ratio {
        let _ = writeln!(
            out,
            "\nThroughput beside the waiting processes against just before them (each side's \
             runs combined): {with:.0}/s against {without:.0}/s, a ratio of **{ratio:.2}**."
        );
    }
    first_error(out, w.first_error.as_ref());
}

fn write_load_line(out: &mut String, label: &str, s: &ScenarioResult) {
    let _ = writeln!(
        out,
        "{label}: {} processes, {} in flight, {} failed, {:.0} processes/s, p50 {} ms, \
         p99 {} ms.",
        s.processes,
        s.concurrency,
        s.failed,
        s.throughput(),
        ms(s.latency.p50),
        ms(s.latency.p99)
    );
}

/// XDB's statements run without it, beside XDB's load at the same in-flight level.
pub(super) fn write_limit(
    out: &mut String,
    limit: Option<&Result<Limit, String>>,
    load: Option<&ScenarioResult>,
) {
    let Some(limit) = limit else { return };
    let _ = writeln!(out, "\n### XDB's statements without XDB\n");
    let limit = match limit {
        Err(error) => {
            let _ = writeln!(out, "Not measured: `{error}`");
            return;
        }
        Ok(limit) => limit,
    };
    let _ = writeln!(
        out,
        "Right after the ceiling, on the same database and its XDB tables (the services \
         stopped): the statements XDB sends for one two-state process, then the read, \
         one process after another per client: on PostgreSQL pgbench running \
         bench/src/limit_writes.pgbench ({STATEMENTS_PER_PROCESS} statements), on \
         MySQL/MariaDB the bench's own generator running bench/src/limit_writes_mysql.sql. \
         The target is judged against two commits per process, the nearest to XDB's \
         under load (see the database work below).\n"
    );
    let _ = writeln!(
        out,
        "| Commits per process | Command | Processes | Processes/s | Mean per process (ms) | XDB's load / this |\n\
         |---|---|---|---|---|---|"
    );
    for (commits, run) in &limit.runs {
        let share = load
            .filter(|_| run.per_second > 0.0)
            .map_or("-".into(), |l| {
                format!("{:.2}", l.throughput() / run.per_second)
            });
        let _ = writeln!(
            out,
            "| {} | `{}` | {} | **{:.0}** | {} | {share} |",
            commits.per_process(),
            run.tool,
            run.transactions,
            run.per_second,
            run.latency_ms.map_or("-".into(), |v| format!("{v:.2}")),
        );
    }
    if let Some(load) = load {
        let _ = writeln!(
            out,
            "\nXDB's two-state processes at {} in flight: {:.0}/s.",
            load.concurrency,
            load.throughput()
        );
    }
}

pub(super) fn write_ceiling(
    out: &mut String,
    dialect: Dialect,
    ceiling: Option<&Result<Ceiling, String>>,
    load: Option<&ScenarioResult>,
) {
    let Some(ceiling) = ceiling else { return };
    let _ = writeln!(out, "\n### Commit-rate ceiling of the database\n");
    match ceiling {
        Err(error) => {
            let _ = writeln!(out, "Not measured: `{error}`");
        }
        Ok(c) => {
            let _ = writeln!(
                out,
                "Measured on the same {dialect} server in the same run, after the XDB \
                 scenarios (services stopped): {}.\n",
                c.tool
            );
            let _ = writeln!(
                out,
                "| Clients | Seconds | Transactions | Transactions/s | Mean latency (ms) |\n\
                 |---|---|---|---|---|\n| {} | {:.1} | {} | **{:.0}** | {} |",
                c.clients,
                c.seconds,
                c.transactions,
                c.per_second,
                c.latency_ms.map_or("-".into(), |l| format!("{l:.2}"))
            );
            if let Some(load) = load.filter(|_| c.per_second > 0.0) {
                let _ = writeln!(
                    out,
                    "\nXDB's two-state processes at {} in flight: {:.0}/s, {:.1}% of this \
                     ceiling in processes, each of which commits several transactions (see \
                     the database work below).",
                    load.concurrency,
                    load.throughput(),
                    load.throughput() * 100.0 / c.per_second
                );
            }
        }
    }
}
