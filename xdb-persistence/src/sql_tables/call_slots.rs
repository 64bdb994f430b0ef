//! Places of worker calls under concurrency limits (`xdb_sys_call_slots`), taken before
//! a call under the lock of its limits' rows in `xdb_sys_flow_limits`. A place counts
//! while its task is leased to its taker; the statements are the same in both dialects.

use xdb_engine::Task;

use crate::conflict_retry::retrying_conflicts;
use crate::sql::{count, SqlConn};
use crate::tables::{Dialect, Lane, Transaction};
use crate::{CallSlotLimits, StoreError};

/// Forgets the type's places whose call ended (their task is gone, or no longer leased
/// to the taker), and the place `task` held before, if any. Parameters: type, task id.
const FORGET_ENDED: &str = "DELETE FROM xdb_sys_call_slots \
     WHERE process_type = ? AND (task_id = ? OR NOT EXISTS (\
       SELECT 1 FROM xdb_sys_tasks t \
       WHERE t.id = xdb_sys_call_slots.task_id AND t.lease_owner = xdb_sys_call_slots.owner))";

/// See [`crate::Transitions::take_call_slot`].
pub(crate) async fn take_call_slot<D: Dialect>(
    store: &D,
    task: &Task,
    owner: &str,
    process_type: &str,
    state_id: &str,
    limits: CallSlotLimits,
) -> Result<bool, StoreError> {
    if limits.whole.is_none() && limits.state.is_none() {
        return Ok(true);
    }
    retrying_conflicts(|| async {
        let mut tx = store.begin(Lane::Main).await?;
        // One taker at a time per limit: the limits' rows, in key order.
        tx.query(
            "SELECT state_id FROM xdb_sys_flow_limits \
             WHERE process_type = ? AND state_id IN ('', ?) ORDER BY state_id FOR UPDATE",
            &[process_type.into(), state_id.into()],
        )
        .await?;
        tx.execute(FORGET_ENDED, &[process_type.into(), task.id.into()])
            .await?;
        if let Some(limit) = limits.whole {
            let taken = count(
                &mut tx,
                "SELECT COUNT(*) FROM xdb_sys_call_slots WHERE process_type = ?",
                &[process_type.into()],
            )
            .await?;
            if taken >= i64::from(limit) {
                // Keeps the forgetting of ended places.
                tx.commit().await?;
                return Ok(false);
            }
        }
        if let Some(limit) = limits.state {
            let taken = count(
                &mut tx,
                "SELECT COUNT(*) FROM xdb_sys_call_slots WHERE process_type = ? AND state_id = ?",
                &[process_type.into(), state_id.into()],
            )
            .await?;
            if taken >= i64::from(limit) {
                // Keeps the forgetting of ended places.
                tx.commit().await?;
                return Ok(false);
            }
        }
        tx.execute(
            "INSERT INTO xdb_sys_call_slots (task_id, process_type, state_id, owner) \
             VALUES (?, ?, ?, ?)",
            &[
                task.id.into(),
                process_type.into(),
                state_id.into(),
                owner.into(),
            ],
        )
        .await?;
        tx.commit().await?;
        Ok(true)
    })
    .await
}
