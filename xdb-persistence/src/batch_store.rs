//! The storage contract of batch operations (`xdb_sys_batches`): the API service creates,
//! lists, describes and cancels them; the async service leases one at a time and walks
//! its selection, checkpointing as it goes.
//!
//! What a batch did to each execution is a receipt (`crate::receipts`), written with the
//! effect: a batch taken over after a crash recounts its progress from them, and an
//! execution handled before the crash answers from its receipt instead of twice.

use std::time::Duration;

use async_trait::async_trait;
use uuid::Uuid;
use xdb_protocol::{BatchInfo, BatchItem, BatchListRequest, BatchStartRequest, BatchStatus};

use crate::receipts::Receipt;
use crate::StoreError;

/// A batch leased to an async-service instance, to walk from `walk_position`.
#[derive(Debug, Clone, PartialEq)]
pub struct LeasedBatch {
    pub info: BatchInfo,
    /// The list page token after the last page checkpointed; `None`: from the start.
    pub walk_position: Option<String>,
    /// Whether the lease was another instance's (or none's) before: its progress since
    /// its last checkpoint is known only from the receipts (see
    /// [`BatchStore::recount_batch`]).
    pub taken_over: bool,
}

/// Progress made since the last checkpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchProgress {
    pub done: u64,
    pub skipped: u64,
    pub failed: u64,
}

/// Batch operations' rows.
#[async_trait]
pub trait BatchStore: Send + Sync + 'static {
    /// Creates a RUNNING batch of `request`, recording `receipt` (the client's request
    /// id) with it; or answers the batch an earlier request with the same id created.
    async fn create_batch(
        &self,
        request: &BatchStartRequest,
        rate_per_second: u32,
        expected: u64,
        receipt: Option<&Receipt>,
    ) -> Result<xdb_protocol::BatchStartResponse, StoreError>;
    /// A batch and the latest executions it skipped or failed on (at most `limit`).
    async fn describe_batch(
        &self,
        batch_id: Uuid,
        limit: usize,
    ) -> Result<Option<(BatchInfo, Vec<BatchItem>)>, StoreError>;
    /// Batches, newest first, a page at a time.
    async fn list_batches(
        &self,
        request: &BatchListRequest,
    ) -> Result<xdb_protocol::BatchListResponse, StoreError>;
    /// Cancels a running batch (a closed one stays as it is), its counts as its receipts
    /// say; the batch, if it exists. Its driver stops within the page in hand.
    async fn cancel_batch(
        &self,
        batch_id: Uuid,
        why: &str,
    ) -> Result<Option<BatchInfo>, StoreError>;

    /// Leases to `owner` for `lease` a running batch nobody else holds (the oldest
    /// first), or renews the one it holds.
    async fn lease_batch(
        &self,
        owner: &str,
        lease: Duration,
    ) -> Result<Option<LeasedBatch>, StoreError>;
    /// Sets the batch's counts to what its receipts say; the counts.
    async fn recount_batch(&self, batch_id: Uuid) -> Result<BatchProgress, StoreError>;
    /// Adds `progress` to the batch's counts, moves its walk to `walk_position` and
    /// renews `owner`'s lease, if it still holds it and the batch still runs; whether
    /// it did (`false`: cancelled, or taken over: stop walking).
    async fn checkpoint_batch(
        &self,
        batch_id: Uuid,
        owner: &str,
        walk_position: Option<&str>,
        progress: BatchProgress,
        lease: Duration,
    ) -> Result<bool, StoreError>;
    /// Closes the batch `owner` holds as `status` (with `error` for FAILED).
    async fn close_batch(
        &self,
        batch_id: Uuid,
        owner: &str,
        status: BatchStatus,
        error: Option<&str>,
    ) -> Result<bool, StoreError>;
}
