//! The task sources' scheduling decisions, as pure functions: when to claim again,
//! how long to hold a task claimed ahead of its due time, whether to hold a Pulsar
//! message or re-publish it as a delayed timer, when to sweep, renew and retry.
//!
//! Their inputs are clock readings (from [`crate::clock::Clock`] or tokio's monotonic
//! clock, taken by the caller) and facts read from the database; their outputs say what
//! to do. The IO loops call them and carry the decision out, so every threshold is here,
//! tested at its edges.
//!
//! Due times are the database's: a task row's `fire_at`, or a wait the database worked
//! out with its own clock (`TaskClaim::NotDue`). Where an instance compares `fire_at`
//! with its own clock, the decision is bounded by what the database guaranteed, so a
//! clock behind the database's cannot hold a task for longer than that.

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use xdb_persistence::{FailureClass, StoreError};

// ---- the database queue ----

/// Timers (and retries' backoffs) are claimed this far ahead of their due time, at most,
/// and held until due: a claim's own latency under load must not make them late.
const MAX_READ_AHEAD: Duration = Duration::from_secs(1);

/// The shortest sleep before looking for work again, so that a task the last claim
/// could not take (locked at that moment) is not polled for in a busy loop.
const MIN_SLEEP: Duration = Duration::from_millis(5);

/// Pauses before handling a task again after the database refused its transition (a
/// deadlock, a lost connection); after the last one the task is left for its lease to
/// run out.
const DATABASE_RETRY_BACKOFF: [Duration; 2] =
    [Duration::from_millis(20), Duration::from_millis(200)];

/// When the database queue's claim loop looks for work, short of a wake-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ClaimSchedule {
    /// The fallback poll (`queue.poll_interval_ms`).
    poll_interval: Duration,
    /// How far ahead of their due time tasks are claimed.
    read_ahead: Duration,
}

impl ClaimSchedule {
    /// The schedule of a loop polling every `poll_interval`; it reads ahead by as much,
    /// up to [`MAX_READ_AHEAD`].
    pub(crate) fn new(poll_interval: Duration) -> Self {
        Self {
            poll_interval,
            read_ahead: poll_interval.min(MAX_READ_AHEAD),
        }
    }

    /// How far ahead of their due time tasks are claimed.
    pub(crate) fn read_ahead(&self) -> Duration {
        self.read_ahead
    }

    /// Whether to claim again at once: a full batch (`claimed == limit`) may have left
    /// due work behind, if there are permits to run it. A shorter batch took all there
    /// was; work created since then wakes the loop.
    pub(crate) fn claim_again_at_once(claimed: usize, limit: usize, free_permits: usize) -> bool {
        claimed == limit && free_permits > 0
    }

    /// Whether [`ClaimSchedule::sleep_before_next_claim`] needs to know when the next
    /// task is due. A claim takes every task due within the read-ahead, so claiming
    /// again within that long reaches the next one in time: only a poll interval longer
    /// than the read-ahead needs the next due time.
    pub(crate) fn needs_next_due(&self) -> bool {
        self.poll_interval > self.read_ahead
    }

    /// How long to sleep before the next claim, given how long (by the database clock)
    /// until the next unleased task is due, if that was looked up and there is one. It
    /// wakes `read_ahead` before that task is due, never later than the poll interval
    /// (so a far-off task, or a lost wake-up, is looked at again), and never in a busy
    /// loop.
    pub(crate) fn sleep_before_next_claim(&self, next_due_in: Option<Duration>) -> Duration {
        if !self.needs_next_due() {
            return self.poll_interval;
        }
        match next_due_in {
            Some(due_in) => due_in
                .saturating_sub(self.read_ahead)
                .max(MIN_SLEEP)
                .min(self.poll_interval),
            None => self.poll_interval,
        }
    }

    /// What to do with a task just claimed, due at `fire_at` (by the database clock),
    /// with this instance's clock reading `now`.
    ///
    /// The claim took only tasks due within the read-ahead by the database clock at the
    /// claim, so once `read_ahead` has passed since the claim answered, the task is due
    /// whatever this instance's clock says; the hold never lasts longer. A clock behind
    /// the database's therefore neither fires a timer early nor holds it (and its lease)
    /// for as long as the clocks disagree. A clock ahead of the database's still shortens
    /// the hold by its lead (up to the read-ahead). Hence the reading the database queue
    /// passes is the database's clock as this instance measured it (see [`crate::clock`]),
    /// not the machine's own: a machine's skew affects neither.
    pub(crate) fn on_claimed(&self, fire_at: DateTime<Utc>, now: DateTime<Utc>) -> Claimed {
        match (fire_at - now).to_std() {
            Ok(wait) if !wait.is_zero() => Claimed::HoldFor(wait.min(self.read_ahead)),
            _ => Claimed::RunNow,
        }
    }
}

/// What becomes of a task the claim loop just claimed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claimed {
    /// It is due: run it (it counts as claimed now).
    RunNow,
    /// Claimed ahead of its due time: hold it (its lease renewed) this long, then run it.
    HoldFor(Duration),
}

/// The longest pause between tries of a transition the database keeps refusing.
const LONGEST_REFUSAL_PAUSE: Duration = Duration::from_secs(5);

/// What a task source does with a handling that failed: the one policy of both
/// sources, by the error's class. Each source paces the retries its own way (the
/// database queue: [`after_refusal`]; Pulsar: [`on_refused`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnFailure {
    /// Handle it again later, no attempt consumed; set aside after the source's limit.
    RetryLater,
    /// Set it aside for an operator now: the same handling would fail the same way.
    SetAsideNow,
    /// Nothing to do: the work was done elsewhere.
    Drop,
}

pub(crate) fn on_failure(class: FailureClass) -> OnFailure {
    match class {
        FailureClass::Transient => OnFailure::RetryLater,
        // A user's refusal is a failed attempt inside the handlers; one that escapes
        // them (recording the attempt was refused too) would come back the same.
        FailureClass::Users | FailureClass::Permanent => OnFailure::SetAsideNow,
        FailureClass::Stale => OnFailure::Drop,
    }
}

/// Why a task was set aside, as its `TASK_PARKED` event and the operators' view say:
/// the error, and whether it was judged permanent or refused every time.
pub(crate) fn set_aside_reason(error: &StoreError, failures: u32) -> String {
    match error.class() {
        FailureClass::Transient => {
            format!("the database refused the transition {failures} times in a row: {error}")
        }
        _ => format!("a failure that would come back the same (not retried): {error}"),
    }
}

/// What the database queue does after the database refused a task's transition
/// `refusals` times in a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AfterRefusal {
    /// Try again after this pause (20 ms, 200 ms, then doubling up to 5 s).
    RetryAfter(Duration),
    /// Park the task (after `park_after` refusals; never when it is 0).
    Park,
}

pub(crate) fn after_refusal(refusals: u32, park_after: u32) -> AfterRefusal {
    if park_after > 0 && refusals >= park_after {
        return AfterRefusal::Park;
    }
    let pause = match database_retry_pause(refusals as usize) {
        Some(pause) => pause,
        None => {
            let doublings = refusals.saturating_sub(2).min(16);
            (DATABASE_RETRY_BACKOFF[1] * 2u32.pow(doublings)).min(LONGEST_REFUSAL_PAUSE)
        }
    };
    AfterRefusal::RetryAfter(pause)
}

/// The pause before handling a task again after the database refused its transition
/// `refusals` times, or `None` to give up and leave the task for its lease to run out.
pub(crate) fn database_retry_pause(refusals: usize) -> Option<Duration> {
    refusals
        .checked_sub(1)
        .and_then(|index| DATABASE_RETRY_BACKOFF.get(index).copied())
}

// ---- leases ----

/// How often held leases are renewed: three times per lease, so that one renewal late or
/// failed still leaves the lease alive until the next.
pub(crate) fn lease_renewal_period(lease: Duration) -> Duration {
    lease / 3
}

// ---- the Pulsar source ----

/// The pause before subscribing again after `failures` failed tries in a row: from
/// half a second, doubling, at most 30 s (a broker restarting takes tens of seconds).
pub(crate) fn resubscribe_pause(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(6);
    (Duration::from_millis(500) * 2u32.pow(doublings)).min(Duration::from_secs(30))
}

/// A little past the due time the database gave: the database clock decides whether the
/// task is due, and a hold that ends a moment early finds it not due and waits again.
const HOLD_MARGIN: Duration = Duration::from_millis(5);

/// Pauses before looking again for a task row that was not found. A change event can
/// arrive before its transaction is visible to other sessions (PostgreSQL writes the
/// commit to the log, where Debezium reads it, a moment before it is visible), so a
/// missing row is not taken for a finished task at once. Under load (xdb-bench, 32
/// processes in flight) a few inserts in a thousand were not visible yet when their
/// event was handled, and their processes stalled before these re-checks.
const GONE_RECHECKS: [Duration; 4] = [
    Duration::from_millis(20),
    Duration::from_millis(100),
    Duration::from_millis(400),
    Duration::from_millis(1500),
];

/// What to do with a message whose task could not be claimed yet: not due, or leased by
/// another instance, for `wait` by the database clock.
///
/// A wait within `hold_at_most` (`pulsar.hold_ms`) is held in memory, a little past
/// its end; a longer one becomes a delayed timer message when `may_republish`, or else
/// is held for `hold_at_most` and looked at again. `now` is this instance's clock,
/// which `deliverAt` is set by: whatever the broker makes of it, a timer delivered
/// early finds its task not due and is held or re-published again.
pub(crate) fn on_not_claimed(
    wait: Duration,
    may_republish: bool,
    hold_at_most: Duration,
    now: DateTime<Utc>,
) -> NotClaimed {
    if wait > hold_at_most && may_republish {
        let deliver_at = TimeDelta::from_std(wait)
            .ok()
            .and_then(|wait| now.checked_add_signed(wait))
            .unwrap_or(DateTime::<Utc>::MAX_UTC);
        return NotClaimed::Republish { deliver_at };
    }
    NotClaimed::Hold(wait.min(hold_at_most) + HOLD_MARGIN)
}

/// What becomes of a message whose task is not claimable yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotClaimed {
    /// Keep it in memory this long, then try to claim the task again.
    Hold(Duration),
    /// Publish a timer message with this `deliverAt`, and acknowledge this one.
    Republish { deliver_at: DateTime<Utc> },
}

/// What to do when a message's task row was not found, after `rechecks` looks again.
pub(crate) fn on_gone(rechecks: usize) -> Gone {
    match GONE_RECHECKS.get(rechecks) {
        Some(pause) => Gone::LookAgainIn(*pause),
        None => Gone::Drop,
    }
}

/// What becomes of a message whose task row was not found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gone {
    /// Its transaction may not be visible yet: look again after this pause.
    LookAgainIn(Duration),
    /// Looked for long enough: the task is done; drop the message.
    Drop,
}

/// What to do after the database refused a claimed task's transition for the
/// `refusals`-th time (`pulsar.max_deliveries`, `pulsar.nack_delay_ms`).
pub(crate) fn on_refused(refusals: u32, max_deliveries: u32, nack_delay: Duration) -> Refused {
    if refusals >= max_deliveries {
        Refused::DeadLetter
    } else {
        Refused::RetryIn(nack_delay)
    }
}

/// What becomes of a task whose transition the database refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Handle it again, still leased here, after this pause.
    RetryIn(Duration),
    /// Refused as often as allowed: pass its message to the dead-letter topic.
    DeadLetter,
}

/// Whether the sweep for lost events (`pulsar.sweep_after_ms` = `overdue`) runs now,
/// `since_last` after the last one ended (or the source started). It runs every half
/// of `overdue`, so that a task is swept at most about one and a half times `overdue`
/// after it came due.
pub(crate) fn next_sweep(since_last: Duration, overdue: Duration) -> Sweep {
    match (overdue / 2).checked_sub(since_last) {
        Some(left) if !left.is_zero() => Sweep::In(left),
        _ => Sweep::Now,
    }
}

/// When the sweep for lost events runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sweep {
    Now,
    In(Duration),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(millis: u64) -> Duration {
        Duration::from_millis(millis)
    }

    fn at(millis: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(1_700_000_000_000 + millis).unwrap()
    }

    #[test]
    fn transient_failures_are_retried_others_set_aside_at_once_stale_dropped() {
        assert_eq!(on_failure(FailureClass::Transient), OnFailure::RetryLater);
        assert_eq!(on_failure(FailureClass::Users), OnFailure::SetAsideNow);
        assert_eq!(on_failure(FailureClass::Permanent), OnFailure::SetAsideNow);
        assert_eq!(on_failure(FailureClass::Stale), OnFailure::Drop);
        let lost = StoreError::ConnectionLost("reset".into());
        assert!(set_aside_reason(&lost, 8).contains("8 times in a row"));
        let missing = StoreError::NotFound("no such row".into());
        let reason = set_aside_reason(&missing, 1);
        assert!(reason.contains("not retried") && reason.contains("no such row"));
    }

    #[test]
    fn resubscribing_pauses_double_from_half_a_second_to_thirty() {
        let pauses: Vec<u64> = (1..=9)
            .map(|n| resubscribe_pause(n).as_millis() as u64)
            .collect();
        assert_eq!(
            pauses,
            [500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000]
        );
    }

    #[test]
    fn read_ahead_is_the_poll_interval_up_to_a_second() {
        assert_eq!(ClaimSchedule::new(ms(10)).read_ahead(), ms(10));
        assert_eq!(ClaimSchedule::new(ms(1000)).read_ahead(), ms(1000));
        assert_eq!(ClaimSchedule::new(ms(1001)).read_ahead(), ms(1000));
        assert_eq!(ClaimSchedule::new(ms(60_000)).read_ahead(), ms(1000));
    }

    #[test]
    fn a_full_batch_with_permits_left_claims_again_at_once() {
        assert!(ClaimSchedule::claim_again_at_once(256, 256, 1));
        assert!(!ClaimSchedule::claim_again_at_once(256, 256, 0));
        assert!(!ClaimSchedule::claim_again_at_once(3, 256, 200));
        // Nothing was claimed for want of permits; some came free meanwhile.
        assert!(ClaimSchedule::claim_again_at_once(0, 0, 4));
        assert!(!ClaimSchedule::claim_again_at_once(0, 0, 0));
    }

    #[test]
    fn a_poll_within_the_read_ahead_never_asks_when_the_next_task_is_due() {
        let schedule = ClaimSchedule::new(ms(1000));
        assert!(!schedule.needs_next_due());
        for next in [None, Some(ms(0)), Some(ms(3)), Some(ms(500_000))] {
            assert_eq!(schedule.sleep_before_next_claim(next), ms(1000));
        }
        let fast = ClaimSchedule::new(ms(10));
        assert!(!fast.needs_next_due());
        assert_eq!(fast.sleep_before_next_claim(Some(ms(0))), ms(10));
    }

    #[test]
    fn a_long_poll_wakes_a_read_ahead_before_the_next_due_task() {
        let schedule = ClaimSchedule::new(ms(5000));
        assert!(schedule.needs_next_due());
        assert_eq!(schedule.sleep_before_next_claim(Some(ms(3000))), ms(2000));
        // Due within the read-ahead (or overdue: the database says 0): the shortest
        // sleep, not a busy loop.
        assert_eq!(schedule.sleep_before_next_claim(Some(ms(0))), MIN_SLEEP);
        assert_eq!(schedule.sleep_before_next_claim(Some(ms(1000))), MIN_SLEEP);
        assert_eq!(schedule.sleep_before_next_claim(Some(ms(1001))), MIN_SLEEP);
        assert_eq!(schedule.sleep_before_next_claim(Some(ms(1005))), ms(5));
        assert_eq!(schedule.sleep_before_next_claim(Some(ms(1006))), ms(6));
        // Exactly one poll away, and much further: looked at again after one poll.
        assert_eq!(schedule.sleep_before_next_claim(Some(ms(6000))), ms(5000));
        let a_year = Duration::from_secs(365 * 24 * 3600);
        assert_eq!(schedule.sleep_before_next_claim(Some(a_year)), ms(5000));
        // Nothing waiting, or the look-up failed: the poll interval.
        assert_eq!(schedule.sleep_before_next_claim(None), ms(5000));
    }

    #[test]
    fn a_claimed_task_due_now_or_before_runs_at_once() {
        let schedule = ClaimSchedule::new(ms(1000));
        assert_eq!(schedule.on_claimed(at(0), at(0)), Claimed::RunNow);
        assert_eq!(schedule.on_claimed(at(-1), at(0)), Claimed::RunNow);
        assert_eq!(schedule.on_claimed(at(-86_400_000), at(0)), Claimed::RunNow);
    }

    #[test]
    fn a_task_claimed_ahead_is_held_until_due() {
        let schedule = ClaimSchedule::new(ms(1000));
        assert_eq!(schedule.on_claimed(at(1), at(0)), Claimed::HoldFor(ms(1)));
        assert_eq!(
            schedule.on_claimed(at(750), at(0)),
            Claimed::HoldFor(ms(750))
        );
        assert_eq!(
            schedule.on_claimed(at(1000), at(0)),
            Claimed::HoldFor(ms(1000))
        );
        let micro = at(0) + TimeDelta::microseconds(1);
        assert_eq!(
            schedule.on_claimed(micro, at(0)),
            Claimed::HoldFor(Duration::from_micros(1))
        );
    }

    /// The claim took tasks due within the read-ahead by the database clock; this
    /// instance's clock is behind the database's by `skew`. The hold ends no earlier
    /// than the database's due time (measured from the claim), and no later than the
    /// read-ahead.
    #[test]
    fn a_clock_behind_the_databases_never_fires_early_nor_holds_for_the_skew() {
        let read_ahead = ms(1000);
        let schedule = ClaimSchedule::new(read_ahead);
        let db_now = at(0);
        for skew in [0, 1, 5, 400, 999, 1000, 1001, 60_000, 3_600_000] {
            let local_now = db_now - TimeDelta::milliseconds(skew);
            for due_in in [0, 1, 300, 999, 1000] {
                let fire_at = db_now + TimeDelta::milliseconds(due_in);
                let hold = match schedule.on_claimed(fire_at, local_now) {
                    Claimed::RunNow => Duration::ZERO,
                    Claimed::HoldFor(hold) => hold,
                };
                let due_in = ms(due_in as u64);
                assert!(
                    hold >= due_in,
                    "skew {skew} ms: held {hold:?}, due in {due_in:?}"
                );
                assert!(hold <= read_ahead, "skew {skew} ms: held {hold:?}");
            }
        }
    }

    #[test]
    fn database_refusals_are_retried_twice_then_left_to_the_lease() {
        assert_eq!(database_retry_pause(1), Some(ms(20)));
        assert_eq!(database_retry_pause(2), Some(ms(200)));
        assert_eq!(database_retry_pause(3), None);
        assert_eq!(database_retry_pause(usize::MAX), None);
        assert_eq!(database_retry_pause(0), None);
    }

    #[test]
    fn refused_transitions_back_off_then_park() {
        let ms = Duration::from_millis;
        let pauses: Vec<AfterRefusal> = (1..=10).map(|n| after_refusal(n, 10)).collect();
        assert_eq!(
            pauses,
            [20, 200, 400, 800, 1600, 3200, 5000, 5000, 5000]
                .map(|p| AfterRefusal::RetryAfter(ms(p)))
                .into_iter()
                .chain([AfterRefusal::Park])
                .collect::<Vec<_>>()
        );
        assert_eq!(after_refusal(1, 1), AfterRefusal::Park);
        assert_eq!(after_refusal(1000, 0), AfterRefusal::RetryAfter(ms(5000)));
    }

    #[test]
    fn leases_are_renewed_three_times_per_lease() {
        assert_eq!(lease_renewal_period(Duration::from_secs(30)), ms(10_000));
        // The shortest lease the configuration allows.
        let period = lease_renewal_period(Duration::from_secs(1));
        assert_eq!(period, Duration::from_nanos(333_333_333));
        assert!(period * 2 < Duration::from_secs(1));
    }

    #[test]
    fn a_wait_within_the_hold_limit_is_held_a_little_past_its_end() {
        let hold = ms(30_000);
        assert_eq!(
            on_not_claimed(ms(0), true, hold, at(0)),
            NotClaimed::Hold(ms(5))
        );
        assert_eq!(
            on_not_claimed(ms(2000), true, hold, at(0)),
            NotClaimed::Hold(ms(2005))
        );
        // Exactly the limit is still held.
        assert_eq!(
            on_not_claimed(hold, true, hold, at(0)),
            NotClaimed::Hold(ms(30_005))
        );
    }

    #[test]
    fn a_longer_wait_is_republished_for_its_due_time() {
        let hold = ms(30_000);
        assert_eq!(
            on_not_claimed(ms(30_001), true, hold, at(0)),
            NotClaimed::Republish {
                deliver_at: at(30_001)
            }
        );
        let a_year = Duration::from_secs(365 * 24 * 3600);
        assert_eq!(
            on_not_claimed(a_year, true, hold, at(0)),
            NotClaimed::Republish {
                deliver_at: at(0) + TimeDelta::days(365)
            }
        );
        // Beyond what a date can hold: as late as one can.
        assert_eq!(
            on_not_claimed(Duration::MAX, true, hold, at(0)),
            NotClaimed::Republish {
                deliver_at: DateTime::<Utc>::MAX_UTC
            }
        );
    }

    #[test]
    fn a_long_wait_that_may_not_be_republished_is_looked_at_again_after_the_hold_limit() {
        // A timer delivered early is held once before going round again; a dead letter
        // is never re-published.
        let hold = ms(30_000);
        let a_day = Duration::from_secs(24 * 3600);
        assert_eq!(
            on_not_claimed(a_day, false, hold, at(0)),
            NotClaimed::Hold(ms(30_005))
        );
    }

    /// A timer due in two minutes, its change event handled at once: the database
    /// decides each claim by its own clock, this instance sets `deliverAt` by its own
    /// (ahead of or behind the database's), and the broker delivers a timer message
    /// early (or ignores `deliverAt`), on time, or late. The task is claimed only once
    /// the database says it is due, and it is looked at again at least every
    /// `hold_at_most` however long the wait.
    #[test]
    fn a_timer_is_claimed_only_when_the_database_says_so_whatever_the_clocks_and_broker_do() {
        use crate::clock::{Clock, ManualClock};

        let hold_at_most = ms(30_000);
        let due_in = TimeDelta::minutes(2);
        for instance_skew_ms in [-3_600_000, -5_000, 0, 5_000, 3_600_000] {
            // How much earlier (negative: later) than `deliverAt` the broker delivers,
            // as a share of the message's delay: 1.0 ignores `deliverAt` altogether.
            for broker_early in [1.0, 0.5, 0.0, -0.1] {
                let database = ManualClock::at(at(0));
                let instance = ManualClock::at(at(instance_skew_ms));
                let fire_at = database.now() + due_in;
                let mut may_republish = true;
                let mut looks = 0;
                let claimed_at = loop {
                    looks += 1;
                    assert!(looks < 1000, "never claimed");
                    let wait = match (fire_at - database.now()).to_std() {
                        Ok(wait) if !wait.is_zero() => wait,
                        _ => break database.now(),
                    };
                    let passed =
                        match on_not_claimed(wait, may_republish, hold_at_most, instance.now()) {
                            NotClaimed::Hold(hold) => {
                                assert!(hold <= hold_at_most + HOLD_MARGIN, "held {hold:?}");
                                may_republish = true;
                                TimeDelta::from_std(hold).unwrap()
                            }
                            NotClaimed::Republish { deliver_at } => {
                                // A timer message: held once before it may go round again.
                                may_republish = false;
                                let delay = (deliver_at - instance.now()).max(TimeDelta::zero());
                                let early = delay.num_milliseconds() as f64 * broker_early;
                                delay - TimeDelta::milliseconds(early as i64)
                            }
                        };
                    database.advance(passed);
                    instance.advance(passed);
                };
                assert!(
                    claimed_at >= fire_at,
                    "skew {instance_skew_ms} ms, broker {broker_early}: claimed {:?} early",
                    fire_at - claimed_at
                );
            }
        }
    }

    #[test]
    fn a_missing_row_is_looked_for_four_times_then_dropped() {
        let pauses: Vec<_> = (0..)
            .map(on_gone)
            .take_while(|gone| *gone != Gone::Drop)
            .collect();
        assert_eq!(
            pauses,
            [ms(20), ms(100), ms(400), ms(1500)].map(Gone::LookAgainIn)
        );
        assert_eq!(on_gone(4), Gone::Drop);
        assert_eq!(on_gone(usize::MAX), Gone::Drop);
    }

    #[test]
    fn refusals_are_retried_until_the_delivery_limit_then_dead_lettered() {
        let delay = ms(1000);
        assert_eq!(on_refused(1, 20, delay), Refused::RetryIn(delay));
        assert_eq!(on_refused(19, 20, delay), Refused::RetryIn(delay));
        assert_eq!(on_refused(20, 20, delay), Refused::DeadLetter);
        // One delivery allowed: the first refusal is the last.
        assert_eq!(on_refused(1, 1, delay), Refused::DeadLetter);
    }

    #[test]
    fn the_sweep_runs_every_half_of_its_overdue_age() {
        let overdue = ms(60_000);
        assert_eq!(next_sweep(ms(0), overdue), Sweep::In(ms(30_000)));
        assert_eq!(next_sweep(ms(29_999), overdue), Sweep::In(ms(1)));
        assert_eq!(next_sweep(ms(30_000), overdue), Sweep::Now);
        assert_eq!(next_sweep(ms(30_001), overdue), Sweep::Now);
        assert_eq!(next_sweep(Duration::MAX, overdue), Sweep::Now);
        // The shortest the configuration allows.
        assert_eq!(next_sweep(ms(0), ms(100)), Sweep::In(ms(50)));
        assert_eq!(next_sweep(ms(50), ms(100)), Sweep::Now);
    }
}
