//! The wall clock the task sources read, injected so that scheduling can be tested with
//! any reading (a clock ahead of or behind the database's, a jump).
//!
//! Only wall-clock time is behind the trait: it is what task rows' due times
//! (`fire_at`, database timestamps) and Pulsar's `deliverAt` are compared with.
//! Elapsed time and sleeps stay tokio's (`tokio::time::Instant`, `sleep`), which tokio's
//! paused time (`test-util`) already controls in tests; a second, home-made timer would
//! only duplicate it. The decisions themselves ([`crate::scheduling`]) take readings as
//! arguments and need no clock at all.

use chrono::{DateTime, Utc};

/// A source of the current wall-clock time.
pub(crate) trait Clock: Send + Sync + 'static {
    /// The current time by this instance's clock.
    fn now(&self) -> DateTime<Utc>;
}

/// The machine's clock: what production runs on.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that reads what it is set to, for tests.
#[cfg(test)]
#[derive(Debug)]
pub(crate) struct ManualClock {
    now: std::sync::Mutex<DateTime<Utc>>,
}

#[cfg(test)]
impl ManualClock {
    /// A clock standing at `now`.
    pub(crate) fn at(now: DateTime<Utc>) -> Self {
        Self {
            now: std::sync::Mutex::new(now),
        }
    }

    /// Moves the clock by `by` (backwards when negative, as a corrected clock may).
    pub(crate) fn advance(&self, by: chrono::Duration) {
        *self.now.lock().expect("never poisoned") += by;
    }
}

#[cfg(test)]
impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.now.lock().expect("never poisoned")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_reads_what_it_is_set_to_and_moves_both_ways() {
        let start = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let clock = ManualClock::at(start);
        assert_eq!(clock.now(), start);
        clock.advance(chrono::Duration::milliseconds(1500));
        assert_eq!(clock.now(), start + chrono::Duration::milliseconds(1500));
        clock.advance(chrono::Duration::seconds(-10));
        assert_eq!(clock.now(), start - chrono::Duration::milliseconds(8500));
    }

    #[test]
    fn the_system_clock_is_the_machines() {
        let before = Utc::now();
        let read = SystemClock.now();
        assert!(before <= read && read <= Utc::now());
    }
}
