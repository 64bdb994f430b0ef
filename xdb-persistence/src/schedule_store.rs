//! The storage contract of schedules (`xdb_sys_schedules`, `xdb_sys_schedule_firings`):
//! the API service creates, changes, lists and describes them and records manual and
//! backfilled firings; the async service records the firings their specs make due and
//! starts them.
//!
//! A firing is a row keyed by schedule and nominal time, inserted under the lock of its
//! schedule's row, so each is recorded once whatever instances race. Recording the spec's
//! firings is conditional on the schedule's `version`: an instance that read the schedule
//! before an update (or another instance's firing) records nothing. This module decides
//! nothing about when a schedule fires (`xdb_engine::schedule` does).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;
use xdb_protocol::{
    ScheduleChangeAction, ScheduleFiring, ScheduleFiringOutcome, ScheduleFiringTrigger,
    ScheduleHistoryRequest, ScheduleHistoryResponse, ScheduleInfo, ScheduleListRequest,
    ScheduleListResponse, ScheduleOverlapPolicy,
};

use crate::StoreError;

/// A schedule row: what the protocol shows, and what the store checks changes against.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSchedule {
    /// `next_fire_timestamp_ms` is the next nominal time not recorded yet.
    pub info: ScheduleInfo,
    /// When that firing may start, on the database's clock (nominal plus jitter).
    pub next_fire_at: Option<DateTime<Utc>>,
    /// Bumped by every change to the row.
    pub version: i64,
}

/// A firing to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewFiring {
    pub nominal_ms: i64,
    pub process_id: String,
    pub fired_by: ScheduleFiringTrigger,
    pub overlap_policy: ScheduleOverlapPolicy,
    /// When it may start (never before its nominal time).
    pub fire_at: DateTime<Utc>,
}

/// A recorded firing not resolved yet (`PENDING` or `BUFFERED`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenFiring {
    pub schedule_id: String,
    pub firing: ScheduleFiring,
    pub overlap_policy: ScheduleOverlapPolicy,
    pub fire_at: DateTime<Utc>,
}

/// Where the spec's firings go on from once some are recorded: the next nominal time not
/// recorded (`None`: no more) and when it may start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NextFiring {
    pub nominal_ms: Option<i64>,
    pub fire_at: Option<DateTime<Utc>>,
}

/// An operator's change of a schedule, as the audit history records it beside the
/// schedule before and after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScheduleChangeNote<'a> {
    pub action: ScheduleChangeAction,
    /// The operator's token name (or `anonymous`).
    pub changed_by: &'a str,
    pub reason: Option<&'a str>,
    /// What a trigger or a backfill started.
    pub detail: Option<&'a str>,
}

/// Schedules' rows. Every operator's change is recorded in `xdb_sys_schedule_changes` in
/// the transaction that makes it.
#[async_trait]
pub trait ScheduleStore: crate::DatabaseTime + Send + Sync + 'static {
    /// Inserts a schedule (`version` 1); `false`, writing nothing, when its id exists.
    async fn create_schedule(
        &self,
        schedule: &ScheduleInfo,
        next: NextFiring,
        change: &ScheduleChangeNote<'_>,
    ) -> Result<bool, StoreError>;
    /// A schedule by id.
    async fn get_schedule(&self, schedule_id: &str) -> Result<Option<StoredSchedule>, StoreError>;
    /// The schedules `process_type`'s definition declares, by id.
    async fn schedules_declared_by(
        &self,
        process_type: &str,
    ) -> Result<Vec<StoredSchedule>, StoreError>;
    /// Schedules by id, a page at a time.
    async fn list_schedules(
        &self,
        request: &ScheduleListRequest,
    ) -> Result<ScheduleListResponse, StoreError>;
    /// Writes `schedule` (spec, template, policies, paused flag, note, reason) and
    /// `next` over the row, if its version is still `expected_version`; whether it did
    /// (`false`: changed meanwhile, or deleted).
    async fn replace_schedule(
        &self,
        schedule: &ScheduleInfo,
        next: NextFiring,
        expected_version: i64,
        change: &ScheduleChangeNote<'_>,
    ) -> Result<bool, StoreError>;
    /// Deletes a schedule and its firings' records (not its changes); whether it existed.
    async fn delete_schedule(
        &self,
        schedule_id: &str,
        change: &ScheduleChangeNote<'_>,
    ) -> Result<bool, StoreError>;
    /// Changes of schedules, newest first, a page at a time.
    async fn schedule_history(
        &self,
        request: &ScheduleHistoryRequest,
    ) -> Result<ScheduleHistoryResponse, StoreError>;
    /// The latest `limit` firings, newest first.
    async fn recent_firings(
        &self,
        schedule_id: &str,
        limit: usize,
    ) -> Result<Vec<ScheduleFiring>, StoreError>;
    /// Records `firings` (those not recorded yet; how many) under the schedule's lock.
    /// With `advance`, only if the schedule's version is still the one given, and then
    /// moves its next firing and bumps its version. `None` when the schedule is gone (or,
    /// with `advance`, changed meanwhile). An operator's trigger or backfill comes with
    /// its `change`, recorded with the firings.
    async fn record_firings(
        &self,
        schedule_id: &str,
        firings: &[NewFiring],
        advance: Option<(i64, NextFiring)>,
        change: Option<&ScheduleChangeNote<'_>>,
    ) -> Result<Option<u32>, StoreError>;
    /// Up to `limit` schedules not paused whose next firing may start by now (the
    /// database's clock), soonest first.
    async fn due_schedules(&self, limit: usize) -> Result<Vec<StoredSchedule>, StoreError>;
    /// Up to `limit` open firings that may start by now, oldest first; a schedule's
    /// later firings come after its earlier ones.
    async fn open_firings(&self, limit: usize) -> Result<Vec<OpenFiring>, StoreError>;
    /// Sets a firing's outcome (and the execution it started, or why not), if it is
    /// still open; whether it was.
    async fn resolve_firing(
        &self,
        schedule_id: &str,
        nominal_ms: i64,
        outcome: ScheduleFiringOutcome,
        process_execution_id: Option<Uuid>,
        reason: Option<&str>,
    ) -> Result<bool, StoreError>;
    /// Leases the starting of the schedule's open firings to `owner` for `lease`, if no
    /// other instance holds it; whether `owner` holds it now. One instance at a time
    /// decides a schedule's overlaps, from what the one before it resolved.
    async fn lease_schedule(
        &self,
        schedule_id: &str,
        owner: &str,
        lease: std::time::Duration,
    ) -> Result<bool, StoreError>;
    /// Gives back `owner`'s lease on the schedule, if it holds it.
    async fn release_schedule(&self, schedule_id: &str, owner: &str) -> Result<(), StoreError>;
    /// The latest firing of the schedule that started an execution, before `nominal_ms`.
    async fn previous_started(
        &self,
        schedule_id: &str,
        nominal_ms: i64,
    ) -> Result<Option<ScheduleFiring>, StoreError>;
}
