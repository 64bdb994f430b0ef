//! The pure part of rate limiting: when a call may go, given the calls this instance
//! let through before. No IO and no clock of its own: the caller passes `now`.
//!
//! Each limited key (a process type, or one of its states) keeps the earliest time its
//! next call may go (`next_free`, a virtual schedule one interval apart: the generic cell
//! rate algorithm). A call that may go within `max_hold` is let through
//! at its time, which it books. A later one is held back instead, without booking: it
//! is given a time of its own on a second schedule (`held_until`), so that calls held
//! back together come back one interval apart, as the limit can take them, rather than
//! all at once.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How late an unused time of a key may still be taken.
pub const CATCH_UP: Duration = Duration::from_secs(1);

/// What becomes of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Call now.
    Now,
    /// Call after waiting this long (booked: no other call takes the time).
    After(Duration),
    /// Too far off to wait for in the instance: give the task back, due this much later.
    HoldBack(Duration),
}

#[derive(Debug, Clone, Copy)]
struct Schedule {
    next_free: Instant,
    held_until: Instant,
}

/// The schedules of every key this instance limited.
#[derive(Debug, Default)]
pub struct RateGate {
    schedules: HashMap<String, Schedule>,
}

impl RateGate {
    /// Admits one call limited by every `(key, calls per second)` of `limits` (all must
    /// let it through: the type's limit and its state's, say). Rates are this instance's
    /// share; a rate that is not positive and finite limits nothing.
    ///
    /// `sharers` is how many instances share each limit: calls held back are spaced at
    /// the whole limit's rate, not this instance's share, since they come back to
    /// whichever instance claims them first, and every instance must find work.
    pub fn admit(
        &mut self,
        limits: &[(&str, f64)],
        sharers: usize,
        now: Instant,
        max_hold: Duration,
    ) -> Admission {
        let limits: Vec<(&str, Duration)> = limits
            .iter()
            .filter(|(_, rate)| rate.is_finite() && *rate > 0.0)
            .map(|(key, rate)| (*key, interval(*rate)))
            .collect();
        if limits.is_empty() {
            return Admission::Now;
        }
        let fresh = Schedule {
            next_free: now,
            held_until: now,
        };
        // A time left unused (no call came when it was free) may still be taken up to
        // [`CATCH_UP`] late, so that calls arriving unevenly (held-back tasks come back
        // to whichever instance claims them first) are not held below the limit; over
        // any long run the rate stays the limit, in bursts of at most a second's share.
        let floor = now.checked_sub(CATCH_UP).unwrap_or(now);
        let at = limits
            .iter()
            .map(|(key, _)| {
                self.schedules
                    .get(*key)
                    .map_or(now, |s| s.next_free.max(floor))
            })
            .max()
            .unwrap_or(now);
        if at <= now + max_hold {
            for (key, interval) in &limits {
                let schedule = self.schedules.entry((*key).to_string()).or_insert(fresh);
                schedule.next_free = at + *interval;
            }
            return if at <= now {
                Admission::Now
            } else {
                Admission::After(at - now)
            };
        }
        let mut until = at;
        for (key, _) in &limits {
            let schedule = self.schedules.entry((*key).to_string()).or_insert(fresh);
            until = until.max(schedule.held_until);
        }
        let sharers = u32::try_from(sharers.max(1)).unwrap_or(u32::MAX);
        for (key, interval) in &limits {
            let schedule = self.schedules.entry((*key).to_string()).or_insert(fresh);
            schedule.held_until = until + *interval / sharers;
        }
        Admission::HoldBack(until - now)
    }

    /// Forgets the keys no longer limited, so that a limit set again starts afresh.
    pub fn retain(&mut self, limited: impl Fn(&str) -> bool) {
        self.schedules.retain(|key, _| limited(key));
    }
}

fn interval(calls_per_second: f64) -> Duration {
    Duration::from_secs_f64((1.0 / calls_per_second).min(1e9))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOLD: Duration = Duration::from_millis(200);

    #[test]
    fn an_unlimited_call_goes_at_once() {
        let mut gate = RateGate::default();
        let now = Instant::now();
        assert_eq!(gate.admit(&[], 1, now, HOLD), Admission::Now);
        assert_eq!(gate.admit(&[("t", 0.0)], 1, now, HOLD), Admission::Now);
        assert_eq!(gate.admit(&[("t", f64::NAN)], 1, now, HOLD), Admission::Now);
    }

    #[test]
    fn calls_are_spaced_one_interval_apart_and_later_ones_are_held_back() {
        let mut gate = RateGate::default();
        let now = Instant::now();
        let limits = [("t", 10.0)];
        assert_eq!(gate.admit(&limits, 1, now, HOLD), Admission::Now);
        assert_eq!(
            gate.admit(&limits, 1, now, HOLD),
            Admission::After(Duration::from_millis(100))
        );
        assert_eq!(
            gate.admit(&limits, 1, now, HOLD),
            Admission::After(Duration::from_millis(200))
        );
        // 300 ms off: more than the hold. Held-back calls come back one interval apart.
        assert_eq!(
            gate.admit(&limits, 1, now, HOLD),
            Admission::HoldBack(Duration::from_millis(300))
        );
        assert_eq!(
            gate.admit(&limits, 1, now, HOLD),
            Admission::HoldBack(Duration::from_millis(400))
        );
        // When the first held one comes back, its time is free.
        let later = now + Duration::from_millis(300);
        assert_eq!(gate.admit(&limits, 1, later, HOLD), Admission::Now);
    }

    #[test]
    fn over_a_long_run_the_rate_is_the_limit() {
        let mut gate = RateGate::default();
        let start = Instant::now();
        let limits = [("t", 50.0)];
        // Calls arrive far faster than the limit; count those let through in 10 s.
        let mut through = 0;
        let mut now = start;
        while now < start + Duration::from_secs(10) {
            if let Admission::Now | Admission::After(_) = gate.admit(&limits, 1, now, HOLD) {
                through += 1;
            }
            now += Duration::from_millis(1);
        }
        // 50 a second, and the calls booked up to the hold past the end.
        assert!((500..=511).contains(&through), "{through} calls in 10 s");
    }

    #[test]
    fn a_call_waits_for_the_strictest_of_its_limits_and_books_both() {
        let mut gate = RateGate::default();
        let now = Instant::now();
        assert_eq!(gate.admit(&[("state", 5.0)], 1, now, HOLD), Admission::Now);
        // The type allows it at once; the state only in 200 ms.
        assert_eq!(
            gate.admit(&[("type", 100.0), ("state", 5.0)], 1, now, HOLD),
            Admission::After(Duration::from_millis(200))
        );
        // The type's next time was booked from then.
        assert_eq!(
            gate.admit(&[("type", 100.0)], 1, now, HOLD),
            Admission::HoldBack(Duration::from_millis(210))
        );
    }

    #[test]
    fn a_key_forgotten_starts_afresh() {
        let mut gate = RateGate::default();
        let now = Instant::now();
        gate.admit(&[("t", 1.0)], 1, now, HOLD);
        assert!(matches!(
            gate.admit(&[("t", 1.0)], 1, now, HOLD),
            Admission::HoldBack(_)
        ));
        gate.retain(|_| false);
        assert_eq!(gate.admit(&[("t", 1.0)], 1, now, HOLD), Admission::Now);
    }
}
