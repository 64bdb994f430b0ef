//! Schedules: a process type started on a cron expression or an interval, fired by the
//! service. Each firing's process id is the schedule id and its nominal time, so a firing
//! never starts twice.

use xdb_protocol::paths;
use xdb_protocol::*;

use super::retry::Repeat;
use super::{Client, ClientError};

impl Client {
    /// Creates a schedule (`SCHEDULE_ALREADY_EXISTS` when the id is taken). A bad spec is
    /// an `INVALID_REQUEST` naming the field, and creates nothing. Not sent again after a
    /// lost answer, as a second send would find the first's schedule: describe it.
    pub async fn schedule_create(
        &self,
        request: &ScheduleCreateRequest,
    ) -> Result<ScheduleDescribeResponse, ClientError> {
        self.call(paths::SCHEDULE_CREATE, request, Repeat::Unsafe)
            .await
    }

    /// Replaces a schedule's spec, start template and policies; its next firing follows
    /// the new spec from now on. Sending the same update twice changes nothing more.
    pub async fn schedule_update(
        &self,
        request: &ScheduleUpdateRequest,
    ) -> Result<ScheduleDescribeResponse, ClientError> {
        self.call(paths::SCHEDULE_UPDATE, request, Repeat::Safe)
            .await
    }

    /// Pauses a schedule: nothing fires until it is resumed.
    pub async fn schedule_pause(
        &self,
        request: &ScheduleControlRequest,
    ) -> Result<ScheduleDescribeResponse, ClientError> {
        self.call(paths::SCHEDULE_PAUSE, request, Repeat::Safe)
            .await
    }

    /// Resumes a paused schedule; firings missed meanwhile run when within its catch-up
    /// window.
    pub async fn schedule_resume(
        &self,
        request: &ScheduleControlRequest,
    ) -> Result<ScheduleDescribeResponse, ClientError> {
        self.call(paths::SCHEDULE_RESUME, request, Repeat::Safe)
            .await
    }

    /// Fires a schedule now. Not sent again after a lost answer: a second send would be a
    /// second firing.
    pub async fn schedule_trigger(
        &self,
        request: &ScheduleTriggerRequest,
    ) -> Result<ScheduleTriggerResponse, ClientError> {
        self.call(paths::SCHEDULE_TRIGGER, request, Repeat::Unsafe)
            .await
    }

    /// Runs the firings a schedule's spec had in a past range; a firing already recorded
    /// is not recorded again, so sending it twice does nothing more.
    pub async fn schedule_backfill(
        &self,
        request: &ScheduleBackfillRequest,
    ) -> Result<ScheduleBackfillResponse, ClientError> {
        self.call(paths::SCHEDULE_BACKFILL, request, Repeat::Safe)
            .await
    }

    /// Deletes a schedule (`SCHEDULE_NOT_FOUND` when there is none); the executions it
    /// started run on.
    pub async fn schedule_delete(
        &self,
        request: &ScheduleControlRequest,
    ) -> Result<EmptyResponse, ClientError> {
        self.call(paths::SCHEDULE_DELETE, request, Repeat::Unsafe)
            .await
    }

    /// Schedules by id, a page at a time.
    pub async fn schedule_list(
        &self,
        request: &ScheduleListRequest,
    ) -> Result<ScheduleListResponse, ClientError> {
        self.call(paths::SCHEDULE_LIST, request, Repeat::Safe).await
    }

    /// A schedule, its next 10 fire times and its latest firings.
    pub async fn schedule_describe(
        &self,
        request: &ScheduleDescribeRequest,
    ) -> Result<ScheduleDescribeResponse, ClientError> {
        self.call(paths::SCHEDULE_DESCRIBE, request, Repeat::Safe)
            .await
    }

    /// Operators' changes of schedules (of one, with `schedule_id`, even a deleted one),
    /// newest first, a page at a time.
    pub async fn schedule_history(
        &self,
        request: &ScheduleHistoryRequest,
    ) -> Result<ScheduleHistoryResponse, ClientError> {
        self.call(paths::SCHEDULE_HISTORY, request, Repeat::Safe)
            .await
    }
}
