use chrono::{NaiveDate, TimeZone};
use xdb_protocol::{CronSpec, IntervalSpec, ScheduleSpec};

use super::*;

fn cron(expression: &str, zone: Option<&str>) -> ScheduleSpec {
    ScheduleSpec {
        cron: Some(CronSpec {
            expression: expression.into(),
            time_zone: zone.map(str::to_string),
        }),
        interval: None,
    }
}

fn interval(every: u32, jitter: Option<u32>) -> ScheduleSpec {
    ScheduleSpec {
        cron: None,
        interval: Some(IntervalSpec {
            every_seconds: every,
            jitter_seconds: jitter,
        }),
    }
}

/// Milliseconds of a UTC time.
fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> i64 {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, 0)
        .unwrap()
        .timestamp_millis()
}

/// A time as `Europe/Paris` wall clock and offset, to read failures easily.
fn paris(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap()
        .with_timezone(&chrono_tz::Europe::Paris)
        .format("%m-%d %H:%M%:z")
        .to_string()
}

#[test]
fn a_skipped_local_time_does_not_fire() {
    // 2026-03-29: Paris goes from 02:00 CET straight to 03:00 CEST.
    let spec = CompiledSpec::compile(&cron("30 2 * * *", Some("Europe/Paris"))).unwrap();
    let times = spec.next_n(utc(2026, 3, 27, 12, 0), 3);
    let shown: Vec<String> = times.iter().map(|t| paris(*t)).collect();
    assert_eq!(
        shown,
        [
            "03-28 02:30+01:00",
            "03-30 02:30+02:00",
            "03-31 02:30+02:00"
        ]
    );
}

#[test]
fn a_repeated_local_time_fires_once_at_its_first_occurrence() {
    // 2026-10-25: Paris goes from 03:00 CEST back to 02:00 CET.
    let spec = CompiledSpec::compile(&cron("30 2 * * *", Some("Europe/Paris"))).unwrap();
    let times = spec.next_n(utc(2026, 10, 24, 12, 0), 2);
    assert_eq!(times[0], utc(2026, 10, 25, 0, 30), "02:30 CEST");
    assert_eq!(paris(times[1]), "10-26 02:30+01:00");
}

#[test]
fn fire_times_increase_through_a_repeated_hour() {
    let spec = CompiledSpec::compile(&cron("*/15 * * * *", Some("Europe/Paris"))).unwrap();
    // From 00:00 CEST (22:00Z) to 04:00 CET (03:00Z): five hours of real time, four of
    // wall clock plus the repeated one, which fires once.
    let start = utc(2026, 10, 24, 21, 59);
    let times = spec.in_range(start, utc(2026, 10, 25, 3, 0), 100);
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
    assert_eq!(times.len(), 16);
    let shown: Vec<String> = times.iter().map(|t| paris(*t)).collect();
    let repeated_hour: Vec<&String> = shown.iter().filter(|s| s.contains(" 02:")).collect();
    assert_eq!(
        repeated_hour,
        [
            "10-25 02:00+02:00",
            "10-25 02:15+02:00",
            "10-25 02:30+02:00",
            "10-25 02:45+02:00"
        ]
    );
    // After 02:45 CEST the next firing is 03:00 CET, an hour and a quarter later.
    let after = times
        .iter()
        .position(|t| paris(*t) == "10-25 02:45+02:00")
        .unwrap();
    assert_eq!(times[after + 1] - times[after], 75 * 60 * 1000);
}

#[test]
fn from_inside_the_second_pass_the_next_firing_is_after_it() {
    let spec = CompiledSpec::compile(&cron("*/15 * * * *", Some("Europe/Paris"))).unwrap();
    // 02:20 CET, the second pass: 02:30 already fired in the first.
    let now = utc(2026, 10, 25, 1, 20);
    assert_eq!(paris(spec.next_after(now).unwrap()), "10-25 03:00+01:00");
}

#[test]
fn new_york_skips_and_repeats_too() {
    let spec = CompiledSpec::compile(&cron("30 2 * * *", Some("America/New_York"))).unwrap();
    // 2026-03-08 spring forward, 2026-11-01 fall back.
    let march = spec.in_range(utc(2026, 3, 7, 0, 0), utc(2026, 3, 10, 0, 0), 10);
    assert_eq!(march, [utc(2026, 3, 7, 7, 30), utc(2026, 3, 9, 6, 30)]);
    // New York repeats 01:00-02:00.
    let spec = CompiledSpec::compile(&cron("30 1 * * *", Some("America/New_York"))).unwrap();
    let november = spec.in_range(utc(2026, 11, 1, 0, 0), utc(2026, 11, 2, 0, 0), 10);
    assert_eq!(november, [utc(2026, 11, 1, 5, 30)], "01:30 EDT only");
}

#[test]
fn utc_is_the_default_zone_and_six_fields_take_seconds() {
    let spec = CompiledSpec::compile(&cron("0 3 * * *", None)).unwrap();
    assert_eq!(
        spec.next_after(utc(2026, 11, 28, 3, 0)),
        Some(utc(2026, 11, 29, 3, 0))
    );
    let every_second = CompiledSpec::compile(&cron("* * * * * *", None)).unwrap();
    let now = utc(2026, 11, 28, 15, 0) + 250;
    assert_eq!(
        every_second.next_after(now),
        Some(utc(2026, 11, 28, 15, 0) + 1000)
    );
    assert_eq!(every_second.next_after(now - 250), Some(now - 250 + 1000));
}

#[test]
fn weekday_names_read_as_expected() {
    let spec = CompiledSpec::compile(&cron("0 9 * * MON-FRI", None)).unwrap();
    // 2026-11-28 is a Saturday.
    let next = spec.next_after(utc(2026, 11, 28, 12, 0)).unwrap();
    let day = DateTime::<Utc>::from_timestamp_millis(next)
        .unwrap()
        .date_naive();
    assert_eq!(day, NaiveDate::from_ymd_opt(2026, 11, 30).unwrap());
}

#[test]
fn a_spec_that_never_fires_has_no_next_time() {
    let spec = CompiledSpec::compile(&cron("0 0 30 2 *", None)).unwrap();
    assert_eq!(spec.next_after(utc(2026, 1, 1, 0, 0)), None);
    assert!(spec.next_n(utc(2026, 1, 1, 0, 0), 10).is_empty());
}

#[test]
fn intervals_fire_on_multiples_of_their_length() {
    let spec = CompiledSpec::compile(&interval(3600, None)).unwrap();
    let now = utc(2026, 11, 28, 14, 20);
    assert_eq!(spec.next_after(now), Some(utc(2026, 11, 28, 15, 0)));
    assert_eq!(
        spec.next_after(utc(2026, 11, 28, 15, 0)),
        Some(utc(2026, 11, 28, 16, 0))
    );
    assert_eq!(
        spec.fire_at("s", utc(2026, 11, 28, 15, 0)),
        utc(2026, 11, 28, 15, 0)
    );
}

#[test]
fn jitter_delays_a_firing_by_a_fixed_amount_below_it() {
    let spec = CompiledSpec::compile(&interval(60, Some(10))).unwrap();
    let nominal = utc(2026, 11, 28, 15, 0);
    let mut offsets = std::collections::BTreeSet::new();
    for minute in 0..50 {
        let nominal = nominal + minute * 60_000;
        let at = spec.fire_at("report", nominal);
        assert!(
            (nominal..nominal + 10_000).contains(&at),
            "never early, never past it"
        );
        assert_eq!(at, spec.fire_at("report", nominal), "stable");
        offsets.insert(at - nominal);
    }
    assert!(offsets.len() > 10, "spread: {offsets:?}");
    assert_ne!(spec.fire_at("a", nominal), spec.fire_at("b", nominal));
}

#[test]
fn bad_specs_name_their_field() {
    let field = |spec: ScheduleSpec| CompiledSpec::compile(&spec).unwrap_err().field;
    assert_eq!(field(cron("every day", None)), "spec.cron.expression");
    assert_eq!(field(cron("61 * * * *", None)), "spec.cron.expression");
    assert_eq!(field(cron("* * *", None)), "spec.cron.expression");
    assert_eq!(
        field(cron("0 3 * * *", Some("Mars/Olympus"))),
        "spec.cron.timeZone"
    );
    assert_eq!(field(interval(0, None)), "spec.interval.everySeconds");
    assert_eq!(field(interval(60, Some(60))), "spec.interval.jitterSeconds");
    assert_eq!(
        field(ScheduleSpec {
            cron: None,
            interval: None
        }),
        "spec"
    );
    let both = ScheduleSpec {
        cron: cron("0 3 * * *", None).cron,
        interval: interval(60, None).interval,
    };
    assert_eq!(field(both), "spec");
}
