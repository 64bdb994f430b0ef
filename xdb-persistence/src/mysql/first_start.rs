//! First executions of concurrent starts, written together: MySQL/MariaDB's faster form
//! of `crate::operations::start_process` for the usual start (no business row to write).
//!
//! A start alone costs eight statements, each a round trip, and MariaDB's cost is per
//! statement. Here starts gathered by [`crate::batches`] go out as one transaction of
//! multi-row statements, eight for up to [`MAX_BATCH`] starts: START TRANSACTION; the
//! claim of every process id (one `INSERT … ON DUPLICATE KEY UPDATE`, which takes each
//! row's exclusive lock as it goes, in the batch's key order, so two batches never
//! deadlock on them); a locking read of which claims are the batch's own (their rows name
//! the new execution); the executions of those, then their states, tasks and history
//! events as [`PlanRows`] inserts every plan's; COMMIT.
//! A start that finds a free slot and nobody waiting goes at once, alone.
//!
//! This module must never write anything of a start whose process id had an execution:
//! its caller runs the generic start, which applies the id-reuse policy. A statement that
//! fails rolls the batch back, and every start of it goes the generic way (nothing was
//! committed); only a connection lost during COMMIT, whose outcome is unknown, is an
//! error for all. Async-service instances are woken as after any start: MySQL has no push
//! notifications, and the API service tells its peers after each start it answers.

use std::time::Duration;

use chrono::{DateTime, Utc};
use mysql_async::prelude::Queryable;
use mysql_async::{Pool, Transaction, TxOpts, Value};
use uuid::Uuid;
use xdb_engine::decide::{self, StartPlan};
use xdb_protocol::ProcessExecutionStartRequest;

use super::apply_plan::PlanRows;
use super::rows::{execution_values, in_list, uuid_value};
use super::{within_wait, MySqlStore};
use crate::batches::{Batcher, Queued};
use crate::plan_writes::{is_plain_first_start, plan_writes, Write};
use crate::trace_context::{self, TaskInfo};
use crate::StoreError;

/// Batches in flight at once; starts wait while all are busy. Few, so that starts
/// gather under load instead of each finding a slot of its own.
const SLOTS: usize = 2;

/// Most starts in one batch.
const MAX_BATCH: usize = 32;

/// The insert of executions, and the placeholders of one row.
const INSERT_EXECUTIONS: &str = "INSERT INTO xdb_sys_process_executions (id, process_id, \
    process_type, worker_url, status, start_time, timeout_seconds, running_state_executions, \
    state_execution_sequences, global_attribute_config) VALUES ";
const EXECUTION_ROW: &str = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

/// One start, decided as a first execution.
pub(crate) struct Job {
    start: StartPlan,
    now: DateTime<Utc>,
    /// The caller's trace context: a task-local, absent in the batch's task.
    info: Option<TaskInfo>,
}

/// The batcher of one store's first starts; cloning shares it.
#[derive(Clone)]
pub(crate) struct FirstStarts {
    batcher: Batcher<Job, bool>,
}

impl FirstStarts {
    /// Starts batching first starts onto connections of `pool`, each awaited at most
    /// `pool_wait` (see [`MySqlStore::within_pool_wait`]).
    pub fn start(pool: Pool, pool_wait: Option<Duration>) -> Self {
        let batcher = Batcher::start(SLOTS, MAX_BATCH, move |batch| {
            let pool = pool.clone();
            async move { run_batch(&pool, pool_wait, batch).await }
        });
        Self { batcher }
    }
}

/// Starts `request` as the first execution of its process id, alone or with other
/// starts. `None` when the process id has had an execution, when the start writes more
/// than rows of its own, or when its batch failed before COMMIT: nothing of it was
/// written, and the caller runs the generic start.
pub(crate) async fn start_first_execution(
    store: &MySqlStore,
    request: &ProcessExecutionStartRequest,
    new_id: Uuid,
    now: DateTime<Utc>,
) -> Result<Option<Uuid>, StoreError> {
    let start = decide::start_process(request, None, new_id, now)?;
    let Some(job) = job(start, now) else {
        return Ok(None);
    };
    let started = store
        .first_starts
        .batcher
        .run(request.process_id.clone(), job)
        .await?;
    Ok(started.then_some(new_id))
}

/// `start` as a [`Job`], if it writes only new rows of its own.
fn job(start: StartPlan, now: DateTime<Utc>) -> Option<Job> {
    let only_inserts = plan_writes(&start.plan, now, None).iter().all(|write| {
        matches!(
            write,
            Write::NewState(_) | Write::NewTask { leased: None, .. } | Write::History(_)
        )
    });
    (is_plain_first_start(&start) && only_inserts).then(|| Job {
        start,
        now,
        info: trace_context::task_info(),
    })
}

/// How a batch ended when it did not commit.
enum Failed {
    /// Rolled back, or never begun: nothing was written.
    NothingWritten,
    /// An error for every start of the batch: COMMIT's outcome is unknown, or no
    /// connection came within the pool wait.
    Error(StoreError),
}

async fn run_batch(pool: &Pool, pool_wait: Option<Duration>, batch: Vec<Queued<Job, bool>>) {
    let answers = match within_wait(pool_wait, pool.get_conn()).await {
        Ok(mut conn) => write_batch(&mut conn, &batch).await,
        // Refused at once: on the generic path each start would wait as long again.
        Err(error) => Err(Failed::Error(error)),
    };
    match answers {
        Ok(started) => {
            for (job, started) in batch.into_iter().zip(started) {
                job.answer(Ok(started));
            }
        }
        Err(Failed::NothingWritten) => {
            for job in batch {
                job.answer(Ok(false));
            }
        }
        Err(Failed::Error(error)) => {
            for job in batch {
                job.answer(Err(error.for_another_caller()));
            }
        }
    }
}

/// Writes the starts of `batch` whose process ids they claim; which did, in order.
async fn write_batch(
    conn: &mut mysql_async::Conn,
    batch: &[Queued<Job, bool>],
) -> Result<Vec<bool>, Failed> {
    let mut tx = conn
        .start_transaction(TxOpts::default())
        .await
        .map_err(|_| Failed::NothingWritten)?;
    let started = match write_claimed(&mut tx, batch).await {
        Ok(started) if started.contains(&true) => started,
        other => {
            // Nothing of the batch's own to keep (or a statement failed): the claims
            // found taken wrote nothing either.
            let _ = tx.rollback().await;
            return other.map_err(|error| {
                tracing::debug!(%error, "batched first starts go the generic way");
                Failed::NothingWritten
            });
        }
    };
    tx.commit()
        .await
        .map_err(|error| Failed::Error(error.into()))?;
    Ok(started)
}

/// Claims every process id of `batch`, then inserts the rows of the starts whose claim
/// is their own; which were.
async fn write_claimed(
    tx: &mut Transaction<'_>,
    batch: &[Queued<Job, bool>],
) -> Result<Vec<bool>, StoreError> {
    // Padded to a power of two (the last row again, a no-op) and read back by an `IN`
    // list padded alike: few statement shapes reach each connection's cache.
    let padded = batch.len().next_power_of_two();
    let last = batch.last().map(|queued| &queued.job.start.execution);
    let mut claims = Vec::with_capacity(padded * 2);
    for execution in batch
        .iter()
        .map(|queued| &queued.job.start.execution)
        .chain(std::iter::repeat_n(last, padded - batch.len()).flatten())
    {
        claims.extend([
            Value::from(execution.process_id.as_str()),
            uuid_value(execution.id),
        ]);
    }
    tx.exec_drop(
        format!(
            "INSERT INTO xdb_sys_latest_process_executions (process_id, process_execution_id) \
             VALUES {} ON DUPLICATE KEY UPDATE process_execution_id = process_execution_id",
            vec!["(?, ?)"; padded].join(", ")
        ),
        claims,
    )
    .await?;
    let mut ids: Vec<Value> = batch
        .iter()
        .map(|queued| Value::from(queued.job.start.execution.process_id.as_str()))
        .collect();
    let list = in_list(&mut ids, batch.len());
    let latest: Vec<String> = tx
        .exec(
            format!(
                "SELECT process_execution_id FROM xdb_sys_latest_process_executions \
                 WHERE process_id IN ({list}) FOR UPDATE"
            ),
            ids,
        )
        .await?;
    // By execution id, not process id: a claim is the batch's own when its row names it.
    let started: Vec<bool> = batch
        .iter()
        .map(|queued| latest.contains(&queued.job.start.execution.id.to_string()))
        .collect();
    let claimed: Vec<&Job> = batch
        .iter()
        .zip(&started)
        .filter(|(_, started)| **started)
        .map(|(queued, _)| &queued.job)
        .collect();
    if claimed.is_empty() {
        return Ok(started);
    }
    let mut executions = Vec::with_capacity(claimed.len() * 10);
    for job in &claimed {
        executions.extend(execution_values(&job.start.execution));
    }
    let placeholders = vec![EXECUTION_ROW; claimed.len()].join(", ");
    tx.exec_drop(format!("{INSERT_EXECUTIONS}{placeholders}"), executions)
        .await?;
    let mut rows = PlanRows::default();
    for job in &claimed {
        let id = job.start.execution.id;
        // Only inserts (see `job`): nothing is sent until `insert`.
        rows.write(tx, id, &job.start.plan, job.now, None, job.info.clone())
            .await?;
    }
    // No task is leased: the ids of the rows are not needed.
    rows.insert(tx, false).await?;
    Ok(started)
}

#[cfg(test)]
mod tests {
    use xdb_protocol::{GlobalAttributeConfig, GlobalAttributeValue, ProcessStartConfig};

    use super::*;

    fn request(config: ProcessStartConfig) -> ProcessExecutionStartRequest {
        ProcessExecutionStartRequest {
            process_id: "p".into(),
            process_type: "T".into(),
            worker_url: "http://127.0.0.1:9".into(),
            start_state_id: Some("A".into()),
            start_state_input: None,
            start_state_config: None,
            process_start_config: Some(config),
        }
    }

    fn job_of(config: ProcessStartConfig) -> Option<Job> {
        let now = Utc::now();
        let start = decide::start_process(&request(config), None, Uuid::from_u128(1), now);
        job(start.unwrap(), now)
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
        assert_eq!(
            execution_values(&job.start.execution).len(),
            EXECUTION_ROW.matches('?').count()
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
