//! [`StateRows`]: an execution's state rows, locked.

use std::sync::LazyLock;

use uuid::Uuid;
use xdb_engine::{StateExecution, StateExecutionId};

use crate::columns::{read_state, STATE_COLUMNS};
use crate::sql::SqlConn;
use crate::tables::StateRows;
use crate::StoreError;

/// One state row by its key, locked. Parameters: execution id, state id, number.
static LOCK_STATE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {STATE_COLUMNS} FROM xdb_sys_async_state_executions \
         WHERE process_execution_id = ? AND state_id = ? AND state_execution_number = ? \
         FOR UPDATE"
    )
});

static LOCK_WAITING_STATES: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {STATE_COLUMNS} FROM xdb_sys_async_state_executions \
         WHERE process_execution_id = ? AND status = 'WAITING_COMMANDS' \
         ORDER BY created_at, state_id, state_execution_number FOR UPDATE"
    )
});

impl<C: SqlConn> StateRows for C {
    async fn lock_state(
        &mut self,
        process: Uuid,
        id: &StateExecutionId,
    ) -> Result<Option<StateExecution>, StoreError> {
        let params = [
            process.into(),
            id.state_id.as_str().into(),
            id.number.into(),
        ];
        let rows = self.query(&LOCK_STATE, &params).await?;
        rows.first()
            .map(|row| read_state(&mut C::columns(row, 0)))
            .transpose()
    }

    async fn lock_waiting_states(
        &mut self,
        process: Uuid,
    ) -> Result<Vec<StateExecution>, StoreError> {
        let rows = self.query(&LOCK_WAITING_STATES, &[process.into()]).await?;
        rows.iter()
            .map(|row| read_state(&mut C::columns(row, 0)))
            .collect()
    }
}
