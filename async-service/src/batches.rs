//! The batch driver: leases one running batch at a time and walks the executions its
//! selection matches, newest first, a page at a time, applying its operation to each at
//! the batch's rate.
//!
//! What the batch does to an execution is recorded with the effect (a receipt), so a
//! walk resumed after a crash, here or on another instance, answers an execution handled
//! before from its receipt instead of handling it twice. The walk's position and counts
//! are checkpointed after each page; a walk (re)starts by recounting from the receipts,
//! so the counts are exact whatever was lost since the last checkpoint.

use std::sync::Arc;
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{broadcast, watch};
use tokio::time::Instant;
use uuid::Uuid;
use xdb_engine::decide::DecideError;
use xdb_persistence::receipts::{ClientRequest, Control, Receipt};
use xdb_persistence::{
    reads_business_row, BatchProgress, LeasedBatch, Notification, Notifications, ProcessStore,
    QueryTable, StoreError,
};
use xdb_protocol::{
    BatchItemOutcome, BatchOperation, BatchStartRequest, BatchStatus, ExecutionsMoveRequest,
    ProcessExecutionControlRequest, ProcessExecutionListFilter, ProcessExecutionListRequest,
    ProcessExecutionResetRequest, ProcessExecutionStopRequest, ProcessExecutionStopType,
    ProcessExecutionSummary, PublishToLocalQueueRequest,
};

/// The time limit of each page's query of the selection.
pub(crate) const PAGE_QUERY_TIMEOUT: Duration = Duration::from_secs(30);
/// Executions of a page handled at once (each one transaction).
const CONCURRENCY: usize = 16;
/// Most executions a page of the walk holds. Large: a selection the database cannot
/// read in the walk's order is sorted whole for every page (MariaDB sorts all of
/// `customer < ?` to page it by start time), so the page count, not the page size, is
/// what such a walk costs. See [`next_page_size`] for the other bounds.
const MAX_PAGE: u32 = 500;
/// The first page's size, before the walk knows how long an execution takes.
const FIRST_PAGE: u32 = 100;

/// Drives batches for this instance.
pub(crate) struct BatchDriver {
    pub store: Arc<dyn ProcessStore>,
    pub owner: String,
    /// Column names compare without case (MySQL).
    pub names_ignore_case: bool,
    /// The time limit of each page's query.
    pub query_timeout: Duration,
    /// How long a lease on a batch lasts (the instance's task lease): renewed at each
    /// page's checkpoint, so a page must take less (see `next_page_size`).
    pub lease: Duration,
    /// Wake-ups: a new batch is looked for at once ([`Notification::Batches`]).
    pub notifications: Notifications,
    /// How often an idle driver looks for a batch all the same (`async.poll_interval_ms`,
    /// at least a second): a wake-up may be missed, and a batch another instance gave
    /// back announces nothing.
    pub idle_poll: Duration,
}

/// Returns when a batch may have been created: announced, or announcements missed (a
/// lost listener connection, a lagging receiver). Never returns once the hub is gone,
/// leaving the driver to its poll.
async fn new_batch(wake_ups: &mut broadcast::Receiver<Notification>) {
    loop {
        match wake_ups.recv().await {
            Ok(Notification::Batches | Notification::Reconnected) | Err(RecvError::Lagged(_)) => {
                return
            }
            Ok(_) => {}
            Err(RecvError::Closed) => std::future::pending().await,
        }
    }
}

/// What handling one execution came to.
enum Handled {
    /// Newly, with this outcome.
    Now(BatchItemOutcome),
    /// Before (a walk resumed after a crash): counted by the recount already.
    Before,
}

impl BatchDriver {
    /// Runs batches until `stop` turns true; a batch in hand is left at its last
    /// checkpoint, its lease given back for another instance to resume it.
    pub(crate) async fn run(self, mut stop: watch::Receiver<bool>) {
        // Subscribed before the first look: a batch created after it wakes the driver.
        let mut wake_ups = self.notifications.subscribe();
        while !*stop.borrow() {
            let idle = match self.store.lease_batch(&self.owner, self.lease).await {
                Ok(Some(batch)) => match self.drive(batch, &mut stop).await {
                    Ok(()) => false,
                    Err(error) => {
                        // Not at a wake-up: whatever stopped it may stop it again.
                        tracing::warn!(%error, "a batch stopped; it resumes shortly");
                        tokio::select! {
                            _ = tokio::time::sleep(self.idle_poll) => {}
                            _ = stop.changed() => {}
                        }
                        false
                    }
                },
                Ok(None) => true,
                Err(error) => {
                    tracing::warn!(%error, "could not look for batches to run");
                    true
                }
            };
            if idle {
                tokio::select! {
                    _ = tokio::time::sleep(self.idle_poll) => {}
                    _ = stop.changed() => {}
                    _ = new_batch(&mut wake_ups) => {}
                }
            }
        }
    }

    async fn drive(
        &self,
        leased: LeasedBatch,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<(), StoreError> {
        let info = &leased.info;
        let batch_id = Uuid::parse_str(&info.batch_id)
            .map_err(|_| StoreError::Database(format!("batch id {}", info.batch_id)))?;
        // Progress since the last checkpoint (lost with a crash or an error) is in the
        // receipts only.
        self.store.recount_batch(batch_id).await?;
        if leased.taken_over {
            tracing::info!(batch = %batch_id, operation = info.operation.as_str(), "batch resumed");
        }
        let request = &info.request;
        let table = match self.query_table(request).await {
            Ok(table) => table,
            Err(error) => return self.fail(batch_id, &error).await,
        };
        let mut pacer = Pacer::new(info.rate_per_second);
        let mut position = leased.walk_position.clone();
        let mut page_size = FIRST_PAGE.min(info.rate_per_second).max(1);
        loop {
            let began = Instant::now();
            let list = list_request(request, page_size, position.clone());
            let page = match self
                .store
                .list_matching(&list, table.as_ref(), self.query_timeout)
                .await
            {
                Ok(page) => page,
                Err(error) if error.is_retryable() => return Err(error),
                Err(error) => return self.fail(batch_id, &error).await,
            };
            if *stop.borrow() {
                return self.give_back(batch_id, position.as_deref()).await;
            }
            // Each execution at its slot of the rate, up to CONCURRENCY at once.
            let mut handled = Vec::with_capacity(page.executions.len());
            let mut in_flight = FuturesUnordered::new();
            for execution in &page.executions {
                let slot = pacer.slot();
                in_flight.push(async move {
                    tokio::time::sleep_until(slot).await;
                    self.handle(batch_id, request, execution).await
                });
                if in_flight.len() >= CONCURRENCY {
                    handled.extend(in_flight.next().await);
                }
            }
            while let Some(outcome) = in_flight.next().await {
                handled.push(outcome);
            }
            let mut progress = BatchProgress::default();
            for outcome in handled {
                // A failure of the database stops the walk; the page is walked again
                // (what was done answers from its receipts) after the recount.
                match outcome? {
                    Handled::Now(BatchItemOutcome::Done) => progress.done += 1,
                    Handled::Now(BatchItemOutcome::Skipped) => progress.skipped += 1,
                    Handled::Now(BatchItemOutcome::Failed) => progress.failed += 1,
                    Handled::Before => {}
                }
            }
            page_size = next_page_size(
                info.rate_per_second,
                self.lease,
                began.elapsed(),
                page.executions.len(),
            );
            let next = page.next_page_token.or(position.clone());
            let held = self
                .store
                .checkpoint_batch(batch_id, &self.owner, next.as_deref(), progress, self.lease)
                .await?;
            if !held {
                // Cancelled (or taken over after a pause longer than the lease): this
                // page's progress is in the receipts only.
                self.store.recount_batch(batch_id).await?;
                return Ok(());
            }
            if next == position {
                self.store
                    .close_batch(batch_id, &self.owner, BatchStatus::Completed, None)
                    .await?;
                tracing::info!(batch = %batch_id, "batch completed");
                return Ok(());
            }
            position = next;
        }
    }

    /// Applies the batch's operation to `execution`, at most once for this batch.
    async fn handle(
        &self,
        batch_id: Uuid,
        request: &BatchStartRequest,
        execution: &ProcessExecutionSummary,
    ) -> Result<Handled, StoreError> {
        let execution_id = Uuid::parse_str(&execution.process_execution_id)
            .map_err(|_| StoreError::Database("an execution id that is not a UUID".into()))?;
        let receipt = Receipt::of_batch_item(batch_id, execution_id, request.operation.as_str());
        let applied = match OwnedRequest::of(request, execution) {
            None => self.move_one(request, execution, &receipt).await,
            Some(owned) => self
                .store
                .apply(owned.as_client_request(), Some(&receipt))
                .await
                .map(|answer| !answer.replayed),
        };
        let (outcome, reason) = match applied {
            Ok(true) => return Ok(Handled::Now(BatchItemOutcome::Done)),
            Ok(false) => return Ok(Handled::Before),
            Err(error) if error.is_retryable() => return Err(error),
            Err(error) => (classify(&error), error.to_string()),
        };
        let recorded = self
            .store
            .record_batch_item(&receipt, outcome, &reason)
            .await?;
        Ok(if recorded {
            Handled::Now(outcome)
        } else {
            Handled::Before
        })
    }

    /// Moves `execution` to the batch's deployment, recording `receipt` with the move;
    /// an execution that did not move is `NotApplicable` (and one moved before this walk
    /// then finds its receipt where the skip would be recorded).
    async fn move_one(
        &self,
        request: &BatchStartRequest,
        execution: &ProcessExecutionSummary,
        receipt: &Receipt,
    ) -> Result<bool, StoreError> {
        let to = request.move_to.clone().ok_or_else(|| {
            StoreError::NotApplicable("the batch names no deployment to move to".into())
        })?;
        let moving = ExecutionsMoveRequest {
            process_type: execution.process_type.clone(),
            to,
            from: None,
            process_ids: vec![execution.process_id.clone()],
        };
        match self.store.move_executions(&moving, Some(receipt)).await? {
            Ok(moved) if moved > 0 => Ok(true),
            Ok(_) => Err(StoreError::NotApplicable(
                "not running, or on that deployment already".into(),
            )),
            Err(unknown) => Err(StoreError::NotApplicable(unknown)),
        }
    }

    /// The business table the selection's column conditions read (the API service
    /// resolved it when the batch started), with its columns as they are now.
    async fn query_table(
        &self,
        request: &BatchStartRequest,
    ) -> Result<Option<QueryTable>, StoreError> {
        if !reads_business_row(request.where_.as_ref(), None) {
            return Ok(None);
        }
        let Some(table) = &request.business_table else {
            return Err(StoreError::NotApplicable(
                "the batch's filter compares columns but names no business table".into(),
            ));
        };
        let (schema, name) = match table.table_name.split_once('.') {
            Some((schema, name)) => (Some(schema), name),
            None => (None, table.table_name.as_str()),
        };
        let columns = self.store.table_columns(schema, name).await?;
        if columns.is_empty() {
            return Err(StoreError::NotApplicable(format!(
                "table '{}' does not exist any more",
                table.table_name
            )));
        }
        Ok(Some(QueryTable {
            table_name: table.table_name.clone(),
            key_column: table.primary_key_column.clone(),
            columns,
            names_ignore_case: self.names_ignore_case,
        }))
    }

    async fn fail(&self, batch_id: Uuid, error: &StoreError) -> Result<(), StoreError> {
        tracing::warn!(batch = %batch_id, %error, "batch failed");
        let error = error.to_string();
        self.store
            .close_batch(batch_id, &self.owner, BatchStatus::Failed, Some(&error))
            .await?;
        Ok(())
    }

    /// Gives the lease back at once, for another instance to resume the batch.
    async fn give_back(&self, batch_id: Uuid, position: Option<&str>) -> Result<(), StoreError> {
        let nothing = BatchProgress::default();
        self.store
            .checkpoint_batch(batch_id, &self.owner, position, nothing, Duration::ZERO)
            .await?;
        Ok(())
    }
}

/// Why an operation did not apply (SKIPPED) or failed (FAILED).
fn classify(error: &StoreError) -> BatchItemOutcome {
    match error {
        StoreError::NotFound(_)
        | StoreError::NotApplicable(_)
        | StoreError::Decide(DecideError::NotRunning) => BatchItemOutcome::Skipped,
        _ => BatchItemOutcome::Failed,
    }
}

/// The next page's size: at most a second's worth at the batch's rate and
/// [`MAX_PAGE`], and few enough that at the pace of the last page (`elapsed` for
/// `handled` executions, its query included) it takes a third of the lease, which only
/// each page's checkpoint renews.
fn next_page_size(rate_per_second: u32, lease: Duration, elapsed: Duration, handled: usize) -> u32 {
    let cap = rate_per_second.clamp(1, MAX_PAGE);
    if handled == 0 {
        return cap;
    }
    let per_execution = elapsed.as_secs_f64() / handled as f64;
    let in_a_third = (lease.as_secs_f64() / 3.0 / per_execution.max(1e-6)).floor();
    (in_a_third.min(f64::from(cap)) as u32).max(1)
}

/// A page of the walk: the batch's selection after `position`.
fn list_request(
    request: &BatchStartRequest,
    page_size: u32,
    position: Option<String>,
) -> ProcessExecutionListRequest {
    ProcessExecutionListRequest {
        filter: ProcessExecutionListFilter {
            process_type: request.process_type.clone(),
            ..Default::default()
        },
        page_size: Some(page_size),
        next_page_token: position,
        where_: request.where_.clone(),
        business_table: request.business_table.clone(),
        explain: false,
    }
}

/// The request a batch's operation makes of one execution.
enum OwnedRequest {
    Stop(ProcessExecutionStopRequest),
    Publish(PublishToLocalQueueRequest),
    Control(Control, ProcessExecutionControlRequest),
    Reset(Box<ProcessExecutionResetRequest>),
}

impl OwnedRequest {
    /// `None` for a move, which is no request of one execution.
    fn of(batch: &BatchStartRequest, execution: &ProcessExecutionSummary) -> Option<Self> {
        let process_id = execution.process_id.clone();
        let process_execution_id = Some(execution.process_execution_id.clone());
        let stop = |stop_type| {
            OwnedRequest::Stop(ProcessExecutionStopRequest {
                request_id: None,
                process_id: process_id.clone(),
                process_execution_id: process_execution_id.clone(),
                stop_type,
                reason: batch.reason.clone(),
            })
        };
        let control = |control| {
            OwnedRequest::Control(
                control,
                ProcessExecutionControlRequest {
                    request_id: None,
                    process_id: process_id.clone(),
                    process_execution_id: process_execution_id.clone(),
                    state_execution_id: None,
                    reason: batch.reason.clone(),
                    identity: batch.identity.clone(),
                    reprioritize: None,
                },
            )
        };
        Some(match batch.operation {
            BatchOperation::MoveToDeployment => return None,
            BatchOperation::Terminate => stop(ProcessExecutionStopType::Terminate),
            BatchOperation::Fail => stop(ProcessExecutionStopType::Fail),
            BatchOperation::RetryNow => control(Control::RetryNow),
            BatchOperation::GiveUp => control(Control::GiveUp),
            BatchOperation::Pause => control(Control::Pause),
            BatchOperation::Resume => control(Control::Resume),
            BatchOperation::Reprioritize => match control(Control::Reprioritize) {
                OwnedRequest::Control(control, request) => OwnedRequest::Control(
                    control,
                    ProcessExecutionControlRequest {
                        reprioritize: batch.reprioritize.clone(),
                        ..request
                    },
                ),
                _ => unreachable!("a control"),
            },
            BatchOperation::PublishToLocalQueue => {
                OwnedRequest::Publish(PublishToLocalQueueRequest {
                    request_id: None,
                    process_id,
                    process_execution_id,
                    messages: batch.messages.clone(),
                })
            }
            BatchOperation::Reset => {
                let reset = batch.reset.clone();
                OwnedRequest::Reset(Box::new(ProcessExecutionResetRequest {
                    request_id: None,
                    process_id,
                    process_execution_id,
                    state_id: reset
                        .as_ref()
                        .map(|r| r.state_id.clone())
                        .unwrap_or_default(),
                    state_input: reset.as_ref().and_then(|r| r.state_input.clone()),
                    state_config: reset.and_then(|r| r.state_config),
                    reason: batch.reason.clone(),
                    identity: batch.identity.clone(),
                }))
            }
        })
    }

    fn as_client_request(&self) -> ClientRequest<'_> {
        match self {
            OwnedRequest::Stop(r) => ClientRequest::Stop(r),
            OwnedRequest::Publish(r) => ClientRequest::Publish(r),
            OwnedRequest::Control(control, r) => ClientRequest::Control(*control, r),
            OwnedRequest::Reset(r) => ClientRequest::Reset(r),
        }
    }
}

/// Spaces executions `1 / rate` seconds apart, catching up at most a second's worth
/// after a slow one.
struct Pacer {
    interval: Duration,
    next: Instant,
}

impl Pacer {
    fn new(rate_per_second: u32) -> Self {
        Self {
            interval: Duration::from_secs(1) / rate_per_second.max(1),
            next: Instant::now(),
        }
    }

    /// When the next execution may start.
    fn slot(&mut self) -> Instant {
        let now = Instant::now();
        let earliest = now.checked_sub(Duration::from_secs(1)).unwrap_or(now);
        self.next = self.next.max(earliest);
        let slot = self.next;
        self.next += self.interval;
        slot
    }

    #[cfg(test)]
    async fn wait(&mut self) {
        tokio::time::sleep_until(self.slot()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_pacer_keeps_the_rate_and_bursts_at_most_a_second() {
        let mut pacer = Pacer::new(10);
        let start = Instant::now();
        for _ in 0..10 {
            pacer.wait().await;
        }
        assert_eq!(start.elapsed(), Duration::from_millis(900));
        tokio::time::sleep(Duration::from_secs(5)).await;
        let resumed = Instant::now();
        for _ in 0..10 {
            pacer.wait().await;
        }
        pacer.wait().await;
        // A second's catch-up (eleven at once), not five.
        assert_eq!(resumed.elapsed(), Duration::ZERO);
        pacer.wait().await;
        assert_eq!(resumed.elapsed(), Duration::from_millis(100));
    }

    #[test]
    fn pages_hold_a_second_at_the_rate_and_a_third_of_the_lease_at_the_last_pace() {
        let lease = Duration::from_secs(30);
        let fast = Duration::from_millis(100);
        assert_eq!(next_page_size(10_000, lease, fast, 100), MAX_PAGE);
        assert_eq!(
            next_page_size(300, lease, fast, 100),
            300,
            "a second's worth"
        );
        // 100 executions took 20 s: 50 in the next ten seconds.
        assert_eq!(
            next_page_size(10_000, lease, Duration::from_secs(20), 100),
            50
        );
        assert_eq!(
            next_page_size(10_000, lease, Duration::from_secs(600), 1),
            1
        );
        assert_eq!(next_page_size(0, lease, fast, 0), 1);
    }

    #[test]
    fn operations_that_do_not_apply_are_skipped_and_others_failed() {
        let skipped = [
            StoreError::NotFound("gone".into()),
            StoreError::NotApplicable("not paused".into()),
            StoreError::Decide(DecideError::NotRunning),
        ];
        for error in skipped {
            assert_eq!(classify(&error), BatchItemOutcome::Skipped, "{error:?}");
        }
        let failed = StoreError::AppDatabase("constraint".into());
        assert_eq!(classify(&failed), BatchItemOutcome::Failed);
    }
}
