use xdb_engine::decide;
use xdb_protocol::{ProcessExecutionStartRequest, ProcessExecutionStopRequest};

use super::*;
use crate::columns::ColumnReader;
use crate::{ProcessApi, TaskSource, Transitions};

const LEASE: Duration = Duration::from_secs(30);

/// What the tests need of a store: its batches, its API, and plain statements.
trait TestStore: Dialect<Session: SqlConn> + ProcessApi + TaskSource + Transitions {}
impl<D: Dialect<Session: SqlConn> + ProcessApi + TaskSource + Transitions> TestStore for D {}

// The batched form is MySQL's; its statements are written once, for PostgreSQL too.
on_both_databases!(
    store => store.with_continuation_lease(Some(super::LEASE));
    a_moved_transition_drops_out_and_the_rest_of_its_batch_commits,
    a_lost_lease_fails_the_batch_and_writes_nothing,
    a_state_update_is_guarded_by_its_version,
    concurrent_transitions_all_apply_through_the_batches,
    a_fired_timer_that_deletes_its_states_timers_applies_in_the_batch,
);

/// Three started processes, their first tasks claimed by "me", each with its call and
/// the plan of an empty waitUntil answer (execute comes next).
async fn three_claimed<D: TestStore>(store: &D) -> Vec<Job<D>> {
    for n in 0..3 {
        store
            .start_process(&ProcessExecutionStartRequest {
                request_id: None,
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
            store: store.clone(),
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

/// The last timer of a state fires: its plan deletes the state's timers, the fired one
/// among them, and the batch takes that task before, so the transition applies in the
/// batch (a batch that deleted the timers first would find its task gone, fail as stale
/// and send every transition of it the slow, locked way).
async fn a_fired_timer_that_deletes_its_states_timers_applies_in_the_batch<D: TestStore>(store: D) {
    let mut jobs = three_claimed(&store).await;
    let mut job = jobs.remove(0);
    let response = xdb_protocol::AsyncStateWaitUntilResponse {
        command_request: xdb_protocol::CommandRequest {
            timer_commands: vec![xdb_protocol::TimerCommand {
                delay_in_seconds: 0,
            }],
            ..Default::default()
        },
        ..Default::default()
    };
    job.plan = decide::complete_wait_until(&job.process, &job.state, &response, &[], &[], job.now)
        .unwrap();
    let mut tx = Dialect::begin(&store, Lane::Main).await.unwrap();
    let waiting = together(&mut tx, &[&job]).await.unwrap();
    tx.commit().await.unwrap();
    assert!(waiting[0].is_some(), "the wait-until applied");

    let due = store.claim_due_tasks("me", 10, LEASE).await.unwrap();
    let timer = due
        .into_iter()
        .find(|task| task.task_type == xdb_engine::TaskType::Timer)
        .expect("the timer is due at once");
    // The rows as the wait-until left them (the execution's row is unchanged).
    let waiting = job
        .plan
        .state_after(job.process.id, &job.state.id, Some(&job.state), job.now)
        .unwrap();
    let now = Utc::now();
    let plan = decide::fire_timer(&job.process, &waiting, 0, now);
    assert_eq!(
        plan.delete_timers_of,
        std::slice::from_ref(&waiting.id),
        "{plan:?}"
    );
    let fired = Job {
        task: timer,
        state: waiting,
        plan,
        now,
        ..job
    };
    let mut tx = Dialect::begin(&store, Lane::Main).await.unwrap();
    let outcome = together(&mut tx, &[&fired]).await;
    tx.commit().await.unwrap();
    let applied = outcome.expect("the batch applies").remove(0);
    let execute = applied
        .expect("not dropped out")
        .continuation
        .expect("the state's execute, leased");
    assert_eq!(
        tasks_of(&store, &fired).await,
        [(execute.id, "EXECUTE".to_string(), Some("me".to_string()))],
        "the timer is gone, the execute leased"
    );
}

/// The tasks of `job`'s execution: id, type and lease owner.
async fn tasks_of<D: TestStore>(store: &D, job: &Job<D>) -> Vec<(i64, String, Option<String>)> {
    let mut session = store.session(Lane::Main).await.unwrap();
    let sql = "SELECT id, task_type, lease_owner FROM xdb_sys_tasks \
               WHERE process_execution_id = ? ORDER BY id";
    let rows = session.query(sql, &[job.process.id.into()]).await.unwrap();
    rows.iter()
        .map(|row| {
            let mut columns = <D::Session as SqlConn>::columns(row, 0);
            let id = columns.bigint().unwrap();
            (
                id,
                columns.text().unwrap(),
                columns.optional_text().unwrap(),
            )
        })
        .collect()
}

/// One transition's rows moved after they were read (its process was stopped): it
/// drops out with nothing written, and the others of its batch commit, each with
/// its continuation leased under the id the database gave it.
async fn a_moved_transition_drops_out_and_the_rest_of_its_batch_commits<D: TestStore>(store: D) {
    let jobs = three_claimed(&store).await;
    let moved = &jobs[1];
    store
        .stop_process(&ProcessExecutionStopRequest {
            process_execution_id: None,
            request_id: None,
            process_id: moved.process.process_id.clone(),
            stop_type: Default::default(),
            reason: None,
        })
        .await
        .unwrap();
    let moved_tasks = tasks_of(&store, moved).await;

    let mut tx = Dialect::begin(&store, Lane::Main).await.unwrap();
    let refs: Vec<&Job<_>> = jobs.iter().collect();
    let outcomes = together(&mut tx, &refs).await.unwrap();
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
async fn a_lost_lease_fails_the_batch_and_writes_nothing<D: TestStore>(store: D) {
    let mut jobs = three_claimed(&store).await;
    jobs[2].owner = "someone else".into();
    let before: Vec<_> = futures::future::join_all(jobs.iter().map(|j| tasks_of(&store, j))).await;

    let mut tx = Dialect::begin(&store, Lane::Main).await.unwrap();
    let refs: Vec<&Job<_>> = jobs.iter().collect();
    let result = together(&mut tx, &refs).await;
    assert!(matches!(result, Err(StoreError::Stale(_))), "{result:?}");
    drop(tx);

    let after: Vec<_> = futures::future::join_all(jobs.iter().map(|j| tasks_of(&store, j))).await;
    assert_eq!(after, before);
}

/// A state row whose version moved fails the batch's state update as `Stale`, even
/// past the lock's check: the update guards each row by its version itself.
async fn a_state_update_is_guarded_by_its_version<D: TestStore>(store: D) {
    let jobs = three_claimed(&store).await;
    let mut tx = Dialect::begin(&store, Lane::Main).await.unwrap();
    let mut rows = PlanRows::default();
    for job in &jobs {
        rows.write(&job.process, &job.plan, job.now, None, None);
    }
    let moved = &jobs[2].state.id;
    tx.execute(
        "UPDATE xdb_sys_async_state_executions SET version = version + 1 \
         WHERE state_id = ? AND state_execution_number = ? AND process_execution_id = ?",
        &[
            moved.state_id.as_str().into(),
            moved.number.into(),
            jobs[2].process.id.into(),
        ],
    )
    .await
    .unwrap();
    let sent = rows.send(&mut tx, []).await;
    assert!(matches!(sent, Err(StoreError::Stale(_))), "{sent:?}");
}

/// Transitions ready together share a transaction, and each caller gets its own
/// answer.
async fn concurrent_transitions_all_apply_through_the_batches<D: TestStore>(store: D) {
    let jobs = three_claimed(&store).await;
    let batches = TransitionBatches::<D>::start();
    let applied = futures::future::join_all(jobs.iter().map(|job| {
        let call = StateCall {
            process: job.process.clone(),
            state: job.state.clone(),
            attributes: Default::default(),
        };
        let (store, batches) = (store.clone(), batches.clone());
        async move {
            batches
                .transition_as_read(
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
        priority: xdb_protocol::priority::DEFAULT,
        fairness: None,
    };
    let state = crate::fixtures::state("A-1", xdb_engine::StateExecutionStatus::ExecuteRunning);
    let decided = DecidedFrom::read(&read, &state);
    let mut other = read.clone();
    other.worker_url = "http://elsewhere".into();
    let mut other_state = state.clone();
    other_state.created_at += chrono::TimeDelta::seconds(1);
    assert_eq!(
        DecidedFrom::read(&other, &other_state),
        decided,
        "columns no decision reads"
    );
    for change in [
        |p: &mut ProcessExecution| p.status = xdb_protocol::ProcessStatus::Completed,
        |p: &mut ProcessExecution| p.running_state_executions = 2,
        |p: &mut ProcessExecution| {
            p.state_execution_sequences.insert("B".into(), 1);
        },
        |p: &mut ProcessExecution| {
            p.graceful_completion = Some(xdb_engine::GracefulCompletion { output: None })
        },
    ] {
        let mut moved = read.clone();
        change(&mut moved);
        assert_ne!(DecidedFrom::read(&moved, &state), decided, "{moved:?}");
    }
    let mut moved_state = state.clone();
    moved_state.version += 1;
    assert_ne!(DecidedFrom::read(&read, &moved_state), decided);
}
