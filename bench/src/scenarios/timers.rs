//! Timer lateness: `count` processes started together, each asking in its `waitUntil`
//! for one durable timer; how late each state's `execute` is called after the fire time
//! XDB recorded for its timer.
//!
//! The requested fire time is the later of two lower bounds, both on this machine's
//! clock: the `WAIT_UNTIL_COMPLETED` event's timestamp (XDB sets the timer to that
//! moment plus the delay; the API gives it in whole milliseconds, truncated) plus the
//! delay, and the moment the worker answered `waitUntil` plus the delay (XDB cannot
//! record the answer before it has it). So lateness is over-stated by under a
//! millisecond, and a firing counted early was early.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use xdb_sdk::protocol::ProcessExecutionHistoryRequest;

use super::{signed_ms, Driver};
use crate::stats::SignedSummary;

/// History event of a state's `waitUntil` answer (it sets the timers).
const WAIT_UNTIL_COMPLETED: &str = "WAIT_UNTIL_COMPLETED";
/// History event of a timer firing.
const TIMER_FIRED: &str = "TIMER_FIRED";
/// History calls in flight after the scenario.
const HISTORY_CONCURRENCY: usize = 16;

/// What the timer scenario measured.
#[derive(Debug, Clone, Default)]
pub struct TimerResult {
    pub processes: usize,
    pub delay: Duration,
    /// Start calls that failed.
    pub failed_starts: usize,
    /// Processes whose `execute` was never called within the wait.
    pub not_fired: usize,
    /// Processes whose history lacked what lateness needs.
    pub unmeasured: usize,
    pub first_error: Option<String>,
    /// From the first start call until the last answered.
    pub start_elapsed: Duration,
    /// Between the earliest and the latest requested fire time.
    pub requested_spread: Duration,
    /// `execute` call (worker clock) minus requested fire time, in ms (negative: early).
    pub lateness: SignedSummary,
    /// The `TIMER_FIRED` event minus the requested fire time, in ms: the service's part.
    pub fire_lateness: SignedSummary,
    /// `execute` calls before the requested fire time.
    pub early: usize,
    /// Timers that fired after the last start call answered (the rest fired while
    /// processes were still being started).
    pub fired_after_starts: usize,
}

impl TimerResult {
    /// Every timer fired and was measured.
    pub fn complete(&self) -> bool {
        self.failed_starts + self.not_fired + self.unmeasured == 0 && self.processes > 0
    }
}

/// Runs the timer scenario: `count` processes, every start call sent at once.
pub async fn timers(driver: &Driver, count: usize, delay: Duration) -> TimerResult {
    let definition = driver.processes().timer.clone();
    let starts = driver
        .start_many(&definition, "timer", count, count.max(1))
        .await;
    let starts_done = SystemTime::now();
    let ids: Vec<String> = (0..count).map(|i| driver.process_id("timer", i)).collect();
    let expected = starts.started;
    let wait = delay + Duration::from_secs(60);
    let recorder = driver.recorder();
    recorder
        .wait_for(wait, |r| r.executed_among(&ids) >= expected)
        .await;
    let mut result = TimerResult {
        processes: count,
        delay,
        failed_starts: starts.failed,
        first_error: starts.first_error,
        start_elapsed: starts.elapsed,
        ..TimerResult::default()
    };
    let histories = fetch_histories(driver, &ids).await;
    let (mut lateness, mut fire_lateness, mut requested) = (Vec::new(), Vec::new(), Vec::new());
    for (id, history) in ids.iter().zip(histories) {
        let Some(executed) = recorder.execute_time(id) else {
            result.not_fired += 1;
            continue;
        };
        let events = match history {
            Ok(events) => events,
            Err(error) => {
                result.unmeasured += 1;
                result.first_error.get_or_insert(error);
                continue;
            }
        };
        let event = |kind: &str| events.iter().find(|(t, _)| t == kind).map(|(_, ms)| *ms);
        let Some(wait_until_ms) = event(WAIT_UNTIL_COMPLETED) else {
            result.unmeasured += 1;
            continue;
        };
        let by_history = at_ms(wait_until_ms) + delay;
        let by_worker = recorder.wait_until_time(id).map(|t| t + delay);
        let fire_at = by_worker.map_or(by_history, |w| w.max(by_history));
        requested.push(fire_at);
        let late = signed_ms(executed, fire_at);
        if late < 0.0 {
            result.early += 1;
        }
        if executed > starts_done {
            result.fired_after_starts += 1;
        }
        lateness.push(late);
        if let Some(fired_ms) = event(TIMER_FIRED) {
            fire_lateness.push(signed_ms(at_ms(fired_ms), fire_at));
        }
    }
    result.lateness = SignedSummary::of(&lateness);
    result.fire_lateness = SignedSummary::of(&fire_lateness);
    if let (Some(first), Some(last)) = (requested.iter().min(), requested.iter().max()) {
        result.requested_spread = last.duration_since(*first).unwrap_or_default();
    }
    result
}

/// The epoch-millisecond timestamp `ms` as a time.
fn at_ms(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// `(event type, timestamp ms)` of each process's current execution, in `ids` order.
async fn fetch_histories(
    driver: &Driver,
    ids: &[String],
) -> Vec<Result<Vec<(String, i64)>, String>> {
    let mut results = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(HISTORY_CONCURRENCY) {
        let calls = chunk.iter().map(|id| {
            let client = driver.client().clone();
            let id = id.clone();
            tokio::spawn(async move {
                client
                    .history(&ProcessExecutionHistoryRequest {
                        process_id: id.clone(),
                        process_execution_id: None,
                        ..Default::default()
                    })
                    .await
                    .map(|h| {
                        h.events
                            .into_iter()
                            .map(|e| (e.event_type, e.event_timestamp_ms))
                            .collect()
                    })
                    .map_err(|e| format!("history of {id}: {e}"))
            })
        });
        let calls: Vec<_> = calls.collect();
        for call in calls {
            results.push(call.await.unwrap_or_else(|e| Err(format!("panicked: {e}"))));
        }
    }
    results
}
