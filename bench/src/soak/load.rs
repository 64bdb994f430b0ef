//! The soak's mixed load: units of work of three kinds, run closed-loop to find the
//! maximum, then open-loop at a fixed rate, each outcome kept by the minute it ended in.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use xdb_sdk::protocol::ProcessStatus;

use crate::scenarios::Driver;
use crate::worker::processes::{QUEUE, RPC_ECHO};

/// Longest one unit may take before it counts as failed.
const UNIT_TIMEOUT: Duration = Duration::from_secs(120);
/// How often the open loop sends the units that fell due.
const TICK: Duration = Duration::from_millis(50);

/// What one unit of the soak's load does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitKind {
    /// A two-state process: start, two `execute` calls, completion.
    Steps,
    /// A process waiting on a durable timer (the bench's timer delay).
    Timer,
    /// A process waiting on a local queue: started, one RPC on it, then the message.
    QueueAndRpc,
}

impl UnitKind {
    /// The mix, out of ten units: seven two-state processes, one timer, two queue+RPC.
    pub fn of(index: usize) -> UnitKind {
        match index % 10 {
            7 => UnitKind::Timer,
            8 | 9 => UnitKind::QueueAndRpc,
            _ => UnitKind::Steps,
        }
    }

    const COUNT: usize = 3;

    fn slot(self) -> usize {
        match self {
            UnitKind::Steps => 0,
            UnitKind::Timer => 1,
            UnitKind::QueueAndRpc => 2,
        }
    }
}

/// Runs unit `index` of the soak to completion: its latency, or why it failed.
pub async fn run_unit(driver: &Driver, index: usize) -> Result<Duration, String> {
    let id = driver.process_id("soak", index);
    let processes = driver.processes();
    let began = Instant::now();
    match UnitKind::of(index) {
        UnitKind::Steps => driver.start(&processes.bench, &id).await?,
        UnitKind::Timer => driver.start(&processes.timer, &id).await?,
        UnitKind::QueueAndRpc => {
            driver.start(&processes.queue, &id).await?;
            let echoed: u64 = driver
                .client()
                .invoke_rpc_with(&processes.queue, &id, RPC_ECHO, &(index as u64))
                .await
                .map_err(|e| format!("rpc on {id}: {e}"))?;
            if echoed != index as u64 {
                return Err(format!("rpc on {id} answered {echoed}, not {index}"));
            }
            driver
                .client()
                .publish_to_local_queue(&id, QUEUE, (), None)
                .await
                .map_err(|e| format!("publish to {id}: {e}"))?;
        }
    }
    let answer = driver
        .client()
        .wait_for_process_completion(&id, UNIT_TIMEOUT)
        .await
        .map_err(|e| format!("wait for {id}: {e}"))?;
    match answer.status {
        ProcessStatus::Completed => Ok(began.elapsed()),
        status => Err(format!(
            "{id} ended {status:?} (timed out: {}, failure: {:?})",
            answer.timed_out, answer.failure
        )),
    }
}

/// Units per second of the mix with `concurrency` units in flight, closed-loop, for
/// `duration`; the first error, if any unit failed.
pub async fn maximum(
    driver: &Driver,
    first_index: usize,
    concurrency: usize,
    duration: Duration,
) -> (f64, usize, Option<String>) {
    let next = Arc::new(AtomicUsize::new(first_index));
    let began = Instant::now();
    let tasks: Vec<_> = (0..concurrency.max(1))
        .map(|_| {
            let (driver, next) = (driver.clone(), next.clone());
            tokio::spawn(async move {
                let (mut done, mut error) = (0usize, None);
                while began.elapsed() < duration {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    match run_unit(&driver, index).await {
                        Ok(_) => done += 1,
                        Err(e) => {
                            error.get_or_insert(e);
                        }
                    }
                }
                (done, error)
            })
        })
        .collect();
    let (mut done, mut first_error) = (0, None);
    for task in tasks {
        match task.await {
            Ok((own, error)) => {
                done += own;
                if first_error.is_none() {
                    first_error = error;
                }
            }
            Err(e) => {
                first_error.get_or_insert(format!("a load task panicked: {e}"));
            }
        }
    }
    let rate = done as f64 / began.elapsed().as_secs_f64().max(f64::EPSILON);
    (rate, next.load(Ordering::Relaxed), first_error)
}

/// Outcomes of the units that ended in one minute of the open loop.
#[derive(Debug, Clone, Default)]
pub struct MinuteOutcomes {
    /// Latencies of the completed units, by kind.
    pub latencies: [Vec<Duration>; UnitKind::COUNT],
    pub failed: usize,
    /// Units not sent because too many were in flight.
    pub shed: usize,
}

impl MinuteOutcomes {
    /// Completed units of every kind.
    pub fn completed(&self) -> usize {
        self.latencies.iter().map(Vec::len).sum()
    }

    /// The completed units of `kind`.
    pub fn of(&self, kind: UnitKind) -> &[Duration] {
        &self.latencies[kind.slot()]
    }
}

/// The open loop's outcomes, by minute since it began.
#[derive(Debug, Default)]
pub struct Outcomes {
    minutes: Mutex<Vec<MinuteOutcomes>>,
    pub first_error: Mutex<Option<String>>,
}

impl Outcomes {
    fn with_minute(&self, minute: usize, change: impl FnOnce(&mut MinuteOutcomes)) {
        let mut minutes = self.minutes.lock().unwrap_or_else(|e| e.into_inner());
        if minutes.len() <= minute {
            minutes.resize_with(minute + 1, MinuteOutcomes::default);
        }
        change(&mut minutes[minute]);
    }

    /// Takes every minute's outcomes.
    pub fn take(&self) -> Vec<MinuteOutcomes> {
        std::mem::take(&mut *self.minutes.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Sends units at `rate` per second from `first_index` on until `duration` has passed,
/// with at most `max_in_flight` at once, then waits for those in flight.
pub async fn open_loop(
    driver: &Driver,
    first_index: usize,
    rate: f64,
    duration: Duration,
    max_in_flight: usize,
    outcomes: Arc<Outcomes>,
) {
    let began = Instant::now();
    let minute_of = move || (began.elapsed().as_secs() / 60) as usize;
    let in_flight = Arc::new(AtomicUsize::new(0));
    let mut sent = 0usize;
    let mut ticker = tokio::time::interval(TICK);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut units = tokio::task::JoinSet::new();
    while began.elapsed() < duration {
        ticker.tick().await;
        let due = (began.elapsed().as_secs_f64() * rate) as usize;
        while sent < due {
            let index = first_index + sent;
            sent += 1;
            if in_flight.load(Ordering::Relaxed) >= max_in_flight {
                outcomes.with_minute(minute_of(), |m| m.shed += 1);
                continue;
            }
            in_flight.fetch_add(1, Ordering::Relaxed);
            let (driver, outcomes, in_flight) =
                (driver.clone(), outcomes.clone(), in_flight.clone());
            units.spawn(async move {
                let outcome = run_unit(&driver, index).await;
                let minute = minute_of();
                match outcome {
                    Ok(latency) => outcomes.with_minute(minute, |m| {
                        m.latencies[UnitKind::of(index).slot()].push(latency)
                    }),
                    Err(error) => {
                        outcomes.with_minute(minute, |m| m.failed += 1);
                        let mut first = outcomes
                            .first_error
                            .lock()
                            .unwrap_or_else(|e| e.into_inner());
                        first.get_or_insert(error);
                    }
                }
                in_flight.fetch_sub(1, Ordering::Relaxed);
            });
        }
        // Finished units' handles are dropped as they go, not kept for an hour.
        while units.try_join_next().is_some() {}
    }
    while units.join_next().await.is_some() {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_is_seven_steps_one_timer_two_queue_units_in_ten() {
        let kinds: Vec<UnitKind> = (0..10).map(UnitKind::of).collect();
        let count = |kind| kinds.iter().filter(|k| **k == kind).count();
        assert_eq!(count(UnitKind::Steps), 7);
        assert_eq!(count(UnitKind::Timer), 1);
        assert_eq!(count(UnitKind::QueueAndRpc), 2);
        assert_eq!(UnitKind::of(17), UnitKind::Timer);
    }

    #[test]
    fn outcomes_are_kept_by_minute_and_taken_once() {
        let outcomes = Outcomes::default();
        outcomes.with_minute(2, |m| m.latencies[0].push(Duration::from_millis(5)));
        outcomes.with_minute(0, |m| m.failed += 1);
        let minutes = outcomes.take();
        assert_eq!(minutes.len(), 3);
        assert_eq!(minutes[2].completed(), 1);
        assert_eq!(minutes[0].failed, 1);
        assert_eq!(minutes[1].completed(), 0);
        assert!(outcomes.take().is_empty());
    }
}
