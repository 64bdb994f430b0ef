//! Local-queue latency: processes wait on a local queue; one at a time, the client
//! publishes a message to one of them, and the time from sending the publish call to
//! the worker's `execute` call (both on this machine's clock) is taken.

use std::time::{Duration, Instant, SystemTime};

use super::{signed_ms, Driver};
use crate::stats::SignedSummary;
use crate::worker::processes::QUEUE;

/// Start calls in flight while the waiting processes are started.
const START_CONCURRENCY: usize = 16;
/// How long a process may take to reach its waiting state, or to execute after the
/// message.
const TIMEOUT: Duration = Duration::from_secs(30);
/// After every `waitUntil` answered: time for XDB to commit the last of the answers, so
/// each message finds its state waiting rather than being taken by a commit in flight.
const SETTLE: Duration = Duration::from_millis(500);

/// What the queue scenario measured.
#[derive(Debug, Clone, Default)]
pub struct QueueResult {
    pub messages: usize,
    pub failed: usize,
    pub first_error: Option<String>,
    /// From sending the publish call to the worker's `execute` call, in ms.
    pub latency: SignedSummary,
    /// The publish call alone (until its answer), in ms.
    pub publish_call: SignedSummary,
}

/// Publishes one message to each of `count` waiting processes, one after the other.
pub async fn queue(driver: &Driver, count: usize) -> QueueResult {
    let mut result = QueueResult {
        messages: count,
        ..QueueResult::default()
    };
    let definition = driver.processes().queue.clone();
    let starts = driver
        .start_many(&definition, "queue", count, START_CONCURRENCY)
        .await;
    result.first_error = starts.first_error;
    let ids: Vec<String> = (0..count).map(|i| driver.process_id("queue", i)).collect();
    let recorder = driver.recorder();
    recorder
        .wait_for(TIMEOUT, |r| r.waited_among(&ids) >= starts.started)
        .await;
    tokio::time::sleep(SETTLE).await;
    let (mut latencies, mut calls) = (Vec::with_capacity(count), Vec::with_capacity(count));
    for id in &ids {
        if recorder.wait_until_time(id).is_none() {
            result.failed += 1;
            result
                .first_error
                .get_or_insert(format!("{id} never reached its waitUntil"));
            continue;
        }
        let sent = SystemTime::now();
        let began = Instant::now();
        let published = driver
            .client()
            .publish_to_local_queue(id, QUEUE, (), None)
            .await;
        let call = began.elapsed();
        if let Err(error) = published {
            result.failed += 1;
            result
                .first_error
                .get_or_insert(format!("publish to {id}: {error}"));
            continue;
        }
        calls.push(call.as_secs_f64() * 1000.0);
        let one = [id.clone()];
        if !recorder
            .wait_for(TIMEOUT, |r| r.executed_among(&one) == 1)
            .await
        {
            result.failed += 1;
            result
                .first_error
                .get_or_insert(format!("{id} did not execute within {TIMEOUT:?}"));
            continue;
        }
        if let Some(executed) = recorder.execute_time(id) {
            latencies.push(signed_ms(executed, sent));
        }
    }
    result.latency = SignedSummary::of(&latencies);
    result.publish_call = SignedSummary::of(&calls);
    result
}
