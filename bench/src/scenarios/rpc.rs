//! RPC latency: one process waits on a local queue while the client calls its RPC
//! again and again, one call at a time; each call is timed from sending the request to
//! reading the answer.

use std::time::{Duration, Instant};

use super::Driver;
use crate::stats::LatencySummary;
use crate::worker::processes::{QUEUE, RPC_ECHO};

/// Unmeasured calls first, to warm the connections on both sides.
const WARM_UP_CALLS: usize = 10;
/// How long the process may take to reach its waiting state.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(30);

/// What the RPC scenario measured.
#[derive(Debug, Clone, Default)]
pub struct RpcResult {
    pub calls: usize,
    pub failed: usize,
    pub first_error: Option<String>,
    pub latency: LatencySummary,
}

/// Calls RPC `echo` `calls` times on one running process.
pub async fn rpc(driver: &Driver, calls: usize) -> RpcResult {
    let mut result = RpcResult {
        calls,
        ..RpcResult::default()
    };
    let definition = driver.processes().queue.clone();
    let id = driver.process_id("rpc", 0);
    if let Err(error) = driver.start(&definition, &id).await {
        result.failed = calls;
        result.first_error = Some(error);
        return result;
    }
    let ids = [id.clone()];
    driver
        .recorder()
        .wait_for(SETTLE_TIMEOUT, |r| r.waited_among(&ids) == 1)
        .await;
    let mut latencies = Vec::with_capacity(calls);
    for index in 0..WARM_UP_CALLS + calls {
        let began = Instant::now();
        let answer: Result<u64, _> = driver
            .client()
            .invoke_rpc_with(&definition, &id, RPC_ECHO, &(index as u64))
            .await;
        let took = began.elapsed();
        if index < WARM_UP_CALLS {
            continue;
        }
        match answer {
            Ok(echo) if echo == index as u64 => latencies.push(took),
            Ok(other) => {
                result.failed += 1;
                result
                    .first_error
                    .get_or_insert(format!("rpc {index} answered {other}"));
            }
            Err(error) => {
                result.failed += 1;
                result
                    .first_error
                    .get_or_insert(format!("rpc {index}: {error}"));
            }
        }
    }
    result.latency = LatencySummary::of(&latencies);
    // Lets the process finish, so it does not wait in the database for the rest of the run.
    let _ = driver
        .client()
        .publish_to_local_queue(&id, QUEUE, (), None)
        .await;
    result
}
