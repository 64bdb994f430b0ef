//! Where the time goes: CPU per component, database work and statements per process.

use std::fmt::Write as _;

use crate::cpu::{CpuUsage, DB_SERVER, DB_SESSIONS};
use crate::database::{DbStatistics, Dialect, STATUS_COUNTERS};
use crate::profile::{self as statements, one_line, StatementStat};

pub(super) fn write_db(out: &mut String, db: &DbStatistics, processes: usize) {
    let per = |n: i64| n as f64 / processes.max(1) as f64;
    let _ = writeln!(out, "\n### Database work per process\n");
    let _ = writeln!(
        out,
        "From `pg_stat_database` / `pg_stat_user_tables` of the bench database over the \
         whole run ({processes} processes, including warm-up and health probes).\n"
    );
    let _ = writeln!(
        out,
        "- Transactions: {:.2} committed, {:.2} rolled back",
        per(db.commits),
        per(db.rollbacks)
    );
    let _ = writeln!(
        out,
        "- Rows: {:.2} inserted, {:.2} updated, {:.2} deleted, {:.1} returned by scans, \
         {:.1} fetched by index\n",
        per(db.rows_inserted),
        per(db.rows_updated),
        per(db.rows_deleted),
        per(db.rows_returned),
        per(db.rows_fetched)
    );
    let _ = writeln!(
        out,
        "| Table | Inserts | Updates (HOT) | Deletes | Seq scans | Index scans |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|");
    for t in &db.tables {
        let _ = writeln!(
            out,
            "| {} | {:.2} | {:.2} ({:.2}) | {:.2} | {:.2} | {:.2} |",
            t.table,
            per(t.inserted),
            per(t.updated),
            per(t.hot_updated),
            per(t.deleted),
            per(t.seq_scans),
            per(t.index_scans)
        );
    }
}

/// How the report names a CPU group on `dialect`'s server.
fn cpu_label(dialect: Dialect, group: &str) -> &str {
    match (dialect, group) {
        (Dialect::Postgres, DB_SESSIONS) => "postgres backends of the bench database",
        (Dialect::Postgres, DB_SERVER) => {
            "all postgres processes (the backends above, background, other databases)"
        }
        (Dialect::MySql, DB_SESSIONS) => "mariadbd threads of the bench database's connections",
        (Dialect::MySql, DB_SERVER) => {
            "mariadbd, whole (the threads above, background, other databases)"
        }
        _ => group,
    }
}

pub(super) fn write_cpu(out: &mut String, dialect: Dialect, cpu: &CpuUsage, completed: usize) {
    let per_process_ms = |seconds: f64| seconds * 1000.0 / completed.max(1) as f64;
    let _ = writeln!(out, "\n### CPU during the load scenario\n");
    let _ = writeln!(
        out,
        "CPU time (user + system, from `/proc`) over the load scenario, per completed \
         process. The whole server includes its sessions for the bench database. \
         MariaDB's connection threads are counted only while their connection is open at \
         the start and end of the scenario, so connections opened and closed in between \
         are missing from that row (not from the whole server's).\n"
    );
    let _ = writeln!(
        out,
        "| Component | CPU s | CPU ms per process |\n|---|---|---|"
    );
    for (name, seconds) in &cpu.groups {
        let label = cpu_label(dialect, name);
        match seconds {
            Some(seconds) => {
                let _ = writeln!(
                    out,
                    "| {label} | {seconds:.2} | {:.3} |",
                    per_process_ms(*seconds)
                );
            }
            None => {
                let _ = writeln!(out, "| {label} | not measurable | - |");
            }
        }
    }
    if let Some(other) = cpu.unaccounted() {
        let _ = writeln!(
            out,
            "| other work on the machine | {other:.2} | {:.3} |",
            per_process_ms(other)
        );
    }
    if let (Some(busy), Some((_, total))) = (cpu.machine_busy(), cpu.machine) {
        let _ = writeln!(
            out,
            "\nMachine CPUs busy: {:.0}% of {total:.1} CPU-seconds available.",
            busy * 100.0
        );
    }
}

/// MySQL's server-wide status counters over the run, per process.
pub(super) fn write_status(out: &mut String, counters: &[(String, i64)], processes: usize) {
    let per = |n: i64| n as f64 / processes.max(1) as f64;
    let _ = writeln!(out, "\n### Database work per process\n");
    let _ = writeln!(
        out,
        "From `SHOW GLOBAL STATUS` before and after the run ({processes} processes, \
         including warm-up and health probes). Server-wide: work of other databases on \
         the server during the run is included.\n"
    );
    let _ = writeln!(out, "| Counter | Per process | Meaning |\n|---|---|---|");
    for (name, value) in counters {
        let meaning = STATUS_COUNTERS
            .iter()
            .find(|c| c.name == name)
            .map_or("", |c| c.meaning);
        let _ = writeln!(out, "| {name} | {:.2} | {meaning} |", per(*value));
    }
}

pub(super) fn write_statements(
    out: &mut String,
    dialect: Dialect,
    stats: Option<&[StatementStat]>,
    processes: usize,
) {
    let _ = writeln!(out, "\n### Statements per process\n");
    let Some(stats) = stats else {
        let _ = writeln!(
            out,
            "Not measured: {}.",
            statements::unavailable_reason(dialect)
        );
        return;
    };
    let per = |n: f64| n / processes.max(1) as f64;
    let calls: i64 = stats.iter().map(|s| s.calls).sum();
    let total_ms: f64 = stats.iter().map(|s| s.total_ms).sum();
    let _ = writeln!(
        out,
        "From {}, by execution time ({} shown: {:.1} calls and {:.3} ms \
         of execution per process).\n",
        statements::source(dialect),
        stats.len(),
        per(calls as f64),
        per(total_ms)
    );
    let _ = writeln!(
        out,
        "| Calls/process | Rows/call | ms/call | Time share | Statement |\n|---|---|---|---|---|"
    );
    for s in stats {
        let _ = writeln!(
            out,
            "| {:.2} | {:.2} | {:.3} | {:.0}% | `{}` |",
            per(s.calls as f64),
            s.rows as f64 / s.calls.max(1) as f64,
            s.total_ms / s.calls.max(1) as f64,
            s.total_ms * 100.0 / total_ms.max(f64::EPSILON),
            one_line(&s.query, 140)
        );
    }
}
