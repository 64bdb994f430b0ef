//! (c) Terminating executions: stop calls one by one against a TERMINATE batch, and
//! the async service's RSS through the batch.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;

use super::api::{business_table, post, xdb_protocol_paths, Api};
use super::{sql, FleetContext, FleetOptions, FleetResult, Shape};
use crate::rss;

/// "RSS flat": over the batch it grows by at most this share of its size at the start,
/// or [`RSS_SLACK_MB`], whichever is more.
pub const MAX_RSS_GROWTH_SHARE: f64 = 0.1;
pub const RSS_SLACK_MB: f64 = 5.0;

/// What the stop calls did.
#[derive(Debug, Clone, Default)]
pub struct Stops {
    pub executions: usize,
    pub clients: usize,
    pub failed: usize,
    /// Calls the service answered 503 (overloaded) and that were sent again after the
    /// second it asks for, as the SDK clients do.
    pub overloaded: usize,
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

/// Stop calls one by one, then the batch, on disjoint customers.
pub(super) async fn stops_against_batch(
    context: &FleetContext<'_>,
    api: &Api<'_>,
    shape: Shape,
    options: FleetOptions,
    result: &mut FleetResult,
) {
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
        api,
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
}

/// Terminates `process_ids` one call at a time from each of `clients` clients.
/// How long a stop client waits before sending again a call answered 503: the second
/// the answer asks for.
const OVERLOADED_BACKOFF: Duration = Duration::from_secs(1);
/// 503s a stop client sends again at most, over all its calls.
const MAX_OVERLOADED_PER_CLIENT: usize = 100;

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
                let (mut failed, mut overloaded, mut first_error) = (0, 0, None);
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(id) = ids.get(i) else {
                        return (failed, overloaded, first_error);
                    };
                    let body = json!({"processId": id, "stopType": "TERMINATE"});
                    let mut answer = post(&http, &base, xdb_protocol_paths::STOP, &body).await;
                    while matches!(&answer, Ok((status, _)) if *status == StatusCode::SERVICE_UNAVAILABLE)
                        && overloaded < MAX_OVERLOADED_PER_CLIENT
                    {
                        overloaded += 1;
                        tokio::time::sleep(OVERLOADED_BACKOFF).await;
                        answer = post(&http, &base, xdb_protocol_paths::STOP, &body).await;
                    }
                    match answer {
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
        let (failed, overloaded, first_error) = task
            .await
            .unwrap_or_else(|e| (1, 0, Some(format!("a stop task panicked: {e}"))));
        stops.failed += failed;
        stops.overloaded += overloaded;
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
}
