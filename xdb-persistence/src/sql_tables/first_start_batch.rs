//! First executions of concurrent starts, written together: a faster form of
//! `crate::operations::start_process` for the usual start (no business row to write),
//! written once over [`SqlConn`] (MySQL's; PostgreSQL has a one-statement form).
//!
//! A start alone costs eight statements, each a round trip, and MariaDB's cost is per
//! statement. Here starts gathered by [`crate::batches`] go out as one transaction of
//! multi-row statements, eight for up to [`MAX_BATCH`] starts: BEGIN; the claim of every
//! process id (one insert that leaves taken ids alone, in the batch's key order, so two
//! batches never deadlock on them); a locking read of which claims are the batch's own
//! (their rows name the new execution); the executions of those, then their states,
//! tasks and history events as [`PlanRows`] inserts every plan's; the receipts of the
//! starts that carry a request id; COMMIT. A start that
//! finds a free slot and nobody waiting goes at once, alone.
//!
//! This module must never write anything of a start whose process id had an execution:
//! its caller runs the generic start, which applies the id-reuse policy. A statement that
//! fails rolls the batch back, and every start of it goes the generic way (nothing was
//! committed); only a connection lost during COMMIT, whose outcome is unknown, or no
//! connection within the pool wait, is an error for all.

use chrono::{DateTime, Utc};
use uuid::Uuid;
use xdb_engine::decide::{self, StartPlan};
use xdb_protocol::{BatchItemOutcome, ProcessExecutionStartRequest};

use super::in_list::{in_list, padded};
use super::plan_rows::PlanRows;
use super::process_rows::insert_executions_step;
use super::receipt_rows::{insert_receipts_sql, receipt_params};
use crate::batches::{Batcher, Queued};
use crate::columns::ColumnReader;
use crate::plan_writes::{is_plain_first_start, plan_writes, Write};
use crate::receipts::{started_answer, Receipt};
use crate::sql::{Param, SqlConn, SqlKind};
use crate::steps::{Expect, Step};
use crate::tables::{Dialect, Lane, Transaction};
use crate::trace_context::{self, TaskInfo};
use crate::StoreError;

/// Batches in flight at once; starts wait while all are busy. Few, so that starts
/// gather under load instead of each finding a slot of its own.
pub(crate) const SLOTS: usize = 2;

/// Most starts in one batch.
const MAX_BATCH: usize = 32;

/// One start, decided as a first execution, and the store it is written to.
pub(crate) struct Job<D> {
    store: D,
    start: StartPlan,
    now: DateTime<Utc>,
    /// The caller's trace context: a task-local, absent in the batch's task.
    info: Option<TaskInfo>,
    /// Recorded with the start, when the request carries an id.
    receipt: Option<Receipt>,
}

/// The batcher of one store's first starts; cloning shares it.
pub(crate) struct FirstStarts<D> {
    batcher: Batcher<Job<D>, bool>,
}

impl<D> Clone for FirstStarts<D> {
    fn clone(&self) -> Self {
        Self {
            batcher: self.batcher.clone(),
        }
    }
}

impl<D: Dialect> FirstStarts<D> {
    /// Starts batching first starts onto the main lane; each waits for a batch at most
    /// `queue_wait`, when one is given (see [`crate::batches`]).
    pub fn start(queue_wait: Option<std::time::Duration>) -> Self {
        Self {
            batcher: Batcher::start(SLOTS, MAX_BATCH, queue_wait, run_batch),
        }
    }

    /// Starts `request` as the first execution of its process id in `store`, alone or
    /// with other starts. `None` when the process id has had an execution, when the start
    /// writes more than rows of its own, or when its batch failed before COMMIT: nothing
    /// of it was written, and the caller runs the generic start.
    pub async fn start_first_execution(
        &self,
        store: &D,
        request: &ProcessExecutionStartRequest,
        new_id: Uuid,
        now: DateTime<Utc>,
        receipt: Option<&Receipt>,
    ) -> Result<Option<Uuid>, StoreError> {
        let start = decide::start_process(request, None, new_id, now)?;
        let Some(job) = job(store, start, now, receipt) else {
            return Ok(None);
        };
        let key = request.process_id.clone();
        let started = self.batcher.run(key, job).await?;
        Ok(started.then_some(new_id))
    }
}

/// `start` as a [`Job`], if it writes only new rows of its own.
fn job<D: Clone>(
    store: &D,
    start: StartPlan,
    now: DateTime<Utc>,
    receipt: Option<&Receipt>,
) -> Option<Job<D>> {
    let only_inserts = plan_writes(&start.plan, now, None).iter().all(|write| {
        matches!(
            write,
            Write::NewState(_) | Write::NewTask { leased: None, .. } | Write::History(_)
        )
    });
    (is_plain_first_start(&start) && only_inserts).then(|| Job {
        store: store.clone(),
        start,
        now,
        info: trace_context::task_info(),
        receipt: receipt.cloned(),
    })
}

async fn run_batch<D: Dialect>(batch: Vec<Queued<Job<D>, bool>>) {
    let answers = write_batch(&batch).await;
    for (queued, answer) in batch.into_iter().zip(answers) {
        queued.answer(answer);
    }
}

/// Writes the starts of `batch` whose process ids they claim; which did, in order.
async fn write_batch<D: Dialect>(batch: &[Queued<Job<D>, bool>]) -> Vec<Result<bool, StoreError>> {
    let for_all =
        |answer: &dyn Fn() -> Result<bool, StoreError>| batch.iter().map(|_| answer()).collect();
    let mut tx = match batch[0].job.store.begin_batch(Lane::Main).await {
        Ok(tx) => tx,
        // Refused at once: on the generic path each start would wait as long again.
        Err(error @ StoreError::Overloaded(_)) => {
            return for_all(&|| Err(error.for_another_caller()))
        }
        Err(_) => return for_all(&|| Ok(false)),
    };
    match write_claimed(&mut tx, batch).await {
        Ok(started) if started.contains(&true) => match tx.commit().await {
            Ok(()) => started.into_iter().map(Ok).collect(),
            Err(error) => for_all(&|| Err(error.for_another_caller())),
        },
        // Nothing of the batch's own to keep (or a statement failed, and the transaction
        // rolls back as it drops): the claims found taken wrote nothing either.
        other => {
            if let Err(error) = other {
                tracing::debug!(%error, "batched first starts go the generic way");
            }
            for_all(&|| Ok(false))
        }
    }
}

/// Claims every process id of `batch`, then inserts the rows of the starts whose claim
/// is their own; which were.
async fn write_claimed<C: SqlConn, D>(
    tx: &mut C,
    batch: &[Queued<Job<D>, bool>],
) -> Result<Vec<bool>, StoreError> {
    let executions: Vec<_> = batch
        .iter()
        .map(|queued| &queued.job.start.execution)
        .collect();
    // Padded to a power of two (the last row again, a no-op) and read back by an `IN`
    // list padded alike: few statement shapes reach each connection's cache.
    let mut claims: Vec<Param> = Vec::new();
    for execution in padded(&executions) {
        claims.extend([execution.process_id.as_str().into(), execution.id.into()]);
    }
    let sql = format!(
        "INSERT INTO xdb_sys_latest_process_executions (process_id, process_execution_id) \
         VALUES {} {}",
        vec!["(?, ?)"; claims.len() / 2].join(", "),
        C::KIND.pick(
            "ON CONFLICT (process_id) DO NOTHING",
            "ON DUPLICATE KEY UPDATE process_execution_id = process_execution_id"
        ),
    );
    tx.execute(&sql, &claims).await?;
    let mut ids: Vec<Param> = executions
        .iter()
        .map(|execution| execution.process_id.as_str().into())
        .collect();
    let list = in_list(&mut ids, executions.len());
    let sql = format!(
        "SELECT process_execution_id FROM xdb_sys_latest_process_executions \
         WHERE process_id IN ({list}) FOR UPDATE"
    );
    let mut latest = Vec::new();
    for row in tx.query(&sql, &ids).await? {
        latest.push(C::columns(&row, 0).uuid()?);
    }
    // By execution id, not process id: a claim is the batch's own when its row names it.
    let started: Vec<bool> = executions.iter().map(|e| latest.contains(&e.id)).collect();
    let claimed: Vec<&Job<D>> = batch
        .iter()
        .zip(&started)
        .filter(|(_, started)| **started)
        .map(|(queued, _)| &queued.job)
        .collect();
    if claimed.is_empty() {
        return Ok(started);
    }
    let new: Vec<_> = claimed.iter().map(|job| &job.start.execution).collect();
    let receipts = receipts_of(&claimed);
    let mut rows = PlanRows::default();
    rows.first(insert_executions_step(&new));
    for job in &claimed {
        rows.write(
            &job.start.execution,
            &job.start.plan,
            job.now,
            None,
            job.info.clone(),
        );
    }
    rows.send(tx, insert_receipts(C::KIND, &receipts)).await?;
    Ok(started)
}

/// The receipts of the `claimed` starts that carry one, with their answers and times.
fn receipts_of<'j, D>(claimed: &[&'j Job<D>]) -> Vec<(&'j Receipt, String, DateTime<Utc>)> {
    claimed
        .iter()
        .filter_map(|job| {
            let receipt = job.receipt.as_ref()?;
            Some((receipt, started_answer(job.start.execution.id), job.now))
        })
        .collect()
}

/// The insert of `receipts`, if any. A receipt of the same request id already (a
/// repeat) fails the batch: nothing is committed, and each start goes the generic way,
/// where the repeat meets the receipt at its commit.
fn insert_receipts<'r>(
    kind: SqlKind,
    receipts: &'r [(&'r Receipt, String, DateTime<Utc>)],
) -> Option<Step<'r>> {
    if receipts.is_empty() {
        return None;
    }
    let params: Vec<Param> = receipts
        .iter()
        .flat_map(|(receipt, answer, now)| {
            receipt_params(receipt, BatchItemOutcome::Done, answer, *now)
        })
        .collect();
    let sql = insert_receipts_sql(kind, receipts.len());
    let repeated = "a request id of the batch has a receipt already";
    let rows = Expect::Rows(receipts.len() as u64, repeated);
    Some(Step::expecting(sql, params, rows))
}

#[cfg(test)]
mod tests {
    use xdb_protocol::{GlobalAttributeConfig, GlobalAttributeValue, ProcessStartConfig};

    use super::*;
    use crate::ProcessApi;

    on_both_databases!(store => store; new_ids_start_and_a_taken_one_writes_nothing);

    /// Starts of new ids and of an id that has an execution, together through the
    /// batches: the new ones start, the taken one is left to the generic start with
    /// nothing written, on both databases (the batched form is MySQL's, and written once).
    async fn new_ids_start_and_a_taken_one_writes_nothing<D>(store: D)
    where
        D: Dialect<Session: SqlConn> + ProcessApi,
    {
        let taken = request(ProcessStartConfig::default());
        store.start_process(&taken).await.unwrap();
        let starts = FirstStarts::<D>::start(None);
        let now = Utc::now();
        let requests: Vec<_> = ["p", "q", "r", "s"]
            .into_iter()
            .map(|id| ProcessExecutionStartRequest {
                process_id: id.into(),
                ..request(ProcessStartConfig::default())
            })
            .collect();
        let started = futures::future::join_all(requests.iter().enumerate().map(|(n, r)| {
            starts.start_first_execution(&store, r, Uuid::from_u128(n as u128 + 10), now, None)
        }))
        .await;
        let started: Vec<_> = started.into_iter().map(Result::unwrap).collect();
        assert_eq!(started[0], None, "the taken id goes the generic way");
        for (n, started) in started.iter().enumerate().skip(1) {
            assert_eq!(*started, Some(Uuid::from_u128(n as u128 + 10)));
        }
        let mut session = store.session(Lane::Main).await.unwrap();
        let sql = "SELECT process_id FROM xdb_sys_process_executions \
                   UNION ALL SELECT process_id FROM xdb_sys_latest_process_executions";
        let mut ids = Vec::new();
        for row in session.query(sql, &[]).await.unwrap() {
            ids.push(<D::Session as SqlConn>::columns(&row, 0).text().unwrap());
        }
        ids.sort();
        let expected = ["p", "p", "q", "q", "r", "r", "s", "s"];
        assert_eq!(ids, expected, "one execution and one latest row per id");
        let tasks = "SELECT COUNT(*) FROM xdb_sys_tasks";
        let rows = session.query(tasks, &[]).await.unwrap();
        let count = <D::Session as SqlConn>::columns(&rows[0], 0)
            .bigint()
            .unwrap();
        assert_eq!(count, 4, "each start's first task");
    }

    fn request(config: ProcessStartConfig) -> ProcessExecutionStartRequest {
        ProcessExecutionStartRequest {
            request_id: None,
            process_id: "p".into(),
            process_type: "T".into(),
            worker_url: "http://127.0.0.1:9".into(),
            start_state_id: Some("A".into()),
            start_state_input: None,
            start_state_config: None,
            process_start_config: Some(config),
        }
    }

    fn job_of(config: ProcessStartConfig) -> Option<Job<()>> {
        let now = Utc::now();
        let start = decide::start_process(&request(config), None, Uuid::from_u128(1), now);
        job(&(), start.unwrap(), now, None)
    }

    #[tokio::test]
    async fn a_plain_start_is_a_job_that_keeps_the_callers_trace_context() {
        let config = ProcessStartConfig {
            timeout_seconds: Some(60),
            ..Default::default()
        };
        let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let job = trace_context::scope(Some(traceparent.into()), async { job_of(config) })
            .await
            .expect("a plain first start");
        assert_eq!(
            job.info.and_then(|info| info.traceparent).as_deref(),
            Some(traceparent)
        );
    }

    #[test]
    fn starts_that_write_attributes_are_left_to_the_generic_path() {
        let global = ProcessStartConfig {
            global_attribute_config: Some(GlobalAttributeConfig {
                table_name: "users".into(),
                primary_key: GlobalAttributeValue {
                    column: "id".into(),
                    value: "u1".into(),
                },
                initial_write: vec![],
            }),
            ..Default::default()
        };
        assert!(job_of(global).is_none());
        let local = ProcessStartConfig {
            local_attribute_initial_write: vec![xdb_protocol::LocalAttributeValue {
                key: "k".into(),
                value: xdb_protocol::EncodedObject {
                    encoding: "json".into(),
                    data: "1".into(),
                },
            }],
            ..Default::default()
        };
        assert!(job_of(local).is_none());
        assert!(job_of(ProcessStartConfig::default()).is_some());
    }
}
