//! Schedules: a process type started on a cron expression or a fixed interval, kept as a
//! row in the user's database and fired by the async service.
//!
//! Each firing has a *nominal* time (when the spec says it is due) and a process id
//! derived from the schedule id and that time ([`firing_process_id`]), so a firing started
//! twice after a crash is refused by the process id itself: it is never started twice.
//! A firing never starts before its nominal time (plus its jitter, for an interval).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{AsyncStateConfig, EncodedObject, ProcessStartConfig};

/// Most fire times `describe` lists.
pub const SCHEDULE_NEXT_FIRE_TIMES: usize = 10;
/// Most past firings `describe` lists, newest first.
pub const SCHEDULE_RECENT_FIRINGS: usize = 20;
/// Most firings one `backfill` may start, so a typo in a range cannot start millions.
pub const MAX_BACKFILL_FIRINGS: usize = 1000;
/// Catch-up window of a schedule that names none, in seconds.
pub const DEFAULT_CATCHUP_WINDOW_SECONDS: u32 = 60;
/// Longest a schedule id may be: its firings' process ids append at most this many
/// characters (`-2026-11-28T15:00:00.123Z`).
pub const FIRING_ID_SUFFIX_CHARS: usize = 25;

/// When a schedule fires: exactly one of `cron` and `interval`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<CronSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<IntervalSpec>,
}

/// A cron expression read in an IANA time zone.
///
/// `expression` has 5 fields (`minute hour day-of-month month day-of-week`) or 6 with a
/// leading `second` field (7 with a trailing `year`). Day-of-week numbers run 1 to 7 from
/// Sunday; the names `SUN` to `SAT` are clearer. Across daylight-saving changes: a local time
/// the clocks skip does not fire, and a local time the clocks repeat fires once, at its
/// first occurrence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronSpec {
    pub expression: String,
    /// An IANA zone such as `Europe/Paris`; absent: `UTC`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
}

/// Every `everySeconds`, on the multiples of it since the Unix epoch (so an hourly
/// interval fires on the hour, UTC). With `jitterSeconds`, each firing starts up to that
/// many seconds after its nominal time, by an amount fixed per firing (not per attempt),
/// which spreads the load of many schedules with the same interval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct IntervalSpec {
    /// At least 1.
    pub every_seconds: u32,
    /// Less than `everySeconds`; absent: 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_seconds: Option<u32>,
}

/// What a firing does while the schedule's previous firing is still running:
/// - `SKIP` (the default): does not start; recorded as skipped;
/// - `BUFFER_ONE`: starts when the running one closes; a firing due while one is already
///   buffered is skipped;
/// - `ALLOW_ALL`: starts anyway;
/// - `TERMINATE_PREVIOUS`: terminates the running one, then starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ScheduleOverlapPolicy {
    #[default]
    Skip,
    BufferOne,
    AllowAll,
    TerminatePrevious,
}

impl ScheduleOverlapPolicy {
    pub const ALL: [ScheduleOverlapPolicy; 4] = [
        ScheduleOverlapPolicy::Skip,
        ScheduleOverlapPolicy::BufferOne,
        ScheduleOverlapPolicy::AllowAll,
        ScheduleOverlapPolicy::TerminatePrevious,
    ];

    /// The name on the wire and in the schedule row.
    pub fn as_str(self) -> &'static str {
        match self {
            ScheduleOverlapPolicy::Skip => "SKIP",
            ScheduleOverlapPolicy::BufferOne => "BUFFER_ONE",
            ScheduleOverlapPolicy::AllowAll => "ALLOW_ALL",
            ScheduleOverlapPolicy::TerminatePrevious => "TERMINATE_PREVIOUS",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == text)
    }
}

/// What each firing starts: a start request without its process id, which each firing
/// derives from the schedule id and its nominal time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleStartTemplate {
    pub process_type: String,
    /// Absent or empty: the URL of the deployment current for the process type when the
    /// schedule is created or updated (stored then: update the schedule to follow a new
    /// deployment).
    #[serde(default)]
    #[schema(default = "")]
    pub worker_url: String,
    #[serde(default)]
    pub start_state_id: Option<String>,
    #[serde(default)]
    pub start_state_input: Option<EncodedObject>,
    #[serde(default)]
    pub start_state_config: Option<AsyncStateConfig>,
    /// The options of each execution. Its `idReusePolicy` is ignored: a firing's process
    /// id is new to it, and its overlap with earlier firings is the `overlapPolicy`'s.
    #[serde(default)]
    pub process_start_config: Option<ProcessStartConfig>,
}

/// `POST .../schedule/create`: a new schedule, firing from now on (unless `paused`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleCreateRequest {
    /// Unique among schedules; at most `max_id_chars` minus 25 characters.
    pub schedule_id: String,
    pub spec: ScheduleSpec,
    pub start: ScheduleStartTemplate,
    /// Absent: `SKIP`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap_policy: Option<ScheduleOverlapPolicy>,
    /// After the schedule could not fire (the services were down, the schedule was
    /// paused), the missed firings whose nominal time is at most this many seconds ago
    /// still run, oldest first; older ones are dropped. Absent: 60.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catchup_window_seconds: Option<u32>,
    /// Created paused: it fires once resumed.
    #[serde(default)]
    #[schema(default = false)]
    pub paused: bool,
    /// Free text kept with the schedule (what it is for, who owns it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A schedule a process definition declares, starting that process type: created by the
/// registration that first declares it, changed by one that declares it otherwise, and
/// deleted by one that no longer does. Its code owns it: operators may pause, resume,
/// trigger and backfill it, but not update or delete it. Each firing starts the type at
/// the registering deployment's worker URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScheduleDeclaration {
    /// Unique among all schedules, as for `schedule/create`.
    pub schedule_id: String,
    pub spec: ScheduleSpec,
    /// One of the definition's start states; absent: the process starts with no state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_state_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_state_input: Option<EncodedObject>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_state_config: Option<AsyncStateConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_start_config: Option<ProcessStartConfig>,
    /// Absent: `SKIP`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap_policy: Option<ScheduleOverlapPolicy>,
    /// Absent: 60.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catchup_window_seconds: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `POST .../schedule/update`: replaces a schedule's spec, start template and policies
/// (its paused flag stays); the next firing follows the new spec from now on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleUpdateRequest {
    pub schedule_id: String,
    pub spec: ScheduleSpec,
    pub start: ScheduleStartTemplate,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap_policy: Option<ScheduleOverlapPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catchup_window_seconds: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `POST .../schedule/pause`, `.../resume` and `.../delete`: one schedule by id, and why.
/// Pausing again a paused schedule (or resuming a running one) changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleControlRequest {
    pub schedule_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `POST .../schedule/describe`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleDescribeRequest {
    pub schedule_id: String,
}

/// `POST .../schedule/trigger`: one firing now, whatever the spec and the paused flag
/// say, under the schedule's overlap policy unless the request names another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleTriggerRequest {
    pub schedule_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap_policy: Option<ScheduleOverlapPolicy>,
}

/// The firing a trigger recorded; the async service starts it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleTriggerResponse {
    /// Its nominal time: the database's clock when the trigger was recorded.
    pub nominal_timestamp_ms: i64,
    pub process_id: String,
}

/// `POST .../schedule/backfill`: the firings the spec had in `[start, end)`, started
/// oldest first under the overlap policy (the schedule's unless the request names
/// another; `ALLOW_ALL` starts them all at once). A firing already recorded is not
/// started again. At most 1000 firings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleBackfillRequest {
    pub schedule_id: String,
    /// Milliseconds since the Unix epoch, inclusive.
    pub start_timestamp_ms: i64,
    /// Milliseconds since the Unix epoch, exclusive; not after now.
    pub end_timestamp_ms: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap_policy: Option<ScheduleOverlapPolicy>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleBackfillResponse {
    /// How many firings the range held that were not recorded yet.
    pub firings: u32,
}

/// `POST .../schedule/list`: schedules by id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleListRequest {
    /// Only schedules starting this process type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_type: Option<String>,
    /// Page size (default 50, at most 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleListResponse {
    pub schedules: Vec<ScheduleInfo>,
    /// Absent on the last page.
    #[serde(default)]
    pub next_page_token: Option<String>,
}

/// A schedule as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleInfo {
    pub schedule_id: String,
    pub spec: ScheduleSpec,
    pub start: ScheduleStartTemplate,
    pub overlap_policy: ScheduleOverlapPolicy,
    pub catchup_window_seconds: u32,
    pub paused: bool,
    #[serde(default)]
    pub note: Option<String>,
    /// Why it was last paused or resumed.
    #[serde(default)]
    pub reason: Option<String>,
    /// The nominal time of the next firing the async service will record; absent when
    /// paused or when the spec has no more fire times.
    #[serde(default)]
    pub next_fire_timestamp_ms: Option<i64>,
    pub created_timestamp_ms: i64,
    pub updated_timestamp_ms: i64,
    /// The process type whose definition declares the schedule (see
    /// `ProcessDefinition.schedules`); absent: an operator created it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_by: Option<String>,
}

/// How a firing came about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ScheduleFiringTrigger {
    /// The spec's fire time (on time, or caught up within the window).
    Spec,
    /// `trigger`.
    Manual,
    /// `backfill`.
    Backfill,
}

impl ScheduleFiringTrigger {
    pub fn as_str(self) -> &'static str {
        match self {
            ScheduleFiringTrigger::Spec => "SPEC",
            ScheduleFiringTrigger::Manual => "MANUAL",
            ScheduleFiringTrigger::Backfill => "BACKFILL",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [Self::Spec, Self::Manual, Self::Backfill]
            .into_iter()
            .find(|t| t.as_str() == text)
    }
}

/// Where a firing is: `PENDING` (recorded, not started yet), `BUFFERED` (waits for the
/// previous firing to close), `STARTED`, `SKIPPED` (overlap or catch-up window;
/// `reason` says which) or `FAILED` (the start was refused; `reason` says why).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ScheduleFiringOutcome {
    Pending,
    Buffered,
    Started,
    Skipped,
    Failed,
}

impl ScheduleFiringOutcome {
    pub const ALL: [ScheduleFiringOutcome; 5] = [
        ScheduleFiringOutcome::Pending,
        ScheduleFiringOutcome::Buffered,
        ScheduleFiringOutcome::Started,
        ScheduleFiringOutcome::Skipped,
        ScheduleFiringOutcome::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ScheduleFiringOutcome::Pending => "PENDING",
            ScheduleFiringOutcome::Buffered => "BUFFERED",
            ScheduleFiringOutcome::Started => "STARTED",
            ScheduleFiringOutcome::Skipped => "SKIPPED",
            ScheduleFiringOutcome::Failed => "FAILED",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.as_str() == text)
    }
}

/// One firing of a schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleFiring {
    pub nominal_timestamp_ms: i64,
    pub process_id: String,
    pub trigger: ScheduleFiringTrigger,
    pub outcome: ScheduleFiringOutcome,
    /// The execution it started.
    #[serde(default)]
    pub process_execution_id: Option<String>,
    /// When it started, was skipped or failed (the database's clock).
    #[serde(default)]
    pub resolved_timestamp_ms: Option<i64>,
    #[serde(default)]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleDescribeResponse {
    pub schedule: ScheduleInfo,
    /// The spec's next 10 nominal fire times from now (even when paused: what it would
    /// do once resumed), milliseconds since the Unix epoch.
    pub next_fire_timestamps_ms: Vec<i64>,
    /// The latest 20 firings, newest first.
    #[serde(default)]
    #[schema(default = json!([]))]
    pub recent_firings: Vec<ScheduleFiring>,
}

/// The process id of a schedule's firing at `nominal_ms`: the schedule id, `-`, and the
/// nominal time in UTC (`2026-11-28T15:00:00Z`, with milliseconds when not zero). The
/// same firing always gets the same id, which is what keeps it from starting twice.
pub fn firing_process_id(schedule_id: &str, nominal_ms: i64) -> String {
    let seconds = nominal_ms.div_euclid(1000);
    let millis = nominal_ms.rem_euclid(1000);
    let (date, time) = civil_from_unix(seconds);
    let (year, month, day) = date;
    let (hour, minute, second) = time;
    let fraction = if millis == 0 {
        String::new()
    } else {
        format!(".{millis:03}")
    };
    format!(
        "{schedule_id}-{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}{fraction}Z"
    )
}

/// The UTC date and time of `seconds` since the Unix epoch (Howard Hinnant's
/// `civil_from_days`), so this data-only crate needs no date library.
fn civil_from_unix(seconds: i64) -> ((i64, u32, u32), (u32, u32, u32)) {
    let days = seconds.div_euclid(86_400);
    let of_day = seconds.rem_euclid(86_400) as u32;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        (year, month, day),
        (of_day / 3600, of_day % 3600 / 60, of_day % 60),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn firing_ids_name_the_nominal_time_in_utc() {
        assert_eq!(
            firing_process_id("nightly", 0),
            "nightly-1970-01-01T00:00:00Z"
        );
        // 2026-11-28T15:00:00Z
        assert_eq!(
            firing_process_id("nightly", 1_795_878_000_000),
            "nightly-2026-11-28T15:00:00Z"
        );
        assert_eq!(
            firing_process_id("s", 1_709_164_800_123),
            "s-2024-02-29T00:00:00.123Z"
        );
        let longest = firing_process_id("", 253_402_300_799_999);
        assert_eq!(longest, "-9999-12-31T23:59:59.999Z");
        assert_eq!(longest.len(), FIRING_ID_SUFFIX_CHARS);
    }

    #[test]
    fn names_read_back() {
        for policy in ScheduleOverlapPolicy::ALL {
            assert_eq!(serde_json::to_value(policy).unwrap(), policy.as_str());
            assert_eq!(ScheduleOverlapPolicy::parse(policy.as_str()), Some(policy));
        }
        for outcome in ScheduleFiringOutcome::ALL {
            assert_eq!(serde_json::to_value(outcome).unwrap(), outcome.as_str());
            assert_eq!(
                ScheduleFiringOutcome::parse(outcome.as_str()),
                Some(outcome)
            );
        }
        assert!(serde_json::from_value::<ScheduleOverlapPolicy>("SOMETIMES".into()).is_err());
    }

    #[test]
    fn a_create_request_needs_an_id_a_spec_and_a_type() {
        let request: ScheduleCreateRequest = serde_json::from_value(serde_json::json!({
            "scheduleId": "nightly",
            "spec": {"cron": {"expression": "0 3 * * *", "timeZone": "Europe/Paris"}},
            "start": {"processType": "report"}
        }))
        .unwrap();
        assert_eq!(request.overlap_policy, None);
        assert!(!request.paused);
        assert_eq!(
            request.spec.cron.unwrap().time_zone.as_deref(),
            Some("Europe/Paris")
        );
    }
}
