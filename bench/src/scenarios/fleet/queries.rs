//! The queries measured beside the same work done directly: (a) the indexed list,
//! (b) the count by status, (d) the unindexed list and a service's answer past its
//! query time limit.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::api::{list_request, post, xdb_protocol_paths, Api};
use super::direct::Direct;
use super::{sql, FleetContext, FleetResult, Shape, PAGE_SIZE};
use crate::services::{self, ServiceProcess, API_SERVICE};
use crate::stats::LatencySummary;

/// The answer of a service whose query time limit the unindexed filter runs past.
#[derive(Debug, Clone, Default)]
pub struct TimeoutProbe {
    pub limit_ms: u64,
    pub status: u16,
    pub message: String,
    pub elapsed: Duration,
}

/// Untimed pairs before the measured ones. The direct connection wrote the population
/// and prepares its statement before its clock starts; the service's filtered reads
/// open their connection on first use, and a new PostgreSQL backend reads the tables'
/// catalog entries during its first statements. Without them, the first 30 pairs held 9
/// of the service's 15 slowest requests (of 1,000), and 1 of the direct statement's.
const WARM_UP_PAIRS: usize = 50;

/// (a) The indexed list, service and direct interleaved, after [`WARM_UP_PAIRS`].
pub(super) async fn list_by_customer(
    api: &Api<'_>,
    direct: &mut Direct,
    shape: Shape,
    requests: usize,
    rng: &mut Lcg,
    result: &mut FleetResult,
) -> anyhow::Result<()> {
    eprintln!(
        "xdb-bench: fleet: list by customer ({} requests each)",
        requests
    );
    let mut prepared = None;
    let (mut service, mut plain) = (Vec::new(), Vec::new());
    for request in 0..WARM_UP_PAIRS + requests {
        let customer = rng.below(shape.customers) as i64;
        let measured = request >= WARM_UP_PAIRS;
        // A customer's rows are spread over the tables, so whichever of the two reads
        // them first pays the buffer pool's misses (at 1,000,000 executions most of a
        // page's rows are not cached); each goes first every other time.
        let direct_first = request % 2 == 1;
        if direct_first {
            let elapsed = direct_list(direct, &mut prepared, customer).await?;
            plain.extend(measured.then_some(elapsed));
        }
        let (elapsed, answer) = api
            .timed_call(
                xdb_protocol_paths::LIST,
                &list_request("customer", customer),
            )
            .await;
        match answer {
            Ok(page) => {
                service.extend(measured.then_some(elapsed));
                let rows = page["executions"].as_array().map_or(0, Vec::len);
                let wanted = (shape.executions / shape.customers) as usize;
                if rows < wanted.min(PAGE_SIZE as usize) {
                    result
                        .errors
                        .push(format!("list of customer {customer}: {rows} executions"));
                }
            }
            Err(error) => result.errors.push(format!("list: {error:#}")),
        }
        if !direct_first {
            let elapsed = direct_list(direct, &mut prepared, customer).await?;
            plain.extend(measured.then_some(elapsed));
        }
    }
    result.list_service = LatencySummary::of(&service);
    result.list_direct = LatencySummary::of(&plain);
    Ok(())
}

/// The direct statement's time for one customer's first page.
async fn direct_list(
    direct: &mut Direct,
    prepared: &mut Option<tokio_postgres::Statement>,
    customer: i64,
) -> anyhow::Result<Duration> {
    let (elapsed, _) = direct
        .list_by_customer(prepared, customer, PAGE_SIZE + 1)
        .await?;
    Ok(elapsed)
}

/// (b) Count by status, against `GROUP BY status` and `COUNT(*)` directly.
pub(super) async fn count_by_status(
    api: &Api<'_>,
    direct: &mut Direct,
    runs: usize,
    result: &mut FleetResult,
) -> anyhow::Result<()> {
    eprintln!("xdb-bench: fleet: count by status ({} runs each)", runs);
    let (mut service, mut grouped, mut all) = (Vec::new(), Vec::new(), Vec::new());
    // The bench's warm-up and the checked starts are executions too.
    let expected_total = direct.count(sql::COUNT_ALL).await?;
    for _ in 0..runs {
        let (elapsed, answer) = api
            .timed_call(
                xdb_protocol_paths::COUNT,
                &json!({"groupBy": {"field": "status"}}),
            )
            .await;
        match answer {
            Ok(count) if count["count"].as_u64() == Some(expected_total) => service.push(elapsed),
            Ok(count) => result
                .errors
                .push(format!("count: {count} (expected {expected_total})")),
            Err(error) => result.errors.push(format!("count: {error:#}")),
        }
        grouped.push(direct.timed(sql::COUNT_BY_STATUS).await?);
        all.push(direct.timed(sql::COUNT_ALL).await?);
    }
    result.count_service = LatencySummary::of(&service);
    result.count_direct_grouped = LatencySummary::of(&grouped);
    result.count_direct_all = LatencySummary::of(&all);
    Ok(())
}

/// (d) The unindexed column, and the answer past the time limit.
pub(super) async fn unindexed(
    context: &FleetContext<'_>,
    api: &Api<'_>,
    shape: Shape,
    requests: usize,
    rng: &mut Lcg,
    result: &mut FleetResult,
) {
    eprintln!(
        "xdb-bench: fleet: list by the unindexed amount ({} requests)",
        requests
    );
    let mut unindexed = Vec::new();
    for _ in 0..requests {
        let amount = rng.below(shape.customers) as i64;
        match api
            .timed_call(xdb_protocol_paths::LIST, &list_request("amount", amount))
            .await
        {
            (elapsed, Ok(_)) => unindexed.push(elapsed),
            (_, Err(error)) => result.errors.push(format!("unindexed list: {error:#}")),
        }
    }
    result.unindexed_service = LatencySummary::of(&unindexed);
    let limit_ms = (result.unindexed_service.p50.as_millis() as u64 / 4).max(1);
    match timeout_probe(
        context,
        api.http,
        limit_ms,
        rng.below(shape.customers) as i64,
    )
    .await
    {
        Ok(probe) => result.timeout = Some(probe),
        Err(error) => result.errors.push(format!("time-limit probe: {error:#}")),
    }
}

/// Sends the unindexed list to an API service of its own whose `api.query_timeout_ms`
/// is `limit_ms`, and keeps its answer.
async fn timeout_probe(
    context: &FleetContext<'_>,
    http: &reqwest::Client,
    limit_ms: u64,
    amount: i64,
) -> anyhow::Result<TimeoutProbe> {
    let addr = services::free_local_addr()?;
    let args: Vec<String> = [
        "--database-url",
        context.database.url(),
        "--listen",
        &addr.to_string(),
        "--set",
        &format!("api.query_timeout_ms={limit_ms}"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let log_dir = context.log_dir.join("time-limited");
    std::fs::create_dir_all(&log_dir)?;
    let mut service = ServiceProcess::spawn(API_SERVICE, context.api_binary, &args, &log_dir)?;
    let base = format!("http://{addr}");
    services::wait_until_ready(&mut service, &base, Duration::from_secs(30)).await?;
    let began = Instant::now();
    let (status, text) = post(
        http,
        &base,
        xdb_protocol_paths::LIST,
        &list_request("amount", amount),
    )
    .await?;
    let elapsed = began.elapsed();
    service.stop();
    let message = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| {
            v["detail"]
                .as_str()
                .or(v["message"].as_str())
                .map(str::to_string)
        })
        .unwrap_or(text);
    Ok(TimeoutProbe {
        limit_ms,
        status: status.as_u16(),
        message: message.chars().take(400).collect(),
        elapsed,
    })
}

/// A small linear congruential generator: the customers asked for (no need for more).
pub(super) struct Lcg(pub(super) u64);

impl Lcg {
    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_stays_below_its_bound() {
        let mut rng = Lcg(7);
        assert!((0..1000).all(|_| rng.below(10) < 10));
        assert_eq!(rng.below(0), 0);
    }
}
