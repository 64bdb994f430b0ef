//! The wall clock the task sources read, injected so that scheduling can be tested with
//! any reading (a clock ahead of or behind the database's, a jump).
//!
//! Only wall-clock time is behind the trait: it is what task rows' due times
//! (`fire_at`, database timestamps) and Pulsar's `deliverAt` are compared with.
//! Elapsed time and sleeps stay tokio's (`tokio::time::Instant`, `sleep`), which tokio's
//! paused time (`test-util`) already controls in tests; a second, home-made timer would
//! only duplicate it. The decisions themselves ([`crate::scheduling`]) take readings as
//! arguments and need no clock at all.
//!
//! In production it is the database's clock ([`xdb_persistence::DatabaseClock`]: this
//! machine's, less the offset the store measured), so that an instance whose clock runs
//! ahead of the database's never runs a task it holds before the database says it is
//! due, and `deliverAt` means the same to every instance.

use chrono::{DateTime, Utc};

/// A source of the current wall-clock time.
pub(crate) trait Clock: Send + Sync + 'static {
    /// The current time by this clock.
    fn now(&self) -> DateTime<Utc>;
}

/// The database's clock, as the store reads it: what production runs on.
impl Clock for xdb_persistence::DatabaseClock {
    fn now(&self) -> DateTime<Utc> {
        xdb_persistence::DatabaseClock::now(self)
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
    fn the_database_clock_is_the_machines_less_its_offset() {
        let ahead = chrono::Duration::seconds(5);
        let clock = xdb_persistence::DatabaseClock::with_offset(ahead);
        let before = Utc::now();
        let read = Clock::now(&clock);
        assert!(before - ahead <= read && read <= Utc::now() - ahead);
    }
}
