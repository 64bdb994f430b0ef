//! When a schedule fires: a spec checked once ([`CompiledSpec::compile`]) and asked for
//! its fire times on a clock passed in, never read.
//!
//! Times are milliseconds since the Unix epoch. A *nominal* time is when the spec says a
//! firing is due; an interval's firing may start later by its jitter ([`CompiledSpec::fire_at`]),
//! never earlier.
//!
//! Daylight saving, for cron specs: a local time the clocks skip (02:30 on a spring-forward
//! night in Europe) does not fire that day, and a local time the clocks repeat (02:30 on a
//! fall-back night) fires once, at its first occurrence. The `cron` crate yields both
//! occurrences of a repeated time, interleaved; [`CompiledSpec::next_after`] keeps only the
//! first, so fire times always increase.

use std::str::FromStr;

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;
use xdb_protocol::ScheduleSpec;

use crate::validation::ValidationError;

/// Most candidate times one search looks at before deciding a cron spec has no more fire
/// times (a `0 0 30 2 *` never fires); a repeated hour of a per-second spec is 7,200.
const MAX_CANDIDATES: usize = 20_000;

/// A spec ready to answer "when next".
#[derive(Debug, Clone)]
pub enum CompiledSpec {
    // Boxed: a parsed cron schedule is a few hundred bytes, an interval two numbers.
    Cron {
        schedule: Box<cron::Schedule>,
        zone: Tz,
    },
    Interval {
        every_ms: i64,
        jitter_ms: i64,
    },
}

impl CompiledSpec {
    /// Checks `spec`; a problem names the field (`spec.cron.expression`,
    /// `spec.cron.timeZone`, `spec.interval.everySeconds`, …).
    pub fn compile(spec: &ScheduleSpec) -> Result<Self, ValidationError> {
        match (&spec.cron, &spec.interval) {
            (Some(_), Some(_)) | (None, None) => Err(ValidationError::new(
                "spec",
                "must have exactly one of cron and interval",
            )),
            (Some(cron), None) => {
                let zone = match cron.time_zone.as_deref() {
                    None => Tz::UTC,
                    Some(name) => Tz::from_str(name).map_err(|_| {
                        ValidationError::new(
                            "spec.cron.timeZone",
                            format!("'{}' is not an IANA time zone", clip(name)),
                        )
                    })?,
                };
                let schedule = Box::new(parse_cron(&cron.expression)?);
                Ok(CompiledSpec::Cron { schedule, zone })
            }
            (None, Some(interval)) => {
                if interval.every_seconds == 0 {
                    return Err(ValidationError::new(
                        "spec.interval.everySeconds",
                        "must be at least 1",
                    ));
                }
                let jitter = interval.jitter_seconds.unwrap_or(0);
                if jitter >= interval.every_seconds {
                    return Err(ValidationError::new(
                        "spec.interval.jitterSeconds",
                        "must be less than everySeconds",
                    ));
                }
                Ok(CompiledSpec::Interval {
                    every_ms: i64::from(interval.every_seconds) * 1000,
                    jitter_ms: i64::from(jitter) * 1000,
                })
            }
        }
    }

    /// The first nominal time strictly after `after_ms`, or `None` when the spec has no
    /// more.
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        match self {
            CompiledSpec::Interval { every_ms, .. } => {
                Some((after_ms.div_euclid(*every_ms) + 1) * every_ms)
            }
            CompiledSpec::Cron { schedule, zone } => {
                let after = DateTime::<Utc>::from_timestamp_millis(after_ms)?;
                // The crate works in whole seconds: start from the second `after` is in.
                let from = after.with_timezone(zone);
                schedule
                    .after(&from)
                    .take(MAX_CANDIDATES)
                    .find(|candidate| {
                        candidate.timestamp_millis() > after_ms && is_first_occurrence(candidate)
                    })
                    .map(|candidate| candidate.timestamp_millis())
            }
        }
    }

    /// Up to `limit` nominal times strictly after `after_ms`, in order.
    pub fn next_n(&self, after_ms: i64, limit: usize) -> Vec<i64> {
        let mut times = Vec::with_capacity(limit);
        let mut cursor = after_ms;
        while times.len() < limit {
            let Some(next) = self.next_after(cursor) else {
                break;
            };
            times.push(next);
            cursor = next;
        }
        times
    }

    /// The nominal times in `[start_ms, end_ms)`, at most `limit + 1` of them (so a
    /// caller can tell a range holding more than `limit`).
    pub fn in_range(&self, start_ms: i64, end_ms: i64, limit: usize) -> Vec<i64> {
        let mut times = Vec::new();
        let mut cursor = start_ms.saturating_sub(1);
        while times.len() <= limit {
            match self.next_after(cursor) {
                Some(next) if next < end_ms => {
                    times.push(next);
                    cursor = next;
                }
                _ => break,
            }
        }
        times
    }

    /// When the firing at `nominal_ms` may start: its nominal time, plus, for an interval
    /// with jitter, an offset below the jitter fixed by the schedule id and the nominal
    /// time (the same after a restart, different between schedules).
    pub fn fire_at(&self, schedule_id: &str, nominal_ms: i64) -> i64 {
        match self {
            CompiledSpec::Interval { jitter_ms, .. } if *jitter_ms > 0 => {
                let spread = stable_hash(schedule_id, nominal_ms) % (*jitter_ms as u64);
                nominal_ms + spread as i64
            }
            _ => nominal_ms,
        }
    }
}

/// A 5-field expression gets a leading `0` seconds field; 6 or 7 fields are the crate's
/// own form.
fn parse_cron(expression: &str) -> Result<cron::Schedule, ValidationError> {
    let field = "spec.cron.expression";
    let fields = expression.split_whitespace().count();
    let full = match fields {
        5 => format!("0 {expression}"),
        6 | 7 => expression.to_string(),
        _ => {
            return Err(ValidationError::new(
                field,
                format!(
                    "'{}' has {fields} fields; expected 5 (minute hour day month weekday) or 6 with seconds first",
                    clip(expression)
                ),
            ))
        }
    };
    cron::Schedule::from_str(&full).map_err(|e| {
        ValidationError::new(
            field,
            format!("'{}' is not a cron expression: {e}", clip(expression)),
        )
    })
}

/// Whether `time` is the first instant its local wall-clock time names (false for the
/// second pass through a repeated hour).
fn is_first_occurrence(time: &DateTime<Tz>) -> bool {
    let zone = time.timezone();
    match zone.from_local_datetime(&time.naive_local()).earliest() {
        Some(first) => first == *time,
        None => true,
    }
}

/// FNV-1a over the schedule id and the nominal time: stable across releases and
/// platforms, unlike the standard library's hasher.
fn stable_hash(schedule_id: &str, nominal_ms: i64) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in schedule_id
        .as_bytes()
        .iter()
        .chain(nominal_ms.to_le_bytes().iter())
    {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

fn clip(text: &str) -> String {
    text.chars().take(80).collect()
}

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;
