//! The scenario's section of the bench report.

use std::fmt::Write as _;

use super::{ratio, secs, sql, FleetResult};
use crate::database::Dialect;
use crate::report::mb;
use crate::stats::{ms, LatencySummary};

impl FleetResult {
    /// The scenario's section of the report.
    pub fn write_markdown(&self, out: &mut String, dialect: Dialect) {
        let Some(shape) = self.shape else { return };
        let _ = writeln!(out, "\n### Fleet\n");
        let _ = writeln!(
            out,
            "{} executions RUNNING with no state (type `{}`), each with a row of `{}` \
             (`id` primary key = process id, `customer` indexed, `amount` not; {} \
             customers, {} rows each). Written with set-based SQL in {:.1} s, then \
             {} in {:.1} s; the rows matched those of {} executions started through \
             the API, column by column. Every figure beside the same work done directly \
             on one connection of the bench, in the same run.\n",
            shape.executions,
            sql::PROCESS_TYPE,
            sql::TABLE,
            shape.customers,
            shape.executions / shape.customers,
            self.population.as_secs_f64(),
            match dialect {
                Dialect::Postgres => "VACUUM ANALYZE",
                Dialect::MySql => "ANALYZE TABLE",
            },
            self.analyze.as_secs_f64(),
            self.checked,
        );
        let row = |name: &str, s: &LatencySummary| {
            format!(
                "| {name} | {} | {} | {} | {} |",
                s.count,
                ms(s.p50),
                ms(s.p99),
                ms(s.max)
            )
        };
        let _ = writeln!(
            out,
            "| query (ms) | runs | p50 | p99 | max |\n|---|---|---|---|---|\n{}\n{}\n{}\n{}\n{}\n{}",
            row("`list` where customer = ? (page of 100)", &self.list_service),
            row("the same statement, directly", &self.list_direct),
            row("`count` grouped by status", &self.count_service),
            row("`SELECT status, COUNT(*) … GROUP BY status`", &self.count_direct_grouped),
            row("`SELECT COUNT(*)`", &self.count_direct_all),
            row("`list` where amount = ? (unindexed)", &self.unindexed_service),
        );
        let fmt = |r: Option<f64>| r.map_or("-".to_string(), |r| format!("{r:.2}"));
        let _ = writeln!(
            out,
            "\nList p99 ratio (service / direct): **{}**. Count p50 ratio: **{}** against \
             `GROUP BY status`, {} against `COUNT(*)`. The unindexed list's p50 is {:.0}× \
             the indexed one's.",
            fmt(self.list_ratio()),
            fmt(self.count_ratio()),
            fmt(self.count_all_ratio()),
            ratio(
                secs(self.unindexed_service.p50),
                secs(self.list_service.p50)
            )
            .unwrap_or(0.0)
        );
        if let Some(probe) = &self.timeout {
            let _ = writeln!(
                out,
                "\nThe unindexed list on an API service with `api.query_timeout_ms = {}`: \
                 {} after {}: \"{}\"",
                probe.limit_ms,
                probe.status,
                ms(probe.elapsed),
                probe.message.replace('|', "\\|")
            );
        }
        let stops = &self.stops;
        let batch = &self.batch;
        let _ = writeln!(
            out,
            "\n| terminations | executions | failed | time | rate |\n|---|---|---|---|---|\n\
             | stop, {} clients one call each | {} | {} | {:.1} s | {:.0}/s |\n\
             | TERMINATE batch, ratePerSecond {} ({}) | {} done, {} skipped | {} | {:.1} s | {:.0}/s |",
            stops.clients,
            stops.executions,
            stops.failed,
            stops.elapsed.as_secs_f64(),
            stops.rate(),
            batch.rate_per_second,
            batch.status,
            batch.done,
            batch.skipped,
            batch.failed,
            batch.server_elapsed.unwrap_or(batch.elapsed).as_secs_f64(),
            batch.rate(),
        );
        if stops.overloaded > 0 {
            let _ = writeln!(
                out,
                "\n{} stop calls were answered 503 (overloaded) and sent again a second \
                 later, as the SDK clients do; their waits are in the stops' time.",
                stops.overloaded
            );
        }
        let _ = writeln!(
            out,
            "\nBatch rate / stop rate: **{}**.",
            fmt(self.batch_ratio())
        );
        if let Some((first, last, max)) = batch.rss() {
            let _ = writeln!(
                out,
                "Async service RSS during the batch ({} samples, one a second): first {:.1} MB, \
                 last {:.1} MB, max {:.1} MB.",
                batch.rss_kib.len(),
                mb(first),
                mb(last),
                mb(max)
            );
        }
        if let Some(error) = stops.first_error.as_ref().or(batch.error.as_ref()) {
            let _ = writeln!(out, "\nFirst error: {error}");
        }
        for error in self.errors.iter().take(5) {
            let _ = writeln!(out, "\n- {error}");
        }
    }
}
