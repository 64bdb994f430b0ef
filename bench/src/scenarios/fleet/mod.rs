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

use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::{json, Value};

use crate::database::{BenchDatabase, Dialect};
use crate::rss;
use crate::services::{self, ServiceProcess, API_SERVICE};
use crate::stats::{ms, LatencySummary};

mod direct;
pub mod sql;

use direct::Direct;
pub use sql::{ratio, Shape};

/// The list's page size.
pub const PAGE_SIZE: i64 = 100;
/// Executions written per population statement.
const CHUNK: u64 = 100_000;
/// Executions started through the API to check the population's rows against.
const CHECKED_STARTS: usize = 3;
/// The judged ratios: the service's p99 (list) or p50 (count) to the direct one's, at
/// most; the batch's rate to the stop calls', at least.
pub const MAX_LIST_P99_RATIO: f64 = 1.5;
pub const MAX_COUNT_RATIO: f64 = 1.5;
pub const MIN_BATCH_RATE_RATIO: f64 = 0.5;
/// "RSS flat": over the batch it grows by at most this share of its size at the start,
/// or [`RSS_SLACK_MB`], whichever is more.
pub const MAX_RSS_GROWTH_SHARE: f64 = 0.1;
pub const RSS_SLACK_MB: f64 = 5.0;

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

/// What the stop calls did.
#[derive(Debug, Clone, Default)]
pub struct Stops {
    pub executions: usize,
    pub clients: usize,
    pub failed: usize,
    pub first_error: Option<String>,
    pub elapsed: Duration,
}

impl Stops {
    pub fn rate(&self) -> f64 {
        (self.executions - self.failed) as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// What the batch did.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    /// The batch's ratePerSecond.
    pub rate_per_second: u32,
    pub expected: u64,
    pub status: String,
    pub done: u64,
    pub skipped: u64,
    pub failed: u64,
    /// From the start call until describe answered it closed (polled every 250 ms).
    pub elapsed: Duration,
    /// The service's own created-to-closed time, when it gave both.
    pub server_elapsed: Option<Duration>,
    /// The async service's `VmRSS`, KiB, once a second from the start call.
    pub rss_kib: Vec<u64>,
    pub error: Option<String>,
}

impl Batch {
    /// Executions terminated per second (the service's created-to-closed time when it
    /// gave it).
    pub fn rate(&self) -> f64 {
        let seconds = self.server_elapsed.unwrap_or(self.elapsed).as_secs_f64();
        self.done as f64 / seconds.max(1e-9)
    }

    /// (first, last, max) of the RSS samples, KiB.
    pub fn rss(&self) -> Option<(u64, u64, u64)> {
        let first = *self.rss_kib.first()?;
        let last = *self.rss_kib.last()?;
        let max = self.rss_kib.iter().copied().max()?;
        Some((first, last, max))
    }

    /// Whether the RSS stayed flat (see [`MAX_RSS_GROWTH_SHARE`]).
    pub fn rss_flat(&self) -> Option<bool> {
        let (first, last, _) = self.rss()?;
        Some(rss_flat(first, last))
    }
}

/// Whether growing from `first` to `last` KiB is flat.
pub fn rss_flat(first: u64, last: u64) -> bool {
    let allowed = (first as f64 * MAX_RSS_GROWTH_SHARE).max(RSS_SLACK_MB * 1e6 / 1024.0);
    (last as f64 - first as f64) <= allowed
}

/// The answer of a service whose query time limit the unindexed filter runs past.
#[derive(Debug, Clone, Default)]
pub struct TimeoutProbe {
    pub limit_ms: u64,
    pub status: u16,
    pub message: String,
    pub elapsed: Duration,
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

    // Starts through the API first, to hold the population's rows against.
    let mut checks = Vec::new();
    for i in 0..CHECKED_STARTS {
        let process_id = format!("fleet-check-{i}");
        api.call(
            xdb_protocol_paths::START,
            &json!({"processId": process_id, "processType": sql::PROCESS_TYPE,
                    "workerUrl": context.worker_url}),
        )
        .await
        .context("starting an execution to check the population against")?;
        checks.push(process_id);
    }

    eprintln!(
        "xdb-bench: fleet: writing {} executions and business rows",
        shape.executions
    );
    let run = uuid::Uuid::new_v4().simple().to_string();
    let now_ms = chrono::Utc::now().timestamp_millis();
    // Execution n started n ms after base: the newest a minute ago.
    let base_ms = now_ms - 60_000 - shape.executions as i64;
    let began = Instant::now();
    let mut lo = 1;
    while lo <= shape.executions {
        let hi = (lo + CHUNK - 1).min(shape.executions);
        for statement in sql::populate(
            dialect,
            lo,
            hi,
            base_ms,
            &run[..6],
            context.worker_url,
            shape,
        ) {
            direct
                .execute(&statement)
                .await
                .with_context(|| format!("populating executions {lo}..={hi}"))?;
        }
        lo = hi + 1;
    }
    result.population = began.elapsed();
    let began = Instant::now();
    match dialect {
        Dialect::Postgres => context.database.settle().await?,
        Dialect::MySql => {
            direct
                .execute(&format!(
                    "ANALYZE TABLE {}, xdb_sys_process_executions, \
                     xdb_sys_latest_process_executions",
                    sql::TABLE
                ))
                .await?
        }
    }
    result.analyze = began.elapsed();
    eprintln!(
        "xdb-bench: fleet: populated in {:.1} s (analyze {:.1} s)",
        result.population.as_secs_f64(),
        result.analyze.as_secs_f64()
    );
    result.checked = check_population(&mut direct, &api, &checks).await?;

    let mut rng = Lcg(now_ms as u64 | 1);
    // (a) The indexed list, service and direct interleaved.
    eprintln!(
        "xdb-bench: fleet: list by customer ({} requests each)",
        options.list_requests
    );
    let mut prepared = None;
    let (mut service, mut plain) = (Vec::new(), Vec::new());
    for _ in 0..options.list_requests {
        let customer = rng.below(shape.customers) as i64;
        let began = Instant::now();
        let answer = api
            .call(
                xdb_protocol_paths::LIST,
                &list_request("customer", customer),
            )
            .await;
        let elapsed = began.elapsed();
        match answer {
            Ok(page) => {
                service.push(elapsed);
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
        let (elapsed, _) = direct
            .list_by_customer(&mut prepared, customer, PAGE_SIZE + 1)
            .await?;
        plain.push(elapsed);
    }
    result.list_service = LatencySummary::of(&service);
    result.list_direct = LatencySummary::of(&plain);

    // (b) Count by status.
    eprintln!(
        "xdb-bench: fleet: count by status ({} runs each)",
        options.count_runs
    );
    let (mut service, mut grouped, mut all) = (Vec::new(), Vec::new(), Vec::new());
    // The bench's warm-up and the checked starts are executions too.
    let expected_total = direct.count(sql::COUNT_ALL).await?;
    for _ in 0..options.count_runs {
        let began = Instant::now();
        let answer = api
            .call(
                xdb_protocol_paths::COUNT,
                &json!({"groupBy": {"field": "status"}}),
            )
            .await;
        let elapsed = began.elapsed();
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

    // (d) The unindexed column, and the answer past the time limit.
    eprintln!(
        "xdb-bench: fleet: list by the unindexed amount ({} requests)",
        options.unindexed_requests
    );
    let mut unindexed = Vec::new();
    for _ in 0..options.unindexed_requests {
        let amount = rng.below(shape.customers) as i64;
        let began = Instant::now();
        match api
            .call(xdb_protocol_paths::LIST, &list_request("amount", amount))
            .await
        {
            Ok(_) => unindexed.push(began.elapsed()),
            Err(error) => result.errors.push(format!("unindexed list: {error:#}")),
        }
    }
    result.unindexed_service = LatencySummary::of(&unindexed);
    let limit_ms = (result.unindexed_service.p50.as_millis() as u64 / 4).max(1);
    match timeout_probe(context, &http, limit_ms, rng.below(shape.customers) as i64).await {
        Ok(probe) => result.timeout = Some(probe),
        Err(error) => result.errors.push(format!("time-limit probe: {error:#}")),
    }

    // (c) Stop calls one by one, then the batch, on disjoint customers.
    let batch_customers = shape.customers_for(options.batch, shape.customers / 2);
    let stop_customers = shape.customers_for(options.stops, shape.customers - batch_customers);
    let stop_ids: Vec<String> = shape
        .executions_of(batch_customers..batch_customers + stop_customers)
        .into_iter()
        .map(|n| format!("{}{n}", sql::ID_PREFIX))
        .collect();
    eprintln!(
        "xdb-bench: fleet: stop ({} executions, {} clients)",
        stop_ids.len(),
        options.stop_clients
    );
    result.stops = stop_one_by_one(context.service_url, stop_ids, options.stop_clients).await;
    let expected = shape.executions_of(0..batch_customers).len() as u64;
    eprintln!("xdb-bench: fleet: TERMINATE batch ({expected} executions)");
    result.batch = batch(
        &api,
        context.async_pid,
        batch_customers,
        options.rate_per_second,
    )
    .await;
    if result.batch.expected != expected {
        result.errors.push(format!(
            "the batch expected {} executions, the selection holds {expected}",
            result.batch.expected
        ));
    }
    direct.close().await;
    Ok(result)
}

/// The paths of the service API the scenario calls.
mod xdb_protocol_paths {
    pub const START: &str = "/api/v1/xdb/service/process-execution/start";
    pub const STOP: &str = "/api/v1/xdb/service/process-execution/stop";
    pub const DESCRIBE: &str = "/api/v1/xdb/service/process-execution/describe";
    pub const HISTORY: &str = "/api/v1/xdb/service/process-execution/history";
    pub const LIST: &str = "/api/v1/xdb/service/process-execution/list";
    pub const COUNT: &str = "/api/v1/xdb/service/process-execution/count";
    pub const BATCH_START: &str = "/api/v1/xdb/service/batch/start";
    pub const BATCH_DESCRIBE: &str = "/api/v1/xdb/service/batch/describe";
}

/// The first page of the fleet's executions whose business `column` equals `value`.
fn list_request(column: &str, value: i64) -> Value {
    json!({
        "filter": {"processType": sql::PROCESS_TYPE},
        "where": {"column": column, "op": "=", "value": value},
        "businessTable": business_table(),
        "pageSize": PAGE_SIZE,
    })
}

fn business_table() -> Value {
    json!({"tableName": sql::TABLE, "primaryKeyColumn": "id"})
}

/// JSON calls to the service API.
struct Api<'a> {
    http: &'a reqwest::Client,
    base: &'a str,
}

impl Api<'_> {
    /// POSTs `body` to `path`; the answer's JSON, or an error with its status and body.
    async fn call(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        let (status, text) = post(self.http, self.base, path, body).await?;
        anyhow::ensure!(status.is_success(), "{path}: {status}: {text}");
        if text.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text).with_context(|| format!("{path}: {text}"))
    }
}

async fn post(
    http: &reqwest::Client,
    base: &str,
    path: &str,
    body: &Value,
) -> anyhow::Result<(reqwest::StatusCode, String)> {
    let answer = http
        .post(format!("{base}{path}"))
        .json(body)
        .timeout(Duration::from_secs(120))
        .send()
        .await?;
    let status = answer.status();
    Ok((status, answer.text().await?))
}

/// Holds the rows the population wrote for `fleet-1` against those of the executions
/// `checks` started through the API: every column of the execution row but its id,
/// process id and start time; the latest-execution row pointing at it; its history
/// events but their ids and times (and whether the event's time is the start time);
/// and how many rows each other table keyed by execution holds for it. Fails, naming
/// the difference, when they differ. Describe and history answer for it too.
async fn check_population(
    direct: &mut Direct,
    api: &Api<'_>,
    checks: &[String],
) -> anyhow::Result<usize> {
    let dialect = direct.dialect();
    let generated = format!("{}1", sql::ID_PREFIX);
    let executions = direct.columns("xdb_sys_process_executions").await?;
    let history = direct.columns("xdb_sys_history_events").await?;
    let by_execution = direct.tables_by_execution().await?;
    const EXECUTION_SKIP: [&str; 3] = ["id", "process_id", "start_time"];
    // A condition on an execution id given as text (`?`: the one parameter).
    let by_id = match dialect {
        Dialect::Postgres => "process_execution_id = CAST(CAST(? AS TEXT) AS UUID)",
        Dialect::MySql => "process_execution_id = ?",
    };
    let one = |query: String| match dialect {
        Dialect::Postgres => query.replace('?', "$1"),
        Dialect::MySql => query,
    };
    let text = match dialect {
        Dialect::Postgres => "TEXT",
        Dialect::MySql => "CHAR",
    };
    let mut snapshots = Vec::new();
    for process_id in std::iter::once(generated.clone()).chain(checks.iter().cloned()) {
        let select = |table: &str, columns: &[String], skip: &[&str], condition: &str, order| {
            sql::columns_as_text(dialect, table, columns, skip, condition, order)
        };
        let row = direct
            .text_rows(
                &select(
                    "xdb_sys_process_executions",
                    &executions,
                    &EXECUTION_SKIP,
                    "process_id = ?",
                    "id",
                ),
                &process_id,
            )
            .await?;
        anyhow::ensure!(row.len() == 1, "{process_id}: {} execution rows", row.len());
        let ids = direct
            .text_rows(
                &select(
                    "xdb_sys_process_executions",
                    &["id".to_string()],
                    &[],
                    "process_id = ?",
                    "id",
                ),
                &process_id,
            )
            .await?;
        let id = ids[0][0].clone().unwrap_or_default();
        let latest = direct
            .text_rows(
                &select(
                    "xdb_sys_latest_process_executions",
                    &["process_execution_id".to_string()],
                    &[],
                    "process_id = ?",
                    "process_id",
                ),
                &process_id,
            )
            .await?;
        anyhow::ensure!(
            latest.len() == 1 && latest[0][0].as_deref() == Some(id.as_str()),
            "{process_id}: the latest-execution row {latest:?} does not name {id}"
        );
        let events = direct
            .text_rows(
                &select(
                    "xdb_sys_history_events",
                    &history,
                    &["id", "process_execution_id", "event_time"],
                    by_id,
                    "id",
                ),
                &id,
            )
            .await?;
        let timed = direct
            .text_rows(
                &one(
                    "SELECT CASE WHEN h.event_time = p.start_time THEN 'same' ELSE 'other' END \
                     FROM xdb_sys_history_events h JOIN xdb_sys_process_executions p \
                     ON p.id = h.process_execution_id WHERE p.process_id = ? ORDER BY h.id"
                        .to_string(),
                ),
                &process_id,
            )
            .await?;
        let mut counts = Vec::new();
        for table in &by_execution {
            let count = direct
                .text_rows(
                    &one(format!(
                        "SELECT CAST(COUNT(*) AS {text}) FROM {table} WHERE {by_id}"
                    )),
                    &id,
                )
                .await?;
            counts.push((table.clone(), count[0][0].clone()));
        }
        snapshots.push((process_id, row, events, timed, counts));
    }
    let names: Vec<&String> = executions
        .iter()
        .filter(|c| !EXECUTION_SKIP.contains(&c.as_str()))
        .collect();
    let (_, row, events, timed, counts) = &snapshots[0];
    for (process_id, other_row, other_events, other_timed, other_counts) in &snapshots[1..] {
        for (i, name) in names.iter().enumerate() {
            anyhow::ensure!(
                row[0][i] == other_row[0][i],
                "the population's execution row differs from a start's ({process_id}) in \
                 column {name}: {:?} against {:?}",
                row[0][i],
                other_row[0][i]
            );
        }
        anyhow::ensure!(
            events == other_events && timed == other_timed,
            "the population's history differs from a start's ({process_id}): {events:?} \
             {timed:?} against {other_events:?} {other_timed:?}"
        );
        anyhow::ensure!(
            counts == other_counts,
            "the population's rows by execution differ from a start's ({process_id}): \
             {counts:?} against {other_counts:?}"
        );
    }
    api.call(
        xdb_protocol_paths::DESCRIBE,
        &json!({"processId": generated}),
    )
    .await
    .context("describe of a populated execution")?;
    let history = api
        .call(
            xdb_protocol_paths::HISTORY,
            &json!({"processId": generated}),
        )
        .await
        .context("history of a populated execution")?;
    anyhow::ensure!(
        history.to_string().contains("PROCESS_STARTED"),
        "the history of a populated execution lacks its start: {history}"
    );
    Ok(snapshots.len() - 1)
}

/// Terminates `process_ids` one call at a time from each of `clients` clients.
async fn stop_one_by_one(base: &str, process_ids: Vec<String>, clients: usize) -> Stops {
    let ids = Arc::new(process_ids);
    let next = Arc::new(AtomicUsize::new(0));
    let http = reqwest::Client::new();
    let began = Instant::now();
    let tasks: Vec<_> = (0..clients.clamp(1, ids.len().max(1)))
        .map(|_| {
            let (ids, next, http, base) =
                (ids.clone(), next.clone(), http.clone(), base.to_string());
            tokio::spawn(async move {
                let (mut failed, mut first_error) = (0, None);
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(id) = ids.get(i) else {
                        return (failed, first_error);
                    };
                    let body = json!({"processId": id, "stopType": "TERMINATE"});
                    match post(&http, &base, xdb_protocol_paths::STOP, &body).await {
                        Ok((status, _)) if status.is_success() => {}
                        Ok((status, text)) => {
                            failed += 1;
                            first_error.get_or_insert(format!("stop {id}: {status}: {text}"));
                        }
                        Err(error) => {
                            failed += 1;
                            first_error.get_or_insert(format!("stop {id}: {error:#}"));
                        }
                    }
                }
            })
        })
        .collect();
    let mut stops = Stops {
        executions: ids.len(),
        clients,
        ..Stops::default()
    };
    for task in tasks {
        let (failed, first_error) = task
            .await
            .unwrap_or_else(|e| (1, Some(format!("a stop task panicked: {e}"))));
        stops.failed += failed;
        if stops.first_error.is_none() {
            stops.first_error = first_error;
        }
    }
    stops.elapsed = began.elapsed();
    stops
}

/// Starts a TERMINATE batch over the customers `[0, customers)` and follows it to its
/// end, sampling the async service's RSS every second.
async fn batch(api: &Api<'_>, async_pid: u32, customers: u64, rate: u32) -> Batch {
    let mut batch = Batch {
        rate_per_second: rate,
        ..Batch::default()
    };
    let request = json!({
        "operation": "TERMINATE",
        "processType": sql::PROCESS_TYPE,
        "where": {"column": "customer", "op": "<", "value": customers},
        "businessTable": business_table(),
        "ratePerSecond": rate,
        "reason": "xdb-bench fleet",
    });
    if let Some(memory) = rss::read(async_pid) {
        batch.rss_kib.push(memory.rss_kib);
    }
    let began = Instant::now();
    let started = match api.call(xdb_protocol_paths::BATCH_START, &request).await {
        Ok(started) => started,
        Err(error) => {
            batch.error = Some(format!("{error:#}"));
            return batch;
        }
    };
    batch.expected = started["expected"].as_u64().unwrap_or(0);
    let batch_id = started["batchId"].as_str().unwrap_or_default().to_string();
    let deadline = began + Duration::from_secs(600 + batch.expected / 100);
    let mut next_sample = began + Duration::from_secs(1);
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        if Instant::now() >= next_sample {
            if let Some(memory) = rss::read(async_pid) {
                batch.rss_kib.push(memory.rss_kib);
            }
            next_sample += Duration::from_secs(1);
        }
        let described = api
            .call(
                xdb_protocol_paths::BATCH_DESCRIBE,
                &json!({"batchId": batch_id}),
            )
            .await;
        let info = match described {
            Ok(described) => described["batch"].clone(),
            Err(error) => {
                batch.error = Some(format!("{error:#}"));
                return batch;
            }
        };
        batch.status = info["status"].as_str().unwrap_or_default().to_string();
        batch.done = info["done"].as_u64().unwrap_or(0);
        batch.skipped = info["skipped"].as_u64().unwrap_or(0);
        batch.failed = info["failed"].as_u64().unwrap_or(0);
        if batch.status != "RUNNING" {
            batch.elapsed = began.elapsed();
            let created = info["createdTimestampMs"].as_i64();
            let closed = info["closedTimestampMs"].as_i64();
            if let (Some(created), Some(closed)) = (created, closed) {
                batch.server_elapsed = u64::try_from(closed - created)
                    .ok()
                    .map(Duration::from_millis);
            }
            batch.error = info["error"].as_str().map(str::to_string);
            if let Some(memory) = rss::read(async_pid) {
                batch.rss_kib.push(memory.rss_kib);
            }
            return batch;
        }
        if Instant::now() >= deadline {
            batch.error = Some(format!(
                "still {} after {:?}",
                batch.status,
                began.elapsed()
            ));
            batch.elapsed = began.elapsed();
            return batch;
        }
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
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n.max(1)
    }
}

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
                super::super::report::mb(first),
                super::super::report::mb(last),
                super::super::report::mb(max)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rss_is_flat_within_a_tenth_or_five_mb() {
        assert!(rss_flat(100_000, 109_000));
        assert!(!rss_flat(100_000, 120_000));
        assert!(rss_flat(10_000, 14_000));
        assert!(rss_flat(50_000, 40_000));
    }

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

    #[test]
    fn the_generator_stays_below_its_bound() {
        let mut rng = Lcg(7);
        assert!((0..1000).all(|_| rng.below(10) < 10));
        assert_eq!(rng.below(0), 0);
    }
}
