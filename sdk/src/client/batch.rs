//! Batches: one operation on every execution a selection matches, driven by the service.

use xdb_protocol::paths;
use xdb_protocol::*;

use super::retry::Repeat;
use super::{Client, ClientError};

impl Client {
    /// Starts a batch: `request.operation` on every execution its selection matches, at
    /// its rate, driven by the service until done. Preview the selection with
    /// [`Client::count`] and the same `processType`, `where` and `businessTable` first.
    pub async fn batch_start(
        &self,
        request: &BatchStartRequest,
    ) -> Result<BatchStartResponse, ClientError> {
        self.call_idempotent(paths::BATCH_START, request).await
    }

    /// Batches, newest first, a page at a time.
    pub async fn batch_list(
        &self,
        request: &BatchListRequest,
    ) -> Result<BatchListResponse, ClientError> {
        self.call(paths::BATCH_LIST, request, Repeat::Safe).await
    }

    /// A batch's progress and the latest executions it skipped or failed on
    /// (`BATCH_NOT_FOUND` when no batch has the id).
    pub async fn batch_describe(
        &self,
        request: &BatchDescribeRequest,
    ) -> Result<BatchDescribeResponse, ClientError> {
        self.call(paths::BATCH_DESCRIBE, request, Repeat::Safe)
            .await
    }

    /// Cancels a running batch after the execution in hand; what it did stays done.
    /// Answers the batch as it closed.
    pub async fn batch_cancel(
        &self,
        request: &BatchCancelRequest,
    ) -> Result<BatchDescribeResponse, ClientError> {
        self.call(paths::BATCH_CANCEL, request, Repeat::Unsafe)
            .await
    }
}
