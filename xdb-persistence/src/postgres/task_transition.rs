//! What every task transition after a worker call shares: its beginning (lock the
//! user's row, then the execution's rows, and take the task) and its end (apply the
//! plan, read the continuation's call along, commit, in the writes' round trip when
//! nothing has to follow them).

use chrono::{DateTime, Utc};
use xdb_engine::{ProcessExecution, StateExecution, Task, TransitionPlan};
use xdb_protocol::GlobalAttributeValue;

use super::apply_plan::{apply_plan_then, Announce, Finish};
use super::global_attributes;
use super::load_state_call::preload_continuation;
use super::locks::lock_for_task;
use super::pipeline::Pipeline;
use super::transaction::Tx;
use super::PostgresStore;
use crate::continuation::{continuation_reads_attributes, updates_only};
use crate::{Applied, StateCall, StoreError};

/// Opens `task`'s transaction for the worker's answer to `call`, which writes
/// `global_writes`: locks the user's row (if written) before the execution's rows, and
/// refuses a state that moved on since `call` was read.
pub(crate) async fn begin_transition(
    store: &PostgresStore,
    task: &Task,
    owner: &str,
    call: &StateCall,
    global_writes: &[GlobalAttributeValue],
) -> Result<(Tx, ProcessExecution, StateExecution), StoreError> {
    let tx = Tx::on(store.pool()).await?;
    let (process, state) = tx
        .begin_with(async {
            global_attributes::lock_row_first(
                tx.client(),
                call.process.global_attribute_config.as_ref(),
                global_writes,
            )
            .await?;
            // The process row first, like every transaction that touches an execution.
            lock_for_task(tx.client(), task, owner, &call.state.id).await
        })
        .await?;
    let state = state
        .filter(|s| s.version == call.state.version)
        .ok_or_else(|| StoreError::Stale(format!("state {} changed meanwhile", call.state.id)))?;
    Ok((tx, process, state))
}

/// Applies `plan` for the task transition of `state` (locked by `tx`) and commits.
pub(crate) async fn finish_transition(
    tx: Tx,
    store: &PostgresStore,
    owner: &str,
    process: &ProcessExecution,
    plan: &TransitionPlan,
    state: &StateExecution,
    now: DateTime<Utc>,
) -> Result<Applied, StoreError> {
    // Nothing to read after the writes: COMMIT goes out with them.
    let finish = if updates_only(plan, state)
        && !continuation_reads_attributes(process, plan, Some(state), now)
    {
        Finish::WithWrites
    } else {
        Finish::Later
    };
    let (mut applied, committed) = apply_plan_then(
        tx.client(),
        Pipeline::default(),
        process,
        plan,
        now,
        Announce::ClosuresOnly,
        store.lease_to(owner),
        finish,
    )
    .await?;
    preload_continuation(tx.client(), process, plan, Some(state), &mut applied, now).await?;
    if committed {
        tx.committed();
    } else {
        tx.commit().await?;
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use xdb_engine::{HistoryEntry, StateExecutionId, StateUpdate};
    use xdb_protocol::ProcessExecutionStartRequest;
    use xdb_test_util::TestDatabase;

    use super::*;
    use crate::postgres::locks::select_process_and_state;
    use crate::ProcessStore;

    /// The plan's writes went out with COMMIT behind them: a state version that moved
    /// meanwhile must fail the transaction as Stale and commit none of them.
    #[tokio::test]
    async fn a_moved_version_commits_nothing_even_with_commit_sent_along() {
        let db = TestDatabase::create_postgres().await;
        let store = PostgresStore::connect(db.url(), 2).await.unwrap();
        let id = store
            .start_process(&ProcessExecutionStartRequest {
                process_id: "p-moved".into(),
                process_type: "T".into(),
                worker_url: "http://127.0.0.1:9".into(),
                start_state_id: Some("A".into()),
                start_state_input: None,
                start_state_config: None,
                process_start_config: None,
            })
            .await
            .unwrap();
        let state_id = StateExecutionId {
            state_id: "A".into(),
            number: 1,
        };
        let client = store.pool().get().await.unwrap();
        let (process, state) = select_process_and_state(&client, id, &state_id)
            .await
            .unwrap()
            .unwrap();
        let state = state.unwrap();
        let history = |client: deadpool_postgres::Client| async move {
            let row = client
                .query_one(
                    "SELECT count(*) FROM xdb_sys_history_events WHERE process_execution_id = $1",
                    &[&id],
                )
                .await
                .unwrap();
            row.get::<_, i64>(0)
        };
        let events_before = history(client).await;
        let plan = TransitionPlan {
            state_updates: vec![StateUpdate {
                id: state_id.clone(),
                expected_version: state.version + 1,
                status: state.status,
                command_request: None,
                command_progress: None,
                last_failure: None,
            }],
            history: vec![HistoryEntry::new("TEST_EVENT", serde_json::json!({}))],
            ..Default::default()
        };

        let tx = Tx::on(store.pool()).await.unwrap();
        tx.begin_with(async { Ok(()) }).await.unwrap();
        let result = apply_plan_then(
            tx.client(),
            Pipeline::default(),
            &process,
            &plan,
            Utc::now(),
            Announce::ClosuresOnly,
            None,
            Finish::WithWrites,
        )
        .await;
        assert!(matches!(result, Err(StoreError::Stale(_))), "{result:?}");
        drop(tx);

        let client = store.pool().get().await.unwrap();
        assert_eq!(history(client).await, events_before, "nothing committed");
        let client = store.pool().get().await.unwrap();
        let (_, after) = select_process_and_state(&client, id, &state_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(after.unwrap().version, state.version);
    }
}
