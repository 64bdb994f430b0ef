//! "fleet": many running executions over a business table of the same size, and the
//! operator's calls on them, each beside the same work done without XDB in the same run:
//!
//! - population (not measured against anything, but timed): N executions RUNNING with
//!   no state, written with set-based SQL as a start writes them (checked column by
//!   column against executions started through the API), each with a row of
//!   `fleet_orders` (indexed on `customer`);
//! - (a) `list` filtered by an indexed business column against the statement the
//!   service renders for it, issued directly;
//! - (b) `count` grouped by status against `GROUP BY status` (and `COUNT(*)`) directly;
//! - (c) a TERMINATE batch against 64 clients calling stop one by one, the async
//!   service's RSS sampled every second through the batch;
//! - (d) the same list on an unindexed column (`amount`), and what a service whose
//!   `api.query_timeout_ms` it runs past answers.

use std::path::Path;
use std::time::Duration;

use crate::database::BenchDatabase;
use crate::stats::LatencySummary;

mod api;
mod direct;
mod population;
mod queries;
mod report;
pub mod sql;
mod terminations;

use api::Api;
use direct::Direct;
use queries::Lcg;
pub use queries::TimeoutProbe;
pub use sql::{ratio, Shape};
pub use terminations::{rss_flat, Batch, Stops, MAX_RSS_GROWTH_SHARE, RSS_SLACK_MB};

/// The list's page size.
pub const PAGE_SIZE: i64 = 100;
/// The judged ratios: the service's p99 (list) or p50 (count) to the direct one's, at
/// most; the batch's rate to the stop calls', at least.
pub const MAX_LIST_P99_RATIO: f64 = 1.5;
pub const MAX_COUNT_RATIO: f64 = 1.5;
pub const MIN_BATCH_RATE_RATIO: f64 = 0.5;

/// The scenario's sizes.
#[derive(Debug, Clone, Copy)]
pub struct FleetOptions {
    pub executions: u64,
    pub list_requests: usize,
    pub count_runs: usize,
    pub unindexed_requests: usize,
    pub stops: u64,
    pub stop_clients: usize,
    pub batch: u64,
    pub rate_per_second: u32,
}

/// Everything the scenario measured.
#[derive(Debug, Clone, Default)]
pub struct FleetResult {
    pub shape: Option<Shape>,
    pub population: Duration,
    /// VACUUM ANALYZE (PostgreSQL) or ANALYZE TABLE (MySQL) after it.
    pub analyze: Duration,
    /// Executions started through the API whose rows the population's matched.
    pub checked: usize,
    pub list_service: LatencySummary,
    pub list_direct: LatencySummary,
    pub count_service: LatencySummary,
    pub count_direct_grouped: LatencySummary,
    pub count_direct_all: LatencySummary,
    pub unindexed_service: LatencySummary,
    pub timeout: Option<TimeoutProbe>,
    pub stops: Stops,
    pub batch: Batch,
    /// Calls that failed or answered other than expected (pages not full, wrong counts).
    pub errors: Vec<String>,
}

impl FleetResult {
    pub fn failures(&self) -> usize {
        self.errors.len()
            + self.stops.failed
            + self.batch.failed as usize
            + usize::from(self.batch.status != "COMPLETED")
    }

    /// Service p99 / direct p99 of the indexed list.
    pub fn list_ratio(&self) -> Option<f64> {
        ratio(secs(self.list_service.p99), secs(self.list_direct.p99))
    }

    /// Service p50 / direct `GROUP BY status` p50.
    pub fn count_ratio(&self) -> Option<f64> {
        ratio(
            secs(self.count_service.p50),
            secs(self.count_direct_grouped.p50),
        )
    }

    /// Service p50 / direct `COUNT(*)` p50.
    pub fn count_all_ratio(&self) -> Option<f64> {
        ratio(
            secs(self.count_service.p50),
            secs(self.count_direct_all.p50),
        )
    }

    /// Batch rate / stop-call rate.
    pub fn batch_ratio(&self) -> Option<f64> {
        ratio(self.batch.rate(), self.stops.rate())
    }
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// Where the scenario runs.
pub struct FleetContext<'a> {
    pub database: &'a BenchDatabase,
    pub service_url: &'a str,
    pub worker_url: &'a str,
    pub async_pid: u32,
    pub api_binary: &'a Path,
    pub log_dir: &'a Path,
}

/// Runs the scenario.
pub async fn fleet(
    context: &FleetContext<'_>,
    options: FleetOptions,
) -> anyhow::Result<FleetResult> {
    let dialect = context.database.dialect();
    let shape = Shape::new(options.executions.max(1));
    let mut result = FleetResult {
        shape: Some(shape),
        ..FleetResult::default()
    };
    let http = reqwest::Client::new();
    let api = Api {
        http: &http,
        base: context.service_url,
    };
    let mut direct = Direct::connect(dialect, context.database.url()).await?;
    for statement in sql::create_table(dialect) {
        direct.execute(&statement).await?;
    }

    let checks = population::start_checks(&api, context.worker_url).await?;
    let now_ms = chrono::Utc::now().timestamp_millis();
    (result.population, result.analyze) =
        population::populate(&mut direct, context, shape, now_ms).await?;
    result.checked = population::check_population(&mut direct, &api, &checks).await?;

    let mut rng = Lcg(now_ms as u64 | 1);
    queries::list_by_customer(
        &api,
        &mut direct,
        shape,
        options.list_requests,
        &mut rng,
        &mut result,
    )
    .await?;
    queries::count_by_status(&api, &mut direct, options.count_runs, &mut result).await?;
    queries::unindexed(
        context,
        &api,
        shape,
        options.unindexed_requests,
        &mut rng,
        &mut result,
    )
    .await;
    terminations::stops_against_batch(context, &api, shape, options, &mut result).await;
    direct.close().await;
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_ratios() {
        let mut result = FleetResult {
            stops: Stops {
                executions: 1000,
                failed: 0,
                elapsed: Duration::from_secs(2),
                ..Stops::default()
            },
            batch: Batch {
                done: 3000,
                elapsed: Duration::from_secs(10),
                server_elapsed: Some(Duration::from_secs(3)),
                rss_kib: vec![5, 9, 7],
                status: "COMPLETED".into(),
                ..Batch::default()
            },
            ..FleetResult::default()
        };
        assert_eq!(result.stops.rate(), 500.0);
        assert_eq!(result.batch.rate(), 1000.0);
        assert_eq!(result.batch_ratio(), Some(2.0));
        assert_eq!(result.batch.rss(), Some((5, 7, 9)));
        assert_eq!(result.failures(), 0);
        result.batch.status = "FAILED".into();
        assert_eq!(result.failures(), 1);
        assert_eq!(result.list_ratio(), None);
    }
}
