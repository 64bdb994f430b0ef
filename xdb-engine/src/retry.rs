//! Backoff for failed worker calls.

use chrono::{DateTime, Duration, Utc};
use xdb_protocol::RetryPolicy;

pub const DEFAULT_INITIAL_INTERVAL_SECONDS: f64 = 1.0;
pub const DEFAULT_BACKOFF_COEFFICIENT: f64 = 2.0;
pub const DEFAULT_MAXIMUM_INTERVAL_SECONDS: f64 = 100.0;

/// After a failed attempt: try again at a time, or give up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryDecision {
    RetryAt(DateTime<Utc>),
    GiveUp,
}

/// Decides the next attempt after `failed_attempt` (1-based) failed at `now`.
pub fn next_attempt(
    policy: Option<&RetryPolicy>,
    failed_attempt: u32,
    first_attempt_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> RetryDecision {
    let default = RetryPolicy {
        initial_interval_seconds: None,
        backoff_coefficient: None,
        maximum_interval_seconds: None,
        maximum_attempts: None,
        maximum_attempts_duration_seconds: None,
    };
    let policy = policy.unwrap_or(&default);
    if let Some(max) = policy.maximum_attempts.filter(|m| *m > 0) {
        if failed_attempt >= max {
            return RetryDecision::GiveUp;
        }
    }
    let initial = positive_or(
        policy.initial_interval_seconds,
        DEFAULT_INITIAL_INTERVAL_SECONDS,
    );
    let coefficient = positive_or(policy.backoff_coefficient, DEFAULT_BACKOFF_COEFFICIENT).max(1.0);
    let maximum = positive_or(
        policy.maximum_interval_seconds,
        DEFAULT_MAXIMUM_INTERVAL_SECONDS,
    )
    .max(initial);
    let exponent = failed_attempt.saturating_sub(1).min(64) as i32;
    let delay_seconds = (initial * coefficient.powi(exponent)).min(maximum);
    let retry_at = now + Duration::milliseconds((delay_seconds * 1000.0) as i64);
    if let Some(max_duration) = policy.maximum_attempts_duration_seconds.filter(|d| *d > 0) {
        if retry_at > first_attempt_at + Duration::seconds(i64::from(max_duration)) {
            return RetryDecision::GiveUp;
        }
    }
    RetryDecision::RetryAt(retry_at)
}

fn positive_or(value: Option<f64>, default: f64) -> f64 {
    value
        .filter(|v| v.is_finite() && *v > 0.0)
        .unwrap_or(default)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            initial_interval_seconds: Some(1.0),
            backoff_coefficient: Some(2.0),
            maximum_interval_seconds: Some(5.0),
            maximum_attempts: Some(5),
            maximum_attempts_duration_seconds: None,
        }
    }

    #[test]
    fn backoff_grows_by_the_coefficient_up_to_the_maximum() {
        let now = Utc::now();
        let delays: Vec<i64> = (1..5)
            .map(
                |attempt| match next_attempt(Some(&policy()), attempt, now, now) {
                    RetryDecision::RetryAt(at) => (at - now).num_milliseconds(),
                    RetryDecision::GiveUp => -1,
                },
            )
            .collect();
        assert_eq!(delays, vec![1000, 2000, 4000, 5000]);
    }

    #[test]
    fn gives_up_after_maximum_attempts() {
        let now = Utc::now();
        assert_eq!(
            next_attempt(Some(&policy()), 5, now, now),
            RetryDecision::GiveUp
        );
    }

    #[test]
    fn gives_up_when_the_next_attempt_would_pass_the_maximum_duration() {
        let first = Utc::now();
        let mut p = policy();
        p.maximum_attempts = None;
        p.maximum_attempts_duration_seconds = Some(3);
        let now = first + Duration::seconds(2);
        assert_eq!(next_attempt(Some(&p), 3, first, now), RetryDecision::GiveUp);
        assert!(matches!(
            next_attempt(Some(&p), 1, first, first),
            RetryDecision::RetryAt(_)
        ));
    }

    #[test]
    fn no_policy_retries_forever_with_defaults() {
        let now = Utc::now();
        assert_eq!(
            next_attempt(None, 1000, now, now),
            RetryDecision::RetryAt(now + Duration::seconds(100))
        );
    }
}
