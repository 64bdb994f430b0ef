//! The one load generator every contender gets: XDB through its SDK's client, the peers
//! over HTTP (reqwest). Each call starts a process (workflow, invocation) and returns
//! when the caller has observed its completion.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use xdb_sdk::protocol::ProcessStatus;

use crate::scenarios::Driver;
use crate::stats::{LatencySummary, SignedSummary};

/// Longest one call may take before it counts as failed.
const CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// What a call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// Two steps returning at once (XDB: `StateA` → `StateB`).
    TwoStep,
    /// One durable timer of the run's delay (one second).
    Sleep,
}

/// Where calls go.
#[derive(Clone)]
pub enum Target {
    /// XDB: start, then wait-for-completion (the bench's `Driver`).
    Xdb(Driver),
    /// A peer: one POST that answers once the work completed.
    Http(HttpTarget),
}

/// A peer's HTTP entry: `POST {base}{path}` where the path names the workload and,
/// when `keyed`, ends with `/<key>` (the workflow id).
#[derive(Clone)]
pub struct HttpTarget {
    pub client: reqwest::Client,
    pub base: String,
    pub two_step: &'static str,
    pub sleep: &'static str,
    pub keyed: bool,
}

impl HttpTarget {
    pub fn new(base: String, two_step: &'static str, sleep: &'static str, keyed: bool) -> Self {
        let client = reqwest::Client::builder()
            .timeout(CALL_TIMEOUT)
            .pool_max_idle_per_host(1024)
            .build()
            .expect("a reqwest client with a timeout builds");
        HttpTarget {
            client,
            base,
            two_step,
            sleep,
            keyed,
        }
    }

    /// The URL of `workload` for key `key`.
    pub fn url(&self, workload: Workload, key: &str) -> String {
        let path = match workload {
            Workload::TwoStep => self.two_step,
            Workload::Sleep => self.sleep,
        };
        if self.keyed {
            format!("{}{path}/{key}", self.base)
        } else {
            format!("{}{path}", self.base)
        }
    }
}

impl Target {
    /// Runs `workload` as item `index` of `label`; its duration, or why it failed.
    pub async fn call(
        &self,
        workload: Workload,
        label: &str,
        index: usize,
    ) -> Result<Duration, String> {
        let began = Instant::now();
        let elapsed = match self {
            Target::Xdb(driver) => match workload {
                Workload::TwoStep => driver.run_one(label, index).await?.total,
                Workload::Sleep => {
                    let id = driver.process_id(label, index);
                    driver.start(&driver.processes().timer, &id).await?;
                    let answer = driver
                        .client()
                        .wait_for_process_completion(&id, CALL_TIMEOUT)
                        .await
                        .map_err(|e| format!("wait for {id}: {e}"))?;
                    if answer.status != ProcessStatus::Completed {
                        return Err(format!("{id} ended {:?}", answer.status));
                    }
                    began.elapsed()
                }
            },
            Target::Http(http) => {
                let key = format!("{label}-{index}");
                let url = http.url(workload, &key);
                let answer = http
                    .client
                    .post(&url)
                    .header("content-type", "application/json")
                    .body("null")
                    .send()
                    .await
                    .map_err(|e| format!("POST {url}: {e}"))?;
                let status = answer.status();
                let body = answer.text().await.unwrap_or_default();
                if !status.is_success() {
                    return Err(format!("POST {url}: {status}: {body}"));
                }
                began.elapsed()
            }
        };
        Ok(elapsed)
    }
}

/// What one batch of calls measured.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    pub calls: usize,
    pub failed: usize,
    pub first_error: Option<String>,
    pub elapsed: Duration,
    /// Durations of the completed calls.
    pub latency: LatencySummary,
}

impl Batch {
    /// Completed calls per second of wall time.
    pub fn throughput(&self) -> f64 {
        (self.calls - self.failed) as f64 / self.elapsed.as_secs_f64().max(f64::EPSILON)
    }
}

/// How many calls a batch makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Amount {
    /// This many.
    Count(usize),
    /// As many as start within this long; the calls in flight then still finish, and
    /// count (their time too).
    For(Duration),
}

/// Calls of `workload`, `concurrency` tasks each calling the next until `amount` is
/// reached (1: one after another); the durations of every completed call.
pub async fn drive(
    target: &Target,
    workload: Workload,
    label: &str,
    amount: Amount,
    concurrency: usize,
) -> (Batch, Vec<Duration>) {
    let next = Arc::new(AtomicUsize::new(0));
    let began = Instant::now();
    let (count, deadline) = match amount {
        Amount::Count(count) => (count, None),
        Amount::For(length) => (usize::MAX, Some(began + length)),
    };
    let tasks: Vec<_> = (0..concurrency.clamp(1, count.max(1)))
        .map(|_| {
            let (target, next, label) = (target.clone(), next.clone(), label.to_string());
            tokio::spawn(async move {
                let mut outcomes = Vec::new();
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= count || deadline.is_some_and(|d| Instant::now() >= d) {
                        return outcomes;
                    }
                    outcomes.push(target.call(workload, &label, index).await);
                }
            })
        })
        .collect();
    let mut durations = Vec::new();
    let mut batch = Batch::default();
    for task in tasks {
        let outcomes = task
            .await
            .unwrap_or_else(|e| vec![Err(format!("a call task panicked: {e}"))]);
        for outcome in outcomes {
            batch.calls += 1;
            match outcome {
                Ok(duration) => durations.push(duration),
                Err(error) => {
                    batch.failed += 1;
                    batch.first_error.get_or_insert(error);
                }
            }
        }
    }
    batch.elapsed = began.elapsed();
    batch.latency = LatencySummary::of(&durations);
    (batch, durations)
}

/// Lateness of durable timers of `delay`, in ms: each call's duration minus the delay
/// (the result observed, minus the start sent, minus the delay).
pub fn lateness(durations: &[Duration], delay: Duration) -> SignedSummary {
    let late: Vec<f64> = durations
        .iter()
        .map(|d| (d.as_secs_f64() - delay.as_secs_f64()) * 1000.0)
        .collect();
    SignedSummary::of(&late)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_and_unkeyed_urls() {
        let keyed = HttpTarget::new("http://h:1".into(), "/two-step", "/sleep", true);
        assert_eq!(keyed.url(Workload::Sleep, "t-3"), "http://h:1/sleep/t-3");
        let restate = HttpTarget::new("http://h:2".into(), "/bench/twoStep", "/bench/sleep", false);
        assert_eq!(
            restate.url(Workload::TwoStep, "x"),
            "http://h:2/bench/twoStep"
        );
    }

    #[test]
    fn lateness_is_the_duration_past_the_delay() {
        let durations = [1003, 1010, 1200, 998].map(Duration::from_millis);
        let late = lateness(&durations, Duration::from_secs(1));
        assert_eq!(late.count, 4);
        assert!((late.min + 2.0).abs() < 1e-6, "{late:?}");
        assert!((late.max - 200.0).abs() < 1e-6);
        assert!((late.p50 - 3.0).abs() < 1e-6);
    }

    #[test]
    fn throughput_counts_completed_calls_only() {
        let batch = Batch {
            calls: 100,
            failed: 20,
            elapsed: Duration::from_secs(2),
            ..Batch::default()
        };
        assert!((batch.throughput() - 40.0).abs() < 1e-9);
    }
}
