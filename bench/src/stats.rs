//! Latency percentiles on sorted samples (nearest rank).

use std::time::Duration;

/// A summary of latency samples.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LatencySummary {
    pub count: usize,
    pub mean: Duration,
    pub p50: Duration,
    pub p90: Duration,
    pub p99: Duration,
    pub max: Duration,
}

impl LatencySummary {
    /// Summarizes `samples` (any order); all zero when there are none.
    pub fn of(samples: &[Duration]) -> LatencySummary {
        if samples.is_empty() {
            return LatencySummary::default();
        }
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        let total: Duration = sorted.iter().sum();
        LatencySummary {
            count: sorted.len(),
            mean: total / u32::try_from(sorted.len()).unwrap_or(u32::MAX),
            p50: percentile(&sorted, 50.0),
            p90: percentile(&sorted, 90.0),
            p99: percentile(&sorted, 99.0),
            max: sorted[sorted.len() - 1],
        }
    }
}

/// The nearest-rank `p`-th percentile of non-empty, ascending `sorted`.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// A summary of samples in milliseconds that may be negative (lateness: early is
/// negative), nearest rank like [`LatencySummary`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SignedSummary {
    pub count: usize,
    pub min: f64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl SignedSummary {
    /// Summarizes `samples` (any order, NaN ignored); all zero when there are none.
    pub fn of(samples: &[f64]) -> SignedSummary {
        let mut sorted: Vec<f64> = samples.iter().copied().filter(|v| !v.is_nan()).collect();
        if sorted.is_empty() {
            return SignedSummary::default();
        }
        sorted.sort_unstable_by(f64::total_cmp);
        let rank = |p: f64| {
            let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
            sorted[rank.clamp(1, sorted.len()) - 1]
        };
        SignedSummary {
            count: sorted.len(),
            min: sorted[0],
            mean: sorted.iter().sum::<f64>() / sorted.len() as f64,
            p50: rank(50.0),
            p90: rank(90.0),
            p99: rank(99.0),
            max: sorted[sorted.len() - 1],
        }
    }
}

/// `d` in milliseconds with two decimals.
pub fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn millis(values: impl IntoIterator<Item = u64>) -> Vec<Duration> {
        values.into_iter().map(Duration::from_millis).collect()
    }

    #[test]
    fn nearest_rank_percentiles() {
        let samples = millis((1..=100).rev());
        let s = LatencySummary::of(&samples);
        assert_eq!(s.count, 100);
        assert_eq!(s.p50, Duration::from_millis(50));
        assert_eq!(s.p90, Duration::from_millis(90));
        assert_eq!(s.p99, Duration::from_millis(99));
        assert_eq!(s.max, Duration::from_millis(100));
        assert_eq!(s.mean, Duration::from_micros(50_500));
    }

    #[test]
    fn signed_summary_keeps_early_samples_negative() {
        let mut samples: Vec<f64> = (1..=98).map(f64::from).collect();
        samples.extend([-3.0, 500.0, f64::NAN]);
        let s = SignedSummary::of(&samples);
        assert_eq!(s.count, 100);
        assert_eq!(s.min, -3.0);
        assert_eq!(s.p50, 49.0);
        assert_eq!(s.p99, 98.0);
        assert_eq!(s.max, 500.0);
        assert!((s.mean - (98.0 * 99.0 / 2.0 - 3.0 + 500.0) / 100.0).abs() < 1e-9);
        assert_eq!(SignedSummary::of(&[]), SignedSummary::default());
    }

    #[test]
    fn small_and_empty_sets() {
        let s = LatencySummary::of(&millis([7]));
        assert_eq!(
            (s.p50, s.p99, s.max),
            (millis([7])[0], millis([7])[0], millis([7])[0])
        );
        assert_eq!(LatencySummary::of(&[]), LatencySummary::default());
    }
}
