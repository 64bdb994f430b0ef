//! First executions of concurrent starts, written together: MySQL/MariaDB's faster form
//! of `crate::operations::start_process` for the usual start (no business row to write).
//!
//! A start alone costs eight statements, each a round trip, and MariaDB's cost is per
//! statement. Here starts gathered by [`crate::batches`] go out as one transaction of
//! multi-row statements, eight for up to [`MAX_BATCH`] starts: START TRANSACTION; the
//! claim of every process id (one `INSERT … ON DUPLICATE KEY UPDATE`, which takes each
//! row's exclusive lock as it goes, in the batch's key order, so two batches never
//! deadlock on them); a locking read of which claims are the batch's own (their rows name
//! the new execution); the executions, states, tasks and history events of those; COMMIT.
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
use xdb_engine::ProcessExecution;
use xdb_protocol::ProcessExecutionStartRequest;

use super::rows::{in_list, json_text, time_value, uuid_value};
use super::{within_wait, MySqlStore};
use crate::batches::{Batcher, Queued};
use crate::plan_writes::{is_plain_first_start, plan_writes, Write};
use crate::{trace_context, StoreError};

/// Batches in flight at once; starts wait while all are busy. Few, so that starts
/// gather under load instead of each finding a slot of its own.
const SLOTS: usize = 2;

/// Most starts in one batch.
const MAX_BATCH: usize = 32;

/// The tables a start inserts into, in the order it does (the order of the generic
/// start), as `INSERT … VALUES ` and the placeholders of one row.
const TABLES: [(&str, &str); 4] = [
    (
        "INSERT INTO xdb_sys_process_executions (id, process_id, process_type, worker_url, \
           status, start_time, timeout_seconds, running_state_executions, \
           state_execution_sequences, global_attribute_config) VALUES ",
        "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    ),
    (
        "INSERT INTO xdb_sys_async_state_executions (process_execution_id, state_id, \
           state_execution_number, status, input, config, created_at) VALUES ",
        "(?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(6))",
    ),
    (
        "INSERT INTO xdb_sys_tasks (task_type, fire_at, process_execution_id, state_id, \
           state_execution_number, timer_index, info) VALUES ",
        "(?, ?, ?, ?, ?, ?, ?)",
    ),
    (
        "INSERT INTO xdb_sys_history_events (process_execution_id, event_time, event_type, \
           details) VALUES ",
        "(?, ?, ?, ?)",
    ),
];

/// One start, as the values of the rows it writes.
pub(crate) struct Job {
    process_id: String,
    new_id: Uuid,
    /// Its rows of each of [`TABLES`], each row the values of its placeholders.
    rows: [Vec<Vec<Value>>; 4],
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
    let Some(job) = job(&start, now) else {
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
fn job(start: &StartPlan, now: DateTime<Utc>) -> Option<Job> {
    if !is_plain_first_start(start) {
        return None;
    }
    let id = start.execution.id;
    // Read here: the trace context is the caller's task-local, absent in the batch's task.
    let info = trace_context::task_info().as_ref().map(json_text);
    let mut rows: [Vec<Vec<Value>>; 4] = Default::default();
    rows[0].push(execution_row(&start.execution));
    for write in plan_writes(&start.plan, now, None) {
        match write {
            Write::NewState(state) => rows[1].push(vec![
                uuid_value(id),
                Value::from(state.id.state_id.as_str()),
                Value::from(state.id.number),
                Value::from(state.status.as_str()),
                Value::from(state.input.as_ref().map(json_text)),
                Value::from(json_text(&state.config)),
            ]),
            Write::NewTask { task, leased: None } => rows[2].push(vec![
                Value::from(task.task_type.as_str()),
                time_value(task.fire_at),
                uuid_value(id),
                Value::from(task.state.as_ref().map(|s| s.state_id.as_str())),
                Value::from(task.state.as_ref().map(|s| s.number)),
                Value::from(task.timer_index),
                Value::from(info.clone()),
            ]),
            Write::History(entries) => rows[3].extend(entries.iter().map(|entry| {
                vec![
                    uuid_value(id),
                    time_value(now),
                    Value::from(entry.event_type),
                    Value::from(entry.details.to_string()),
                ]
            })),
            // A write of existing rows: not a first start's, left to the generic path.
            _ => return None,
        }
    }
    Some(Job {
        process_id: start.execution.process_id.clone(),
        new_id: id,
        rows,
    })
}

fn execution_row(execution: &ProcessExecution) -> Vec<Value> {
    vec![
        uuid_value(execution.id),
        Value::from(execution.process_id.as_str()),
        Value::from(execution.process_type.as_str()),
        Value::from(execution.worker_url.as_str()),
        Value::from(execution.status.as_str()),
        time_value(execution.start_time),
        Value::from(execution.timeout_seconds),
        Value::from(execution.running_state_executions),
        Value::from(json_text(&execution.state_execution_sequences)),
        Value::from(execution.global_attribute_config.as_ref().map(json_text)),
    ]
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
        // Every start would wait as long again on the generic path.
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
    let last = batch.last().map(|queued| &queued.job);
    let mut claims = Vec::with_capacity(padded * 2);
    for job in batch
        .iter()
        .map(|queued| &queued.job)
        .chain(std::iter::repeat_n(last, padded - batch.len()).flatten())
    {
        claims.extend([Value::from(job.process_id.as_str()), uuid_value(job.new_id)]);
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
        .map(|queued| Value::from(queued.job.process_id.as_str()))
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
        .map(|queued| latest.contains(&queued.job.new_id.to_string()))
        .collect();
    for (table, (insert, row)) in TABLES.iter().enumerate() {
        let rows: Vec<&Vec<Value>> = batch
            .iter()
            .zip(&started)
            .filter(|(_, started)| **started)
            .flat_map(|(queued, _)| &queued.job.rows[table])
            .collect();
        if rows.is_empty() {
            continue;
        }
        let placeholders = vec![*row; rows.len()].join(", ");
        let params: Vec<Value> = rows.into_iter().flatten().cloned().collect();
        tx.exec_drop(format!("{insert}{placeholders}"), params)
            .await?;
    }
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
        job(&start.unwrap(), now)
    }

    #[tokio::test]
    async fn a_plain_start_is_one_row_per_table_and_its_tasks_carry_the_trace_context() {
        let config = ProcessStartConfig {
            timeout_seconds: Some(60),
            ..Default::default()
        };
        let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let job = trace_context::scope(Some(traceparent.into()), async { job_of(config) })
            .await
            .expect("a plain first start");
        let counts: Vec<usize> = job.rows.iter().map(Vec::len).collect();
        // The execution, state A, its first task and the timeout, PROCESS_STARTED.
        assert_eq!(counts, vec![1, 1, 2, 1]);
        for (rows, (_, placeholders)) in job.rows.iter().zip(TABLES) {
            let columns = placeholders.matches('?').count();
            assert!(
                rows.iter().all(|row| row.len() == columns),
                "{placeholders}"
            );
        }
        for task in &job.rows[2] {
            let Value::Bytes(info) = &task[6] else {
                panic!("no info: {task:?}");
            };
            assert!(String::from_utf8_lossy(info).contains(traceparent));
        }
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
