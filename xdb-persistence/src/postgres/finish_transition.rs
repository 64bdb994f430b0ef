//! The end every task transition shares: apply the plan, read the continuation's call
//! along, commit (in the writes' round trip when nothing has to follow them).

use chrono::{DateTime, Utc};
use xdb_engine::{ProcessExecution, StateExecution, TransitionPlan};

use super::apply_plan::{apply_plan_then, Announce, Finish};
use super::load_state_call::preload_continuation;
use super::transaction::Tx;
use super::PostgresStore;
use crate::continuation::{continuation_reads_attributes, updates_only};
use crate::{Applied, StoreError};

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
