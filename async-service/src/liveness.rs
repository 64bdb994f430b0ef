//! This instance's heartbeat, and the takeover of the work of instances that died.
//!
//! Leases are long (`async.lease_seconds`, 30 s) so that a slow worker call or a slow
//! renewal never loses its task; but waiting them out after a crash delayed every task
//! a SIGKILLed instance held by up to a lease (300 processes under repeated kills took
//! 101 s instead of 72 s with 5 s leases). So every instance also heartbeats its row in
//! `xdb_sys_service_instances` every quarter of `async.liveness_timeout_ms` (1 s), on
//! the store's timekeeping connections, which a backlog of transitions does not starve.
//! At the same cadence it gives back the leases of the async instances whose heartbeat
//! (by the database clock) is older than the timeout, removes their rows, and wakes the
//! claim loops (on PostgreSQL every instance's, through NOTIFY): the dead instance's
//! work runs elsewhere about a second after the kill, while a live instance keeps its
//! leases for as long as its calls take.
//!
//! It never releases the leases of an owner without a row (an instance whose first
//! heartbeat failed, or a release that does not heartbeat), nor its own, and it judges
//! nobody until its own heartbeats have gone through without a break for a whole
//! timeout ([`SelfCheck`]): after a database outage every heartbeat is old, and those
//! instances are not dead. An instance whose leases were released while it was merely
//! slow applies nothing: completing a task deletes it only where it still holds the
//! lease, so its late transition is refused as stale.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};
use xdb_persistence::{InstanceRegistry, ReleasedLeases, ServiceInstance, TaskSource};

/// The heartbeat period without takeovers (`async.liveness_timeout_ms = 0`): the
/// registration then only serves wake-ups on MySQL.
const SLOW_HEARTBEAT: Duration = xdb_cluster::HEARTBEAT_INTERVAL;

/// The shortest heartbeat period, whatever the timeout.
const MIN_PERIOD: Duration = Duration::from_millis(25);

/// How often to heartbeat (and look for dead instances) for liveness timeout `timeout`
/// (`None`: takeovers off): four heartbeats per timeout, so an instance is judged dead
/// only after missing three or four in a row.
pub(crate) fn heartbeat_period(timeout: Option<Duration>) -> Duration {
    timeout.map_or(SLOW_HEARTBEAT, |timeout| (timeout / 4).max(MIN_PERIOD))
}

/// Whether this instance's own heartbeats go through, which it must before it judges
/// others: when its own fail (the database restarting, the network cut), those of its
/// peers most likely failed too, and they are not dead. Pure: the caller passes clock
/// readings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SelfCheck {
    timeout: Duration,
    /// The first heartbeat of the current unbroken run of successful ones.
    beating_since: Option<Instant>,
    last_beat: Option<Instant>,
}

impl SelfCheck {
    pub(crate) fn new(timeout: Duration) -> Self {
        Self {
            timeout,
            beating_since: None,
            last_beat: None,
        }
    }

    /// Two successful heartbeats further apart than this break the run: this instance
    /// was stalled, or its heartbeats hung (a database pausing), as its peers' may have.
    /// Not less: on a busy machine a heartbeat now and then takes a period or two.
    fn max_gap(&self) -> Duration {
        self.timeout
    }

    /// Records a heartbeat that went through (`ok`) or failed, at `at`.
    pub(crate) fn beat(&mut self, ok: bool, at: Instant) {
        if !ok {
            self.beating_since = None;
            self.last_beat = None;
            return;
        }
        let unbroken = self
            .last_beat
            .is_some_and(|last| at.saturating_duration_since(last) <= self.max_gap());
        if !unbroken {
            self.beating_since = Some(at);
        }
        self.last_beat = Some(at);
    }

    /// Whether to release dead instances' leases now: this instance's heartbeats have
    /// gone through without a break for a whole timeout, the last one lately; by then
    /// every live peer has had a timeout to heartbeat too.
    pub(crate) fn may_release(&self, now: Instant) -> bool {
        let (Some(since), Some(last)) = (self.beating_since, self.last_beat) else {
            return false;
        };
        now.saturating_duration_since(since) >= self.timeout
            && now.saturating_duration_since(last) <= self.max_gap()
    }
}

/// The heartbeat and takeover loop of one instance; [`Liveness::stop`] ends it and
/// removes the instance's row.
pub(crate) struct Liveness {
    registry: Arc<dyn InstanceRegistry>,
    instance_id: String,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Liveness {
    /// Registers `instance` (a failed first heartbeat is retried with the next: until
    /// one goes through nobody takes its leases, and peers reach it by polling), then
    /// heartbeats and, with a `timeout`, releases the leases of instances silent for
    /// longer (from `tasks`), calling `freed` with what it released.
    pub(crate) async fn start(
        registry: Arc<dyn InstanceRegistry>,
        tasks: Arc<dyn TaskSource>,
        instance: ServiceInstance,
        timeout: Option<Duration>,
        freed: Box<dyn Fn(&ReleasedLeases) + Send + Sync>,
    ) -> Self {
        let mut check = timeout.map(SelfCheck::new);
        let first = registry.heartbeat_instance(&instance).await;
        if let Err(error) = &first {
            tracing::warn!(instance = %instance.instance_id, %error, "registering this instance failed; retrying with the next heartbeat");
        }
        if let Some(check) = &mut check {
            check.beat(first.is_ok(), Instant::now());
        }
        let (stop, stopped) = watch::channel(false);
        let instance_id = instance.instance_id.clone();
        let task = tokio::spawn(run(
            registry.clone(),
            tasks,
            instance,
            timeout.zip(check),
            freed,
            stopped,
        ));
        Self {
            registry,
            instance_id,
            stop,
            task,
        }
    }

    /// Stops heartbeating and removes this instance's row: a clean shutdown gives its
    /// leases back itself.
    pub(crate) async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
        if let Err(error) = self.registry.remove_instance(&self.instance_id).await {
            tracing::warn!(%error, "removing this instance's registration failed");
        }
    }
}

async fn run(
    registry: Arc<dyn InstanceRegistry>,
    tasks: Arc<dyn TaskSource>,
    instance: ServiceInstance,
    mut takeover: Option<(Duration, SelfCheck)>,
    freed: Box<dyn Fn(&ReleasedLeases) + Send + Sync>,
    mut stopped: watch::Receiver<bool>,
) {
    let period = heartbeat_period(takeover.map(|(timeout, _)| timeout));
    let mut ticks = tokio::time::interval(period);
    // A late round is not made up for by a burst of them.
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = stopped.changed() => return,
        }
        let beat = registry.heartbeat_instance(&instance).await;
        if let Err(error) = &beat {
            tracing::warn!(%error, "heartbeating this instance failed");
        }
        let Some((timeout, check)) = &mut takeover else {
            continue;
        };
        check.beat(beat.is_ok(), Instant::now());
        if !check.may_release(Instant::now()) {
            continue;
        }
        match tasks
            .release_dead_leases(&instance.instance_id, *timeout)
            .await
        {
            Ok(released) => {
                if !released.tasks.is_empty() {
                    tracing::info!(
                        tasks = released.tasks.len(),
                        "released the leases of instances that stopped heartbeating"
                    );
                    freed(&released);
                }
                if !released.removed.is_empty() {
                    tracing::info!(instances = ?released.removed, "removed dead instances");
                }
            }
            Err(error) => tracing::warn!(%error, "releasing dead instances' leases failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMEOUT: Duration = Duration::from_millis(1000);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A check that heartbeated successfully every `every` from `start` through `until`.
    fn beating(start: Instant, every: Duration, until: Duration) -> SelfCheck {
        let mut check = SelfCheck::new(TIMEOUT);
        let mut at = Duration::ZERO;
        while at <= until {
            check.beat(true, start + at);
            at += every;
        }
        check
    }

    #[test]
    fn four_heartbeats_per_timeout_and_a_slow_one_without_takeovers() {
        assert_eq!(heartbeat_period(Some(TIMEOUT)), ms(250));
        assert_eq!(heartbeat_period(Some(ms(40))), MIN_PERIOD);
        assert_eq!(heartbeat_period(None), SLOW_HEARTBEAT);
    }

    #[test]
    fn nobody_is_judged_before_a_whole_timeout_of_own_heartbeats() {
        let start = Instant::now();
        let check = beating(start, ms(250), ms(750));
        assert!(!check.may_release(start + ms(750)));
        assert!(!check.may_release(start + ms(999)));
        let check = beating(start, ms(250), ms(1000));
        assert!(check.may_release(start + ms(1000)));
        assert!(!SelfCheck::new(TIMEOUT).may_release(start + ms(5000)));
    }

    #[test]
    fn a_failed_heartbeat_starts_the_wait_again() {
        let start = Instant::now();
        let mut check = beating(start, ms(250), ms(2000));
        assert!(check.may_release(start + ms(2000)));
        check.beat(false, start + ms(2250));
        assert!(!check.may_release(start + ms(2250)));
        check.beat(true, start + ms(2500));
        assert!(!check.may_release(start + ms(3250)));
        for at in [2750, 3000, 3250, 3500] {
            check.beat(true, start + ms(at));
        }
        assert!(check.may_release(start + ms(3500)));
    }

    #[test]
    fn a_stall_longer_than_a_timeout_starts_the_wait_again() {
        let start = Instant::now();
        let mut check = beating(start, ms(250), ms(2000));
        // A whole timeout between heartbeats still counts as unbroken.
        check.beat(true, start + ms(3000));
        assert!(check.may_release(start + ms(3000)));
        check.beat(true, start + ms(4001));
        assert!(!check.may_release(start + ms(4001)));
        for at in [4250, 4500, 4750, 5000] {
            check.beat(true, start + ms(at));
        }
        assert!(check.may_release(start + ms(5001)));
    }

    #[test]
    fn a_heartbeat_long_ago_is_no_licence() {
        let start = Instant::now();
        let check = beating(start, ms(250), ms(2000));
        assert!(check.may_release(start + ms(3000)));
        assert!(!check.may_release(start + ms(3001)));
    }
}
