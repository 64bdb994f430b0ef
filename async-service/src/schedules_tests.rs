use chrono::TimeZone;
use xdb_protocol::{
    IntervalSpec, ScheduleInfo, ScheduleOverlapPolicy, ScheduleSpec, ScheduleStartTemplate,
};

use super::*;

fn utc(h: u32, m: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 28, h, m, s).unwrap()
}

fn every_minute(next: DateTime<Utc>, catchup_seconds: u32) -> StoredSchedule {
    StoredSchedule {
        info: ScheduleInfo {
            schedule_id: "report".into(),
            spec: ScheduleSpec {
                cron: None,
                interval: Some(IntervalSpec {
                    every_seconds: 60,
                    jitter_seconds: None,
                }),
            },
            start: ScheduleStartTemplate {
                process_type: "t".into(),
                worker_url: "http://w".into(),
                start_state_id: None,
                start_state_input: None,
                start_state_config: None,
                process_start_config: None,
            },
            overlap_policy: ScheduleOverlapPolicy::AllowAll,
            catchup_window_seconds: catchup_seconds,
            paused: false,
            note: None,
            reason: None,
            next_fire_timestamp_ms: Some(next.timestamp_millis()),
            created_timestamp_ms: 0,
            updated_timestamp_ms: 0,
            declared_by: None,
        },
        next_fire_at: Some(next),
        version: 3,
    }
}

#[test]
fn a_firing_on_time_is_recorded_with_its_derived_process_id() {
    let schedule = every_minute(utc(15, 0, 0), 60);
    let recording = firings_to_record(&schedule, utc(15, 0, 0)).unwrap();
    assert_eq!(recording.firings.len(), 1);
    let firing = &recording.firings[0];
    assert_eq!(firing.process_id, "report-2026-11-28T15:00:00Z");
    assert_eq!(firing.fire_at, utc(15, 0, 0));
    assert_eq!(firing.overlap_policy, ScheduleOverlapPolicy::AllowAll);
    assert_eq!(
        recording.next.nominal_ms,
        Some(utc(15, 1, 0).timestamp_millis())
    );
    assert_eq!(recording.next.fire_at, Some(utc(15, 1, 0)));
}

#[test]
fn nothing_is_recorded_a_millisecond_early() {
    let schedule = every_minute(utc(15, 0, 0), 60);
    let early = utc(15, 0, 0) - chrono::TimeDelta::milliseconds(1);
    let recording = firings_to_record(&schedule, early).unwrap();
    assert!(recording.firings.is_empty());
    assert_eq!(
        recording.next.nominal_ms,
        Some(utc(15, 0, 0).timestamp_millis())
    );
}

#[test]
fn after_downtime_only_the_window_is_caught_up() {
    // Down from 15:00 to 15:10 with a 3-minute window: 15:07 to 15:10 run.
    let schedule = every_minute(utc(15, 0, 0), 180);
    let recording = firings_to_record(&schedule, utc(15, 10, 0)).unwrap();
    let ids: Vec<&str> = recording
        .firings
        .iter()
        .map(|f| f.process_id.as_str())
        .collect();
    assert_eq!(
        ids,
        [
            "report-2026-11-28T15:07:00Z",
            "report-2026-11-28T15:08:00Z",
            "report-2026-11-28T15:09:00Z",
            "report-2026-11-28T15:10:00Z"
        ]
    );
    let dropped = recording.dropped.unwrap();
    assert_eq!(dropped.0, utc(15, 0, 0).timestamp_millis());
}

#[test]
fn a_firing_never_reuses_its_process_id() {
    let schedule = every_minute(utc(15, 0, 0), 60);
    let mut template = schedule.info.start.clone();
    template.process_start_config = Some(ProcessStartConfig {
        id_reuse_policy: Some(ProcessIdReusePolicy::TerminateIfRunning),
        timeout_seconds: Some(30),
        ..Default::default()
    });
    let request = start_request(&template, "report-2026-11-28T15:00:00Z");
    let config = request.process_start_config.unwrap();
    assert_eq!(
        config.id_reuse_policy,
        Some(ProcessIdReusePolicy::DisallowReuse)
    );
    assert_eq!(config.timeout_seconds, Some(30));
    assert_eq!(request.process_id, "report-2026-11-28T15:00:00Z");
}
