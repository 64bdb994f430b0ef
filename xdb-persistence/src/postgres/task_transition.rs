//! The usual task transition in one statement, decided from the rows the worker call
//! was read with: PostgreSQL's faster form of `crate::operations`' task transitions.

use chrono::{DateTime, Utc};
use xdb_engine::{Task, TransitionPlan};

use super::apply_plan::{plan_writes, Announce};
use super::locks::TAKE_TASK;
use super::pipeline::{param, Answer, Pipeline};
use super::rows::to_json;
use super::statement_batches::StatementBatches;
use super::PostgresStore;
use crate::operations::continuation_call_without_reads;
use crate::plan_writes::is_plain_transition;
use crate::{Applied, StateCall, StoreError};

/// Applies `plan`, decided from `call` as it was read (not locked), in one statement
/// outside a transaction block, committed by `batches` (alone or with others ready at
/// the same time): one round trip, no BEGIN or COMMIT of its own. The statement first
/// locks the process row if it still holds what a decision reads (status, running
/// states, state sequences, graceful completion); every other write to an existing row
/// waits for that lock (the lock order of every transaction), the task is taken, and
/// the state update checks its version. `None` when the plan needs more than one
/// statement, or when any of that failed (nothing was written): the caller then locks,
/// reads and decides again.
pub(crate) async fn one_statement_transition(
    batches: &StatementBatches,
    store: &PostgresStore,
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
    let mut lead = Pipeline::first_locks();
    lead.push(
        "SELECT 1 FROM xdb_sys_process_executions WHERE id = $1 AND status = $2 \
           AND running_state_executions = $3 AND state_execution_sequences = $4 \
           AND graceful_completion IS NOT DISTINCT FROM $5 FOR UPDATE",
        vec![
            param(process.id),
            param(process.status.as_str()),
            param(process.running_state_executions),
            param(to_json(&process.state_execution_sequences)),
            param(process.graceful_completion.as_ref().map(to_json)),
        ],
        Answer::Exactly(1),
    );
    let after_first = lead.after_first();
    lead.push(
        format!("{TAKE_TASK}{after_first} RETURNING 1"),
        vec![param(task.id), param(owner.to_string())],
        Answer::Exactly(1),
    );
    let (writes, reading) = plan_writes(
        lead,
        process,
        plan,
        now,
        Announce::ClosuresOnly,
        store.lease_to(owner),
    );
    let answers = match batches.run(process.id.to_string(), writes).await {
        Ok(answers) => answers,
        Err(StoreError::Stale(_)) => return Ok(None),
        Err(error) => return Err(error),
    };
    // Committed: from here on an error is an error, never a reason to decide again.
    let mut applied = reading.applied(&answers)?;
    continuation_call_without_reads(process, plan, Some(state), &mut applied, now);
    Ok(Some(applied))
}

#[cfg(test)]
mod tests {
    use xdb_engine::{HistoryEntry, StateExecutionId, StateUpdate};
    use xdb_protocol::ProcessExecutionStartRequest;
    use xdb_test_util::TestDatabase;

    use super::*;
    use crate::postgres::apply_plan::{apply_plan_then, Finish};
    use crate::postgres::locks::select_process_and_state;
    use crate::postgres::transaction::Tx;
    use crate::ProcessApi;

    /// The plan's writes went out with COMMIT behind them: a state version that moved
    /// meanwhile must fail the transaction as Stale and commit none of them.
    #[tokio::test]
    async fn a_moved_version_commits_nothing_even_with_commit_sent_along() {
        let db = TestDatabase::create_postgres().await;
        let store = PostgresStore::connect(db.url(), 2).await.unwrap();
        let id = store
            .start_process(&ProcessExecutionStartRequest {
                request_id: None,
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
        tx.client().batch_execute("BEGIN").await.unwrap();
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
