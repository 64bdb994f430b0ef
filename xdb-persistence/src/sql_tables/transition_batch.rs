//! Usual task transitions, decided from the rows their worker call was read with,
//! committed together: a faster form of `crate::operations`' task transitions, written
//! once over [`SqlConn`] (MySQL's; PostgreSQL has a one-statement form of its own).
//!
//! Alone, a transition is a transaction of about nine statements, a round trip each,
//! and MariaDB's cost is per statement. Transitions ready at the same time (gathered by
//! [`crate::batches`]) share one transaction instead: one statement locks every
//! execution row and state row of the batch, one takes every task, and [`PlanRows`]
//! sends one statement per kind of row for every plan, after the task deletes (a batch
//! of one sends them all in one round trip on MariaDB); one COMMIT ends it. A transition
//! whose rows moved since they were read (the execution's status, running states, state
//! sequences or graceful completion, or the state's version: what PostgreSQL's
//! one-statement form checks) drops out with nothing written, and its caller locks,
//! reads and decides again. Any other failure before COMMIT rolls the batch back and
//! sends every caller that way.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;
use xdb_engine::{GracefulCompletion, ProcessExecution, StateExecution, Task, TransitionPlan};
use xdb_protocol::ProcessStatus;

use super::first_start_batch::FirstStarts;
use super::in_list::{in_list, padded};
use super::plan_rows::{applied, PlanRows};
use super::task_rows::delete_tasks_by_ids;
use crate::batches::{Batcher, Queued};
use crate::columns::ColumnReader;
use crate::continuation::LeaseTo;
use crate::operations::continuation_call_without_reads;
use crate::plan_writes::is_plain_transition;
use crate::sql::{Param, SqlConn, SqlKind};
use crate::steps::{Expect, Step};
use crate::tables::{Dialect, Lane, Transaction};
use crate::trace_context::{self, TaskInfo};
use crate::{Applied, StateCall, StoreError};

/// Batches in flight at once per lane; transitions wait while all are busy. Few, so
/// that transitions gather under load instead of each finding a slot of its own.
const SLOTS: usize = 2;

/// Transactions the batches of one store hold open at most: the first starts' and
/// each lane's transitions'. A dialect that keeps the batches' connections apart
/// (see [`Dialect::begin_batch`]) needs this many, and never waits for one.
pub(crate) const BATCH_CONNECTIONS: usize = super::first_start_batch::SLOTS + 2 * SLOTS;

/// Most transitions in one batch.
const MAX_BATCH: usize = 32;

/// The generic faster forms' batches of one store: its transitions decided as read
/// and its first starts (see [`Dialect::batches`]); cloning shares them.
pub struct Batches<D> {
    pub(crate) transitions: TransitionBatches<D>,
    pub(crate) first_starts: FirstStarts<D>,
}

impl<D> Clone for Batches<D> {
    fn clone(&self) -> Self {
        Self {
            transitions: self.transitions.clone(),
            first_starts: self.first_starts.clone(),
        }
    }
}

impl<D: Dialect> Batches<D> {
    /// Starts batching both forms; a first start waits for a batch at most
    /// `start_wait`, when one is given (the API store's pool wait).
    pub(crate) fn start(start_wait: Option<Duration>) -> Self {
        Self {
            transitions: TransitionBatches::start(),
            first_starts: FirstStarts::start(start_wait),
        }
    }
}

/// One transition, what it was decided from, and the store it is written to.
pub(crate) struct Job<D> {
    store: D,
    task: Task,
    owner: String,
    process: ProcessExecution,
    state: StateExecution,
    plan: TransitionPlan,
    now: DateTime<Utc>,
    lease: Option<Duration>,
    info: Option<TaskInfo>,
}

type Batch<D> = Vec<Queued<Job<D>, Option<Applied>>>;

/// The transition batches of one store, a batcher per lane; cloning shares them.
pub(crate) struct TransitionBatches<D> {
    main: Batcher<Job<D>, Option<Applied>>,
    timekeeping: Batcher<Job<D>, Option<Applied>>,
}

impl<D> Clone for TransitionBatches<D> {
    fn clone(&self) -> Self {
        Self {
            main: self.main.clone(),
            timekeeping: self.timekeeping.clone(),
        }
    }
}

impl<D: Dialect> TransitionBatches<D> {
    /// Starts batching, each lane's transitions in transactions of its own lane.
    pub fn start() -> Self {
        let on = |lane: Lane| {
            Batcher::start(SLOTS, MAX_BATCH, None, move |batch: Batch<D>| {
                run_batch(lane, batch)
            })
        };
        Self {
            main: on(Lane::Main),
            timekeeping: on(Lane::Timekeeping),
        }
    }

    /// Applies `plan`, decided from `call` as it was read (not locked), in a transaction
    /// of `store` shared with other transitions ready at the same time. `None` when the
    /// plan writes more than rows of XDB's own tables, or when the rows moved since
    /// `call` was read (nothing was written): the caller then locks, reads and decides
    /// again.
    #[allow(clippy::too_many_arguments)]
    pub async fn transition_as_read(
        &self,
        store: &D,
        lane: Lane,
        task: &Task,
        owner: &str,
        call: &StateCall,
        plan: &TransitionPlan,
        now: DateTime<Utc>,
    ) -> Result<Option<Applied>, StoreError> {
        let (process, state) = (&call.process, &call.state);
        if !is_plain_transition(process, state, plan, now) {
            return Ok(None);
        }
        let job = Job {
            store: store.clone(),
            task: task.clone(),
            owner: owner.to_string(),
            process: process.clone(),
            state: state.clone(),
            plan: plan.clone(),
            now,
            lease: store.lease_to(owner).map(|to| to.lease),
            info: trace_context::task_info(),
        };
        let batcher = match lane {
            Lane::Main | Lane::Query => &self.main,
            Lane::Timekeeping => &self.timekeeping,
        };
        let Some(mut applied) = batcher.run(process.id.to_string(), job).await? else {
            return Ok(None);
        };
        continuation_call_without_reads(process, plan, Some(state), &mut applied, now);
        Ok(Some(applied))
    }
}

/// Runs `batch` (sorted by execution id) as one transaction on `lane` and answers each
/// job.
async fn run_batch<D: Dialect>(lane: Lane, batch: Batch<D>) {
    let jobs: Vec<&Job<D>> = batch.iter().map(|queued| &queued.job).collect();
    let written = async {
        let mut tx = jobs[0].store.begin_batch(lane).await?;
        let applied = together(&mut tx, &jobs).await?;
        Ok::<_, StoreError>((tx, applied))
    }
    .await;
    let answers = match written {
        // Rolled back as the transaction dropped: each caller decides again on its own.
        Err(_) => batch.iter().map(|_| Ok(None)).collect(),
        Ok((tx, applied)) => match tx.commit().await {
            Ok(()) => applied.into_iter().map(Ok).collect(),
            Err(error) => {
                // Whether COMMIT got through is unknown, as for a lone transaction.
                batch
                    .iter()
                    .map(|_| Err(error.for_another_caller()))
                    .collect::<Vec<_>>()
            }
        },
    };
    for (queued, answer) in batch.into_iter().zip(answers) {
        queued.answer(answer);
    }
}

/// Writes every job of `jobs` whose rows are as it read them; each job's outcome, in
/// order (`None`: dropped out, nothing of it written).
async fn together<C: SqlConn, D>(
    tx: &mut C,
    jobs: &[&Job<D>],
) -> Result<Vec<Option<Applied>>, StoreError> {
    let locked = lock_rows(tx, jobs).await?;
    let kept: Vec<bool> = jobs
        .iter()
        .map(|job| {
            locked.get(&job.process.id) == Some(&DecidedFrom::read(&job.process, &job.state))
        })
        .collect();
    let kept_jobs = || jobs.iter().zip(&kept).filter(|(_, k)| **k).map(|(j, _)| *j);
    let mut rows = PlanRows::default();
    // Taken before any plan's writes: a plan may delete its state's timers, the task
    // taken among them.
    for take in take_tasks(C::KIND, kept_jobs()) {
        rows.first(take);
    }
    for job in kept_jobs() {
        let lease_to = job.lease.map(|lease| LeaseTo {
            owner: &job.owner,
            lease,
        });
        let info = job.info.clone();
        rows.write(&job.process, &job.plan, job.now, lease_to, info);
    }
    let mut continuations = rows.send(tx, []).await?;
    Ok(jobs
        .iter()
        .zip(kept)
        .map(|(job, kept)| {
            let continuation = continuations.remove(&job.process.id);
            kept.then(|| applied(&job.process, &job.plan, continuation))
        })
        .collect())
}

/// What a decision made from the rows as read depends on: the execution's status,
/// running states, state sequences and graceful completion, and the state's version.
#[derive(Debug, PartialEq)]
struct DecidedFrom {
    status: ProcessStatus,
    running_state_executions: i32,
    state_execution_sequences: BTreeMap<String, i32>,
    graceful_completion: Option<GracefulCompletion>,
    state_version: i32,
}

impl DecidedFrom {
    /// What `process` and `state` as read tell.
    fn read(process: &ProcessExecution, state: &StateExecution) -> Self {
        DecidedFrom {
            status: process.status,
            running_state_executions: process.running_state_executions,
            state_execution_sequences: process.state_execution_sequences.clone(),
            graceful_completion: process.graceful_completion.clone(),
            state_version: state.version,
        }
    }

    /// The columns [`DecidedFrom::locked`] reads, of execution `p` and state `s`.
    const COLUMNS: &str = "p.id, p.status, p.running_state_executions, \
        p.state_execution_sequences, p.graceful_completion, s.version";

    /// The execution id and what a row of [`DecidedFrom::COLUMNS`] tells.
    fn locked(row: &mut impl ColumnReader) -> Result<(Uuid, Self), StoreError> {
        let id = row.uuid()?;
        let status = row.text()?;
        let status = ProcessStatus::parse(&status)
            .ok_or_else(|| StoreError::Database(format!("unknown process status {status}")))?;
        Ok((
            id,
            DecidedFrom {
                status,
                running_state_executions: row.int()?,
                state_execution_sequences: row.json()?.unwrap_or_default(),
                graceful_completion: row.json()?,
                state_version: row.int()?,
            },
        ))
    }
}

/// Locks the execution and state rows of `jobs`, by execution id, and reads of them only
/// what their decisions depend on (not the payloads). The execution rows drive the join
/// (MySQL is told so), so each is locked before its state, as in every transaction; the
/// list is padded to a power of two by repeating the last job, so that few distinct
/// statements reach each connection's prepared-statement cache.
async fn lock_rows<C: SqlConn, D>(
    tx: &mut C,
    jobs: &[&Job<D>],
) -> Result<HashMap<Uuid, DecidedFrom>, StoreError> {
    let mut params: Vec<Param> = jobs.iter().map(|job| job.process.id.into()).collect();
    let ids = in_list(&mut params, jobs.len());
    let listed = params.len();
    for job in padded(jobs) {
        params.extend([
            job.process.id.into(),
            job.state.id.state_id.as_str().into(),
            job.state.id.number.into(),
        ]);
    }
    let sql = format!(
        "SELECT {straight} {columns} \
         FROM xdb_sys_process_executions p \
         JOIN xdb_sys_async_state_executions s ON s.process_execution_id = p.id \
         WHERE p.id IN ({ids}) \
           AND (s.process_execution_id, s.state_id, s.state_execution_number) IN ({states}) \
         ORDER BY p.id FOR UPDATE",
        straight = C::KIND.pick("", "STRAIGHT_JOIN"),
        columns = DecidedFrom::COLUMNS,
        states = vec!["(?, ?, ?)"; listed].join(", "),
    );
    let rows = tx.query(&sql, &params).await?;
    rows.iter()
        .map(|row| DecidedFrom::locked(&mut C::columns(row, 0)))
        .collect()
}

/// The deletes of the tasks of `jobs`, one per owner, each only while leased to its
/// owner; a task that is not fails the batch as [`StoreError::Stale`].
fn take_tasks<'j, D: 'j>(kind: SqlKind, jobs: impl Iterator<Item = &'j Job<D>>) -> Vec<Step<'j>> {
    let mut by_owner: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for job in jobs {
        by_owner.entry(&job.owner).or_default().push(job.task.id);
    }
    by_owner
        .into_iter()
        .map(|(owner, ids)| {
            let mut params = vec![Param::from(owner)];
            params.extend(ids.iter().map(|id| Param::from(*id)));
            let list = in_list(&mut params, ids.len());
            let delete = delete_tasks_by_ids(kind);
            let sql = format!("{delete} WHERE lease_owner = ? AND id IN ({list})");
            let moved = "a task of the batch is no longer leased to its owner";
            Step::expecting(sql, params, Expect::Rows(ids.len() as u64, moved))
        })
        .collect()
}

#[cfg(test)]
#[path = "transition_batch_tests.rs"]
mod tests;
