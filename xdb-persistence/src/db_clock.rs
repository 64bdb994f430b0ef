//! One clock for every instance: the database's.
//!
//! Due times (timers, process timeouts, retry backoffs) are written by whichever
//! instance records the transition, and compared with the database's `now()` by the
//! claims. Written from an instance's own clock, a timer would fall due early by as much
//! as that clock runs behind the database's (late by as much as it runs ahead). So the
//! store learns how far its machine's clock is from the database's and every operation
//! reads "now" as [`DatabaseClock::now`]: the machine's clock, corrected.
//!
//! The offset is measured as NTP does: read the database's clock between two readings of
//! ours, take the midpoint, keep the sample with the shortest round trip (its midpoint
//! is off by at most half of it). It is measured at connect and again every
//! [`REFRESH_EVERY`], so a clock that drifts or is stepped is followed. Durations
//! measured with elapsed time (sleeps, timeouts) never use it: they are tokio's.

use std::future::Future;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};

use crate::tables::Answer;
use crate::StoreError;

/// How often the offset is measured again.
pub const REFRESH_EVERY: Duration = Duration::from_secs(30);

/// After a failed measurement (the database was down), the next try comes sooner.
const RETRY_AFTER: Duration = Duration::from_secs(5);

/// Readings of the database clock per measurement.
const SAMPLES: usize = 4;

/// An offset beyond this is logged as a warning: operators should fix the machine's
/// time sync. XDB itself works on with any offset.
const WARN_BEYOND: TimeDelta = TimeDelta::seconds(1);

/// One reading of the database clock, between two readings of this machine's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub sent: DateTime<Utc>,
    /// The database's clock, in microseconds since the Unix epoch.
    pub database_micros: i64,
    pub received: DateTime<Utc>,
}

impl Sample {
    /// Reads the database clock with `read` (its answer: microseconds since the epoch),
    /// between two readings of this machine's clock.
    pub(crate) async fn take(
        read: impl Future<Output = Result<i64, StoreError>>,
    ) -> Result<Self, StoreError> {
        let sent = Utc::now();
        let database_micros = read.await?;
        Ok(Self {
            sent,
            database_micros,
            received: Utc::now(),
        })
    }

    pub fn round_trip(&self) -> TimeDelta {
        self.received - self.sent
    }

    /// How far this machine's clock is ahead of the database's (negative: behind),
    /// taking the database's reading to be from the middle of the round trip.
    pub fn offset(&self) -> TimeDelta {
        let midpoint = self.sent + self.round_trip() / 2;
        TimeDelta::microseconds(midpoint.timestamp_micros() - self.database_micros)
    }
}

/// The offset of the sample with the shortest round trip: the one whose midpoint is
/// surest. `None` without samples.
pub fn best_offset(samples: &[Sample]) -> Option<TimeDelta> {
    samples
        .iter()
        .min_by_key(|sample| sample.round_trip())
        .map(Sample::offset)
}

/// What the database's clock reads when this machine's reads `local`, given this
/// machine's `offset` (ahead of the database's when positive).
pub fn database_time(local: DateTime<Utc>, offset: TimeDelta) -> DateTime<Utc> {
    local
        .checked_sub_signed(offset)
        .unwrap_or(if offset > TimeDelta::zero() {
            DateTime::<Utc>::MIN_UTC
        } else {
            DateTime::<Utc>::MAX_UTC
        })
}

/// Where a dialect reads the database's clock (its timekeeping connections).
pub(crate) trait ClockSource: Send + Sync + 'static {
    /// `count` samples taken on one connection.
    fn samples(&self, count: usize) -> impl Answer<Vec<Sample>>;
}

/// The database's clock, as this instance reads it. Cloning shares it; the offset is
/// kept up to date for as long as a clone lives.
#[derive(Debug, Clone)]
pub struct DatabaseClock {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    /// This machine's clock minus the database's, in microseconds.
    offset_micros: AtomicI64,
    refresher: Mutex<Option<tokio::task::AbortHandle>>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some(refresher) = self.refresher.get_mut().ok().and_then(Option::take) {
            refresher.abort();
        }
    }
}

impl DatabaseClock {
    /// A clock whose offset stays `offset` (for tests, and stores that never measure).
    pub fn with_offset(offset: TimeDelta) -> Self {
        Self {
            shared: Arc::new(Shared {
                offset_micros: AtomicI64::new(offset.num_microseconds().unwrap_or(0)),
                refresher: Mutex::new(None),
            }),
        }
    }

    /// Measures the offset through `source` now (an error if the database does not
    /// answer), then again every [`REFRESH_EVERY`] in the background.
    pub(crate) async fn measure(source: impl ClockSource) -> Result<Self, StoreError> {
        let clock = Self::with_offset(measure_offset(&source).await?);
        clock.report();
        let shared = Arc::downgrade(&clock.shared);
        let refresher = tokio::spawn(refresh(source, shared));
        *clock.shared.refresher.lock().expect("never poisoned") = Some(refresher.abort_handle());
        Ok(clock)
    }

    /// The database's current time, by this machine's clock and the last offset measured.
    pub fn now(&self) -> DateTime<Utc> {
        database_time(Utc::now(), self.offset())
    }

    /// How far this machine's clock is ahead of the database's (negative: behind), as
    /// last measured.
    pub fn offset(&self) -> TimeDelta {
        TimeDelta::microseconds(self.shared.offset_micros.load(Ordering::Relaxed))
    }

    /// [`DatabaseClock::offset`] in seconds (the services' `xdb_clock_offset_seconds`).
    pub fn offset_seconds(&self) -> f64 {
        self.shared.offset_micros.load(Ordering::Relaxed) as f64 / 1e6
    }

    fn set_offset(&self, offset: TimeDelta) {
        let micros = offset.num_microseconds().unwrap_or(0);
        self.shared.offset_micros.store(micros, Ordering::Relaxed);
    }

    /// Logs the offset: a warning when it is large enough to matter to operators.
    fn report(&self) {
        let seconds = self.offset_seconds();
        if self.offset().abs() > WARN_BEYOND {
            tracing::warn!(
                offset_seconds = seconds,
                "this machine's clock is {:.3} s {} the database's; XDB goes by the \
                 database's clock, but fix the machine's time sync (NTP)",
                seconds.abs(),
                if seconds > 0.0 { "ahead of" } else { "behind" },
            );
        } else {
            tracing::debug!(offset_seconds = seconds, "clock offset to the database");
        }
    }
}

async fn measure_offset(source: &impl ClockSource) -> Result<TimeDelta, StoreError> {
    let samples = source.samples(SAMPLES).await?;
    best_offset(&samples)
        .ok_or_else(|| StoreError::Database("the database clock could not be read".into()))
}

/// Measures again every [`REFRESH_EVERY`] until every clone of the clock is gone.
async fn refresh(source: impl ClockSource, shared: Weak<Shared>) {
    let mut pause = REFRESH_EVERY;
    loop {
        tokio::time::sleep(pause).await;
        let measured = measure_offset(&source).await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let clock = DatabaseClock { shared };
        pause = match measured {
            Ok(offset) => {
                clock.set_offset(offset);
                clock.report();
                REFRESH_EVERY
            }
            Err(error) => {
                // The last offset stays: clocks drift by far less than a second a minute.
                tracing::warn!(%error, "reading the database clock failed; retrying");
                RETRY_AFTER
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(millis: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(1_700_000_000_000 + millis).unwrap()
    }

    fn micros(time: DateTime<Utc>) -> i64 {
        time.timestamp_micros()
    }

    fn sample(sent: i64, database: i64, received: i64) -> Sample {
        Sample {
            sent: at(sent),
            database_micros: micros(at(database)),
            received: at(received),
        }
    }

    #[test]
    fn the_offset_is_taken_at_the_middle_of_the_round_trip() {
        // Same clocks: the database read at the midpoint is no offset.
        assert_eq!(sample(0, 5, 10).offset(), TimeDelta::zero());
        // This machine 5 s ahead: the database reads 5 s less at the midpoint.
        assert_eq!(sample(5000, 5, 5010).offset(), TimeDelta::seconds(5));
        // Behind by 5 s.
        assert_eq!(sample(-5000, 5, -4990).offset(), TimeDelta::seconds(-5));
        assert_eq!(sample(0, 5, 10).round_trip(), TimeDelta::milliseconds(10));
    }

    #[test]
    fn the_shortest_round_trip_wins() {
        // The slow samples' midpoints are off by up to half their round trip.
        let samples = [
            sample(0, 90, 100),
            sample(200, 203, 206),
            sample(300, 310, 400),
        ];
        assert_eq!(best_offset(&samples), Some(TimeDelta::zero()));
        assert_eq!(best_offset(&[]), None);
    }

    #[test]
    fn database_time_is_local_time_less_the_offset() {
        assert_eq!(database_time(at(10_000), TimeDelta::seconds(5)), at(5_000));
        assert_eq!(
            database_time(at(10_000), TimeDelta::seconds(-5)),
            at(15_000)
        );
        assert_eq!(database_time(at(0), TimeDelta::zero()), at(0));
        // Beyond what a date holds: the nearest end, never a panic.
        assert_eq!(
            database_time(DateTime::<Utc>::MAX_UTC, TimeDelta::seconds(-1)),
            DateTime::<Utc>::MAX_UTC
        );
        assert_eq!(
            database_time(DateTime::<Utc>::MIN_UTC, TimeDelta::seconds(1)),
            DateTime::<Utc>::MIN_UTC
        );
    }

    #[test]
    fn a_clock_reads_the_machines_time_corrected_by_its_offset() {
        let clock = DatabaseClock::with_offset(TimeDelta::seconds(5));
        let before = Utc::now();
        let read = clock.now();
        let after = Utc::now();
        assert!(before - TimeDelta::seconds(5) <= read && read <= after - TimeDelta::seconds(5));
        assert_eq!(clock.offset(), TimeDelta::seconds(5));
        clock.clone().set_offset(TimeDelta::milliseconds(-1500));
        assert_eq!(
            clock.offset(),
            TimeDelta::milliseconds(-1500),
            "clones share it"
        );
        assert_eq!(clock.offset_seconds(), -1.5);
    }

    struct Fixed(Vec<Sample>);

    impl ClockSource for Fixed {
        fn samples(&self, _count: usize) -> impl Answer<Vec<Sample>> {
            let samples = self.0.clone();
            async move { Ok(samples) }
        }
    }

    #[tokio::test]
    async fn the_offset_is_measured_at_once_and_kept_while_a_clone_lives() {
        let clock = DatabaseClock::measure(Fixed(vec![sample(5000, 5, 5010)]))
            .await
            .unwrap();
        assert_eq!(clock.offset(), TimeDelta::seconds(5));
        let refresher = clock
            .shared
            .refresher
            .lock()
            .unwrap()
            .clone()
            .expect("a refresher runs");
        tokio::task::yield_now().await;
        assert!(!refresher.is_finished());
        drop(clock);
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(refresher.is_finished(), "stopped with the last clone");
        let error = DatabaseClock::measure(Fixed(Vec::new())).await.unwrap_err();
        assert!(error.to_string().contains("clock"), "{error}");
    }
}
