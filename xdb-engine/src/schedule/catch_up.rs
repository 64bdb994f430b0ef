//! Which firings are due at a given time, and which missed ones the catch-up window
//! drops: after the services were down (or the schedule paused), a firing whose nominal
//! time is older than the window is not run, so a long outage does not end in a burst of
//! stale work.

use super::spec::CompiledSpec;

/// The firings due now, oldest first, and where the schedule goes on from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueFirings {
    /// Nominal times to record now.
    pub nominal: Vec<i64>,
    /// Missed nominal times dropped by the window: `[first, until)`.
    pub dropped: Option<(i64, i64)>,
    /// The next nominal time not recorded yet (`None`: the spec has no more).
    pub next_nominal: Option<i64>,
}

/// The firings of `schedule_id` due at `now_ms`, starting at `next_nominal` (the first
/// not recorded yet), keeping missed ones at most `catchup_window_ms` old and at most
/// `max` of them (the rest stay for the next call). A firing is due once its start time
/// ([`CompiledSpec::fire_at`]: nominal plus jitter) has come, never before.
pub fn due_firings(
    spec: &CompiledSpec,
    schedule_id: &str,
    next_nominal: i64,
    now_ms: i64,
    catchup_window_ms: i64,
    max: usize,
) -> DueFirings {
    let window_start = now_ms.saturating_sub(catchup_window_ms);
    let mut cursor = Some(next_nominal);
    let mut dropped = None;
    if next_nominal < window_start {
        // The first nominal time inside the window.
        let first_kept = spec.next_after(window_start - 1);
        let until = first_kept.unwrap_or(window_start).min(window_start);
        dropped = Some((next_nominal, until.max(next_nominal + 1)));
        cursor = first_kept;
    }
    let mut nominal = Vec::new();
    while let Some(time) = cursor {
        if nominal.len() >= max || spec.fire_at(schedule_id, time) > now_ms {
            break;
        }
        nominal.push(time);
        cursor = spec.next_after(time);
    }
    DueFirings {
        nominal,
        dropped,
        next_nominal: cursor,
    }
}

#[cfg(test)]
mod tests {
    use xdb_protocol::{IntervalSpec, ScheduleSpec};

    use super::*;

    fn every(seconds: u32, jitter: Option<u32>) -> CompiledSpec {
        CompiledSpec::compile(&ScheduleSpec {
            cron: None,
            interval: Some(IntervalSpec {
                every_seconds: seconds,
                jitter_seconds: jitter,
            }),
        })
        .unwrap()
    }

    const MINUTE: i64 = 60_000;

    #[test]
    fn nothing_is_due_before_its_time() {
        let spec = every(60, None);
        let due = due_firings(&spec, "s", 10 * MINUTE, 10 * MINUTE - 1, MINUTE, 100);
        assert!(due.nominal.is_empty());
        assert_eq!(due.next_nominal, Some(10 * MINUTE));
        let due = due_firings(&spec, "s", 10 * MINUTE, 10 * MINUTE, MINUTE, 100);
        assert_eq!(due.nominal, [10 * MINUTE]);
        assert_eq!(due.next_nominal, Some(11 * MINUTE));
    }

    #[test]
    fn missed_firings_within_the_window_run_oldest_first() {
        let spec = every(60, None);
        // Down from minute 10 to 15, window 3 minutes: 12, 13, 14 and 15 run.
        let due = due_firings(&spec, "s", 10 * MINUTE, 15 * MINUTE, 3 * MINUTE, 100);
        assert_eq!(
            due.nominal,
            [12 * MINUTE, 13 * MINUTE, 14 * MINUTE, 15 * MINUTE]
        );
        assert_eq!(due.dropped, Some((10 * MINUTE, 12 * MINUTE)));
        assert_eq!(due.next_nominal, Some(16 * MINUTE));
    }

    #[test]
    fn a_zero_window_runs_only_what_is_due_this_instant() {
        let spec = every(60, None);
        let due = due_firings(&spec, "s", 10 * MINUTE, 15 * MINUTE, 0, 100);
        assert_eq!(due.nominal, [15 * MINUTE]);
        assert_eq!(due.dropped, Some((10 * MINUTE, 15 * MINUTE)));
    }

    #[test]
    fn at_most_max_per_call_and_the_rest_stay() {
        let spec = every(1, None);
        let due = due_firings(&spec, "s", 0, 100_000, 200_000, 10);
        assert_eq!(due.nominal.len(), 10);
        assert_eq!(due.next_nominal, Some(10_000));
        assert_eq!(due.dropped, None);
    }

    #[test]
    fn a_jittered_firing_waits_for_its_offset() {
        let spec = every(60, Some(30));
        let nominal = 10 * MINUTE;
        let at = spec.fire_at("s", nominal);
        let before = due_firings(&spec, "s", nominal, at - 1, MINUTE, 10);
        assert!(before.nominal.is_empty());
        let after = due_firings(&spec, "s", nominal, at, MINUTE, 10);
        assert_eq!(after.nominal, [nominal]);
    }
}
