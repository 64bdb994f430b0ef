//! "overload": many start calls sent as fast as a client can, while a transaction holds
//! `xdb_sys_tasks` locked for the first seconds (a database that answers slowly). The API
//! service must refuse what it cannot take now (503 `OVERLOADED` with `Retry-After`)
//! instead of queueing it, keep its memory bounded, and complete everything it took.
//! Starts go out raw (no SDK retries), so every refusal is seen and counted.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::json;
use xdb_sdk::ProcessDefinition;

use super::Driver;
use crate::database::{self, BenchDatabase, Dialect};
use crate::rss;
use crate::stats::{ms, LatencySummary};
use crate::worker::processes::BenchProcess;

/// How the burst is shaped.
#[derive(Debug, Clone, Copy)]
pub struct OverloadOptions {
    pub starts: usize,
    /// Start calls in flight from the client (each its own connection).
    pub clients: usize,
    /// How long the task table stays locked from the burst's first call.
    pub lock: Duration,
    /// Longest wait for the accepted processes to complete.
    pub completion_timeout: Duration,
}

/// What the burst got.
#[derive(Debug, Clone, Default)]
pub struct OverloadResult {
    pub starts: usize,
    pub clients: usize,
    pub lock: Duration,
    /// 2xx answers.
    pub accepted: usize,
    /// 503 and 429 answers; those without a `Retry-After` header.
    pub refused: usize,
    pub refused_without_retry_after: usize,
    /// Any other answer, or none (transport errors).
    pub other: usize,
    pub first_error: Option<String>,
    pub refusal_latency: LatencySummary,
    pub accepted_latency: LatencySummary,
    /// From the first call until the last answer.
    pub burst: Duration,
    /// Accepted processes completed, and when the last did (from the first call).
    pub completed: usize,
    pub all_completed_after: Option<Duration>,
    /// Process rows of the scenario: exactly the accepted starts when nothing refused
    /// left a trace.
    pub rows: usize,
    /// The API service's `VmRSS` before the burst and its `VmHWM` after, KiB.
    pub api_rss_before_kib: u64,
    pub api_peak_kib: u64,
}

impl OverloadResult {
    /// Accepted starts that did not complete, refused starts that left a row, and
    /// answers other than 2xx/503/429: each is a failure.
    pub fn failures(&self) -> usize {
        (self.accepted - self.completed.min(self.accepted))
            + self.rows.abs_diff(self.accepted)
            + self.other
            + self.refused_without_retry_after
    }

    /// The report's section.
    pub fn write_markdown(&self, out: &mut String) {
        let _ = writeln!(out, "\n### Overload\n");
        let _ = writeln!(
            out,
            "{} start calls, {} in flight from the client at any time (no retries), with \
             `xdb_sys_tasks` locked by a transaction for the first {} s; the API service \
             with its default limits. Latency from sending to the answer, in ms.\n",
            self.starts,
            self.clients,
            self.lock.as_secs()
        );
        let _ = writeln!(
            out,
            "| accepted | refused (503/429) | other | sent in | all accepted completed after \
             | API RSS before | API peak RSS |\n|---|---|---|---|---|---|---|\n\
             | {} | {} | {} | {:.1} s | {} | {} MB | {} MB |",
            self.accepted,
            self.refused,
            self.other,
            self.burst.as_secs_f64(),
            self.all_completed_after
                .map_or("not all".to_string(), |d| format!(
                    "{:.1} s",
                    d.as_secs_f64()
                )),
            self.api_rss_before_kib / 1024,
            self.api_peak_kib / 1024,
        );
        let _ = writeln!(
            out,
            "\n| answers | p50 | p99 | max |\n|---|---|---|---|\n| refused | {} | {} | {} |\n\
             | accepted | {} | {} | {} |",
            ms(self.refusal_latency.p50),
            ms(self.refusal_latency.p99),
            ms(self.refusal_latency.max),
            ms(self.accepted_latency.p50),
            ms(self.accepted_latency.p99),
            ms(self.accepted_latency.max),
        );
        let _ = writeln!(
            out,
            "\nProcess rows written: {} (accepted: {}); refusals without `Retry-After`: {}.",
            self.rows, self.accepted, self.refused_without_retry_after
        );
        if let Some(error) = &self.first_error {
            let _ = writeln!(out, "\nFirst other answer: `{error}`");
        }
    }
}

/// One start call's answer.
struct Answer {
    status: Option<u16>,
    retry_after: bool,
    took: Duration,
    error: Option<String>,
}

/// Runs the burst against the API service at `service_url` (process `api_pid`).
pub async fn overload(
    driver: &Driver,
    database: &BenchDatabase,
    service_url: &str,
    api_pid: u32,
    options: OverloadOptions,
) -> anyhow::Result<OverloadResult> {
    let api_rss_before_kib = rss::read(api_pid).map_or(0, |m| m.rss_kib);
    let lock = TaskLock::take(database).await?;
    let began = Instant::now();
    let release = tokio::spawn(async move {
        tokio::time::sleep(options.lock).await;
        lock.release().await
    });
    let answers = send_all(driver, service_url, options).await?;
    let burst = began.elapsed();
    release.await??;

    let mut result = OverloadResult {
        starts: options.starts,
        clients: options.clients,
        lock: options.lock,
        burst,
        api_rss_before_kib,
        ..OverloadResult::default()
    };
    let (mut refused, mut accepted) = (Vec::new(), Vec::new());
    for answer in &answers {
        match answer.status {
            Some(status) if (200..300).contains(&status) => {
                result.accepted += 1;
                accepted.push(answer.took);
            }
            Some(503 | 429) => {
                result.refused += 1;
                result.refused_without_retry_after += usize::from(!answer.retry_after);
                refused.push(answer.took);
            }
            _ => {
                result.other += 1;
                if result.first_error.is_none() {
                    result.first_error = answer.error.clone();
                }
            }
        }
    }
    result.refusal_latency = LatencySummary::of(&refused);
    result.accepted_latency = LatencySummary::of(&accepted);

    let prefix = format!("{}%", driver.process_id_prefix("overload"));
    let deadline = Instant::now() + options.completion_timeout;
    loop {
        result.completed = count_rows(database, &prefix, true).await?;
        if result.completed >= result.accepted {
            result.all_completed_after = Some(began.elapsed());
            break;
        }
        if Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    result.rows = count_rows(database, &prefix, false).await?;
    result.api_peak_kib = rss::read(api_pid).map_or(0, |m| m.hwm_kib);
    Ok(result)
}

/// Sends every start, `clients` at a time.
async fn send_all(
    driver: &Driver,
    service_url: &str,
    options: OverloadOptions,
) -> anyhow::Result<Vec<Answer>> {
    let definition = ProcessDefinition::new(BenchProcess);
    let start_state = definition
        .starting_state_id()
        .context("BenchProcess has a starting state")?
        .to_string();
    // As the SDK sends it (no waitUntil).
    let start_state_config = definition.state_config(&start_state)?;
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(options.clients)
        .timeout(options.lock + Duration::from_secs(60))
        .build()
        .expect("an HTTP client");
    let url = format!("{service_url}{}", xdb_sdk::protocol::paths::START);
    let template = json!({
        "processType": definition.process_type(),
        "workerUrl": driver.worker_url(),
        "startStateId": start_state,
        "startStateConfig": start_state_config,
    });
    let next = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..options.clients.clamp(1, options.starts.max(1)))
        .map(|_| {
            let (http, url, next, mut body) =
                (http.clone(), url.clone(), next.clone(), template.clone());
            let driver = driver.clone();
            tokio::spawn(async move {
                let mut answers = Vec::new();
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= options.starts {
                        return answers;
                    }
                    body["processId"] = json!(driver.process_id("overload", index));
                    let sent = Instant::now();
                    let answer = match http.post(&url).json(&body).send().await {
                        Ok(response) => {
                            let status = response.status().as_u16();
                            let retry_after = response.headers().contains_key("retry-after");
                            let text = response.text().await.unwrap_or_default();
                            Answer {
                                status: Some(status),
                                retry_after,
                                took: sent.elapsed(),
                                error: Some(format!("HTTP {status}: {text}")),
                            }
                        }
                        Err(error) => Answer {
                            status: None,
                            retry_after: false,
                            took: sent.elapsed(),
                            error: Some(error.to_string()),
                        },
                    };
                    answers.push(answer);
                }
            })
        })
        .collect();
    let mut answers = Vec::with_capacity(options.starts);
    for client in clients {
        answers.extend(client.await.unwrap_or_default());
    }
    Ok(answers)
}

/// Process rows whose id matches `pattern`, only the completed ones when `completed`.
async fn count_rows(
    database: &BenchDatabase,
    pattern: &str,
    completed: bool,
) -> anyhow::Result<usize> {
    let status = if completed { "COMPLETED" } else { "%" };
    let count: i64 = match database.dialect() {
        Dialect::Postgres => {
            let client = database::connect(database.url()).await?;
            client
                .query_one(
                    "SELECT count(*) FROM xdb_sys_process_executions \
                     WHERE process_id LIKE $1 AND status LIKE $2",
                    &[&pattern, &status],
                )
                .await?
                .get(0)
        }
        Dialect::MySql => {
            use mysql_async::prelude::Queryable;
            let mut conn = database::connect_mysql(database.url()).await?;
            let count: Option<i64> = conn
                .exec_first(
                    "SELECT count(*) FROM xdb_sys_process_executions \
                     WHERE process_id LIKE ? AND status LIKE ?",
                    (pattern, status),
                )
                .await?;
            let _ = conn.disconnect().await;
            count.unwrap_or(0)
        }
    };
    Ok(usize::try_from(count).unwrap_or(0))
}

/// A transaction holding `xdb_sys_tasks` against every write, on its own connection.
enum TaskLock {
    Postgres(tokio_postgres::Client),
    MySql(mysql_async::Conn),
}

impl TaskLock {
    async fn take(database: &BenchDatabase) -> anyhow::Result<TaskLock> {
        Ok(match database.dialect() {
            Dialect::Postgres => {
                let client = database::connect(database.url()).await?;
                client
                    .batch_execute("BEGIN; LOCK TABLE xdb_sys_tasks IN EXCLUSIVE MODE")
                    .await?;
                TaskLock::Postgres(client)
            }
            Dialect::MySql => {
                use mysql_async::prelude::Queryable;
                // A locking read under REPEATABLE READ locks up to the index's end: no
                // other session can insert a task row.
                let mut conn = database::connect_mysql(database.url()).await?;
                conn.query_drop(
                    "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ; \
                     START TRANSACTION; SELECT id FROM xdb_sys_tasks FOR UPDATE",
                )
                .await?;
                TaskLock::MySql(conn)
            }
        })
    }

    async fn release(self) -> anyhow::Result<()> {
        match self {
            TaskLock::Postgres(client) => client.batch_execute("ROLLBACK").await?,
            TaskLock::MySql(mut conn) => {
                use mysql_async::prelude::Queryable;
                conn.query_drop("ROLLBACK").await?;
                let _ = conn.disconnect().await;
            }
        }
        Ok(())
    }
}
