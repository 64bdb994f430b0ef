//! Usual task transitions, decided from the rows their worker call was read with,
//! committed together: MySQL's faster form of `crate::operations`' task transitions.
//!
//! Alone, a transition is a transaction of about nine statements, a round trip each,
//! and MariaDB's cost is per statement. Transitions ready at the same time (gathered by
//! [`crate::batches`]) share one transaction instead: one statement locks every
//! execution row and state row of the batch, one takes every task, each transition
//! updates its own rows, one statement per table inserts all new states, tasks and
//! history events, and one COMMIT ends it. A transition whose rows moved since they
//! were read (the execution's status, running states, state sequences or graceful
//! completion, or the state's version: what PostgreSQL's one-statement form checks)
//! drops out with nothing written, and its caller locks, reads and decides again. Any
//! other failure before COMMIT rolls the batch back and sends every caller that way.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use mysql_async::prelude::Queryable;
use mysql_async::{Pool, Row, Transaction, TxOpts, Value};
use xdb_engine::{ProcessExecution, StateExecution, Task, TransitionPlan};

use super::apply_plan::{applied, PlanRows};
use super::rows::{in_list, lock_processes_and_states, process_and_state_from_row, uuid_value};
use super::MySqlStore;
use crate::batches::{Batcher, Queued};
use crate::continuation::LeaseTo;
use crate::operations::continuation_call_without_reads;
use crate::plan_writes::is_plain_transition;
use crate::tables::Lane;
use crate::trace_context::{self, TaskInfo};
use crate::{Applied, StateCall, StoreError};

/// Batches in flight at once per lane; transitions wait while all are busy. Few, so
/// that transitions gather under load instead of each finding a slot of its own.
const SLOTS: usize = 2;

/// Most transitions in one batch.
const MAX_BATCH: usize = 32;

/// One transition, and what it was decided from.
pub(crate) struct Job {
    task: Task,
    owner: String,
    process: ProcessExecution,
    state: StateExecution,
    plan: TransitionPlan,
    now: DateTime<Utc>,
    lease: Option<Duration>,
    info: Option<TaskInfo>,
}

type Batch = Vec<Queued<Job, Option<Applied>>>;

/// The transition batches of one store, a batcher per lane; cloning shares them.
#[derive(Clone)]
pub(crate) struct TransitionBatches {
    main: Batcher<Job, Option<Applied>>,
    timekeeping: Batcher<Job, Option<Applied>>,
}

impl TransitionBatches {
    /// Starts batching onto `main` and `timekeeping` (each lane's transitions on its own
    /// pool); `consecutive_ids`: see [`MySqlStore::consecutive_insert_ids`].
    pub fn start(main: &Pool, timekeeping: &Pool, consecutive_ids: bool) -> Self {
        let on = |pool: &Pool| {
            let pool = pool.clone();
            Batcher::start(SLOTS, MAX_BATCH, move |batch: Batch| {
                let pool = pool.clone();
                async move { run_batch(&pool, batch, consecutive_ids).await }
            })
        };
        Self {
            main: on(main),
            timekeeping: on(timekeeping),
        }
    }
}

/// Applies `plan`, decided from `call` as it was read (not locked), in a transaction
/// shared with other transitions ready at the same time. `None` when the plan writes
/// more than rows of XDB's own tables, or when the rows moved since `call` was read
/// (nothing was written): the caller then locks, reads and decides again.
pub(crate) async fn transition_as_read(
    store: &MySqlStore,
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
        task: task.clone(),
        owner: owner.to_string(),
        process: process.clone(),
        state: state.clone(),
        plan: plan.clone(),
        now,
        lease: store.lease_to(owner).map(|to| to.lease),
        info: trace_context::task_info(),
    };
    let batches = store.transition_batches();
    let batcher = match lane {
        Lane::Main => &batches.main,
        Lane::Timekeeping => &batches.timekeeping,
    };
    let Some(mut applied) = batcher.run(process.id.to_string(), job).await? else {
        return Ok(None);
    };
    continuation_call_without_reads(process, plan, Some(state), &mut applied, now);
    Ok(Some(applied))
}

/// Runs `batch` (sorted by execution id) as one transaction and answers each job.
async fn run_batch(pool: &Pool, batch: Batch, consecutive_ids: bool) {
    let jobs: Vec<&Job> = batch.iter().map(|queued| &queued.job).collect();
    let written = async {
        let mut tx = pool.start_transaction(TxOpts::default()).await?;
        let applied = together(&mut tx, &jobs, consecutive_ids).await?;
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
                let error = StoreError::from(error);
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
async fn together(
    tx: &mut Transaction<'static>,
    jobs: &[&Job],
    consecutive_ids: bool,
) -> Result<Vec<Option<Applied>>, StoreError> {
    let locked = lock_rows(tx, jobs).await?;
    let kept: Vec<&Job> = jobs
        .iter()
        .copied()
        .filter(|job| {
            locked.get(&job.process.id).is_some_and(|(process, state)| {
                decides_alike(&job.process, process) && state.version == job.state.version
            })
        })
        .collect();
    take_tasks(tx, &kept).await?;
    let mut rows = PlanRows::default();
    for job in &kept {
        let lease_to = job.lease.map(|lease| LeaseTo {
            owner: &job.owner,
            lease,
        });
        rows.write(
            tx,
            job.process.id,
            &job.plan,
            job.now,
            lease_to,
            job.info.clone(),
        )
        .await?;
    }
    let mut continuations = rows.insert(tx, consecutive_ids).await?;
    Ok(jobs
        .iter()
        .map(|job| {
            kept.iter().any(|kept| std::ptr::eq(*kept, *job)).then(|| {
                applied(
                    &job.process,
                    &job.plan,
                    continuations.remove(&job.process.id),
                )
            })
        })
        .collect())
}

/// Locks the execution and state rows of `jobs`, by execution id.
async fn lock_rows(
    tx: &mut Transaction<'static>,
    jobs: &[&Job],
) -> Result<HashMap<uuid::Uuid, (ProcessExecution, StateExecution)>, StoreError> {
    // Padded to a power of two by repeating the last job, so that few distinct
    // statements reach each connection's prepared-statement cache.
    let padded = jobs.len().next_power_of_two();
    let last = jobs.last().copied();
    let listed = || {
        jobs.iter()
            .copied()
            .chain(std::iter::repeat_n(last, padded - jobs.len()).flatten())
    };
    let mut params: Vec<Value> = listed().map(|job| uuid_value(job.process.id)).collect();
    for job in listed() {
        params.extend([
            uuid_value(job.process.id),
            Value::from(job.state.id.state_id.as_str()),
            Value::from(job.state.id.number),
        ]);
    }
    let rows: Vec<Row> = tx.exec(lock_processes_and_states(padded), params).await?;
    let mut locked = HashMap::with_capacity(rows.len());
    for row in &rows {
        if let (process, Some(state)) = process_and_state_from_row(row)? {
            locked.insert(process.id, (process, state));
        }
    }
    Ok(locked)
}

/// Whether `locked` still holds what a decision made from `read` reads.
fn decides_alike(read: &ProcessExecution, locked: &ProcessExecution) -> bool {
    read.status == locked.status
        && read.running_state_executions == locked.running_state_executions
        && read.state_execution_sequences == locked.state_execution_sequences
        && read.graceful_completion == locked.graceful_completion
}

/// Deletes the tasks of `jobs`, each only while leased to its owner; a task that is not
/// fails the batch as [`StoreError::Stale`].
async fn take_tasks(tx: &mut Transaction<'static>, jobs: &[&Job]) -> Result<(), StoreError> {
    let mut by_owner: HashMap<&str, Vec<i64>> = HashMap::new();
    for job in jobs {
        by_owner.entry(&job.owner).or_default().push(job.task.id);
    }
    for (owner, ids) in by_owner {
        let mut params = vec![Value::from(owner)];
        params.extend(ids.iter().map(|id| Value::from(*id)));
        let placeholders = in_list(&mut params, ids.len());
        tx.exec_drop(
            format!("DELETE FROM xdb_sys_tasks WHERE lease_owner = ? AND id IN ({placeholders})"),
            params,
        )
        .await?;
        if tx.affected_rows() != ids.len() as u64 {
            return Err(StoreError::Stale(
                "a task of the batch is no longer leased to its owner".into(),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use xdb_engine::decide;
    use xdb_protocol::{ProcessExecutionStartRequest, ProcessExecutionStopRequest};
    use xdb_test_util::TestDatabase;

    use super::*;
    use crate::{ProcessApi, TaskSource, Transitions};

    const LEASE: Duration = Duration::from_secs(30);

    /// Three started processes, their first tasks claimed by "me", each with its call and
    /// the plan of an empty waitUntil answer (execute comes next).
    async fn three_claimed(store: &MySqlStore) -> Vec<Job> {
        for n in 0..3 {
            store
                .start_process(&ProcessExecutionStartRequest {
                    process_id: format!("p-batch-{n}"),
                    process_type: "T".into(),
                    worker_url: "http://127.0.0.1:9".into(),
                    start_state_id: Some("A".into()),
                    start_state_input: None,
                    start_state_config: None,
                    process_start_config: None,
                })
                .await
                .unwrap();
        }
        let tasks = store.claim_due_tasks("me", 10, LEASE).await.unwrap();
        assert_eq!(tasks.len(), 3, "{tasks:?}");
        let mut jobs = Vec::new();
        for task in tasks {
            let call = store.load_state_call(&task, "me").await.unwrap().unwrap();
            let now = Utc::now();
            let plan = decide::complete_wait_until(
                &call.process,
                &call.state,
                &Default::default(),
                &[],
                &[],
                now,
            )
            .unwrap();
            jobs.push(Job {
                task,
                owner: "me".into(),
                process: call.process,
                state: call.state,
                plan,
                now,
                lease: Some(LEASE),
                info: None,
            });
        }
        jobs.sort_by_key(|job| job.process.id.to_string());
        jobs
    }

    async fn tasks_of(store: &MySqlStore, job: &Job) -> Vec<(i64, String, Option<String>)> {
        store
            .pool()
            .get_conn()
            .await
            .unwrap()
            .exec(
                "SELECT id, task_type, lease_owner FROM xdb_sys_tasks \
                 WHERE process_execution_id = ? ORDER BY id",
                (job.process.id.to_string(),),
            )
            .await
            .unwrap()
    }

    /// One transition's rows moved after they were read (its process was stopped): it
    /// drops out with nothing written, and the others of its batch commit, each with
    /// its continuation leased under the id the database gave it.
    #[tokio::test]
    async fn a_moved_transition_drops_out_and_the_rest_of_its_batch_commits() {
        let db = TestDatabase::create_mysql().await;
        let store = MySqlStore::connect(db.url(), 4)
            .await
            .unwrap()
            .with_continuation_lease(Some(LEASE));
        let jobs = three_claimed(&store).await;
        let moved = &jobs[1];
        store
            .stop_process(&ProcessExecutionStopRequest {
                process_id: moved.process.process_id.clone(),
                stop_type: Default::default(),
                reason: None,
            })
            .await
            .unwrap();
        let moved_tasks = tasks_of(&store, moved).await;

        let mut tx = store
            .pool()
            .start_transaction(TxOpts::default())
            .await
            .unwrap();
        let refs: Vec<&Job> = jobs.iter().collect();
        let outcomes = together(&mut tx, &refs, store.consecutive_insert_ids())
            .await
            .unwrap();
        tx.commit().await.unwrap();

        assert!(outcomes[1].is_none(), "{:?}", outcomes[1]);
        assert_eq!(
            tasks_of(&store, moved).await,
            moved_tasks,
            "nothing written"
        );
        for index in [0, 2] {
            let applied = outcomes[index].as_ref().expect("committed");
            let continuation = applied.continuation.as_ref().expect("leased execute");
            assert_eq!(
                tasks_of(&store, &jobs[index]).await,
                vec![(
                    continuation.id,
                    "EXECUTE".to_string(),
                    Some("me".to_string())
                )],
                "the waitUntil task taken, the execute task leased under its id"
            );
        }
    }

    /// A task no longer leased to its owner fails the whole batch: nothing of any
    /// transition is written once it is rolled back.
    #[tokio::test]
    async fn a_lost_lease_fails_the_batch_and_writes_nothing() {
        let db = TestDatabase::create_mysql().await;
        let store = MySqlStore::connect(db.url(), 4).await.unwrap();
        let mut jobs = three_claimed(&store).await;
        jobs[2].owner = "someone else".into();
        let before: Vec<_> =
            futures::future::join_all(jobs.iter().map(|j| tasks_of(&store, j))).await;

        let mut tx = store
            .pool()
            .start_transaction(TxOpts::default())
            .await
            .unwrap();
        let refs: Vec<&Job> = jobs.iter().collect();
        let result = together(&mut tx, &refs, store.consecutive_insert_ids()).await;
        assert!(matches!(result, Err(StoreError::Stale(_))), "{result:?}");
        drop(tx);

        let after: Vec<_> =
            futures::future::join_all(jobs.iter().map(|j| tasks_of(&store, j))).await;
        assert_eq!(after, before);
    }

    /// Transitions ready together share a transaction, and each caller gets its own
    /// answer.
    #[tokio::test]
    async fn concurrent_transitions_all_apply_through_the_batches() {
        let db = TestDatabase::create_mysql().await;
        let store = MySqlStore::connect(db.url(), 4)
            .await
            .unwrap()
            .with_continuation_lease(Some(LEASE));
        let jobs = three_claimed(&store).await;
        let applied = futures::future::join_all(jobs.iter().map(|job| {
            let call = StateCall {
                process: job.process.clone(),
                state: job.state.clone(),
                attributes: Default::default(),
            };
            let store = store.clone();
            async move {
                transition_as_read(
                    &store,
                    Lane::Main,
                    &job.task,
                    "me",
                    &call,
                    &job.plan,
                    job.now,
                )
                .await
            }
        }))
        .await;
        for (job, applied) in jobs.iter().zip(applied) {
            let applied = applied.unwrap().expect("applied as read");
            let continuation = applied.continuation.expect("leased");
            assert!(
                applied.continuation_call.is_some(),
                "its call known without reads"
            );
            assert_eq!(
                tasks_of(&store, job).await,
                vec![(
                    continuation.id,
                    "EXECUTE".to_string(),
                    Some("me".to_string())
                )]
            );
        }
    }

    #[test]
    fn a_decision_reads_status_running_states_sequences_and_graceful_completion() {
        let read = ProcessExecution {
            id: uuid::Uuid::nil(),
            process_id: "p".into(),
            process_type: "T".into(),
            worker_url: "http://w".into(),
            status: xdb_protocol::ProcessStatus::Running,
            start_time: Utc::now(),
            close_time: None,
            timeout_seconds: 0,
            running_state_executions: 1,
            graceful_completion: None,
            state_execution_sequences: [("A".to_string(), 1)].into(),
            global_attribute_config: None,
            result: None,
            failure: None,
            paused: None,
        };
        let mut other = read.clone();
        other.worker_url = "http://elsewhere".into();
        assert!(decides_alike(&read, &other), "columns no decision reads");
        for change in [
            |p: &mut ProcessExecution| p.status = xdb_protocol::ProcessStatus::Completed,
            |p: &mut ProcessExecution| p.running_state_executions = 2,
            |p: &mut ProcessExecution| {
                p.state_execution_sequences.insert("B".into(), 1);
            },
        ] {
            let mut moved = read.clone();
            change(&mut moved);
            assert!(!decides_alike(&read, &moved), "{moved:?}");
        }
    }
}
