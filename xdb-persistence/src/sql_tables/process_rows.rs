//! [`ProcessRows`]: execution rows and the latest-execution index. A dialect supplies
//! only how a new execution's row is inserted ([`NewExecutionRow`]).

use std::sync::LazyLock;

use uuid::Uuid;
use xdb_engine::{ProcessExecution, StateExecution, StateExecutionId};
use xdb_protocol::{ProcessExecutionSummary, ProcessStatus};

use crate::columns::{
    qualified, read_process, read_state, ColumnReader, PROCESS_COLUMNS, PROCESS_COLUMN_COUNT,
    STATE_COLUMNS,
};
use crate::query::SUMMARY_COLUMNS;
use crate::sql::{json, Param, SqlConn, SqlKind};
use crate::steps::Step;
use crate::tables::{Answer, ListQuery, Listed, ProcessRows};
use crate::StoreError;

/// How a dialect inserts a new execution's row: the one method of [`ProcessRows`] whose
/// form differs (PostgreSQL sends it along with the writes that follow).
pub(crate) trait NewExecutionRow {
    /// See [`ProcessRows::insert_execution`].
    fn insert_new_execution(&mut self, execution: &ProcessExecution) -> impl Answer<()>;
}

/// Inserts `executions`' rows in one statement.
pub(crate) async fn insert_executions<C: SqlConn>(
    conn: &mut C,
    executions: &[&ProcessExecution],
) -> Result<(), StoreError> {
    let insert = insert_executions_step(executions);
    conn.execute(&insert.sql, &insert.params).await?;
    Ok(())
}

/// The insert of `executions`' rows, one statement.
pub(crate) fn insert_executions_step<'e>(executions: &[&'e ProcessExecution]) -> Step<'e> {
    let mut params = Vec::with_capacity(executions.len() * 10);
    for execution in executions {
        params.extend([
            Param::from(execution.id),
            execution.process_id.as_str().into(),
            execution.process_type.as_str().into(),
            execution.worker_url.as_str().into(),
            execution.status.as_str().into(),
            execution.start_time.into(),
            execution.timeout_seconds.into(),
            execution.running_state_executions.into(),
            Param::Json(Some(json(&execution.state_execution_sequences))),
            Param::Json(execution.global_attribute_config.as_ref().map(json)),
            i32::from(execution.priority).into(),
        ]);
        let (key, weight) = crate::columns::fairness_columns(execution.fairness.as_ref());
        params.extend([Param::from(key), weight.into()]);
    }
    let rows = vec!["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"; executions.len()].join(", ");
    let sql = format!(
        "INSERT INTO xdb_sys_process_executions (id, process_id, process_type, worker_url, \
           status, start_time, timeout_seconds, running_state_executions, \
           state_execution_sequences, global_attribute_config, priority, fairness_key, \
           fairness_weight) VALUES {rows}"
    );
    Step::new(sql, params)
}

/// An execution row by id: plain, and locked. Parameter: id.
static PROCESS: LazyLock<[String; 2]> = LazyLock::new(|| {
    let sql = format!("SELECT {PROCESS_COLUMNS} FROM xdb_sys_process_executions WHERE id = ?");
    [sql.clone(), sql + " FOR UPDATE"]
});

/// An execution row (`p`) and one of its states (`s`, NULLs when it has no such state):
/// plain, and locked. Parameters: state id, number, execution id.
static PROCESS_AND_STATE: LazyLock<[String; 2]> = LazyLock::new(|| {
    let sql = format!(
        "SELECT {}, {} FROM xdb_sys_process_executions p \
         LEFT JOIN xdb_sys_async_state_executions s ON s.process_execution_id = p.id \
           AND s.state_id = ? AND s.state_execution_number = ? \
         WHERE p.id = ?",
        qualified(PROCESS_COLUMNS, "p"),
        qualified(STATE_COLUMNS, "s"),
    );
    [sql.clone(), sql + " FOR UPDATE"]
});

/// Parameters: execution id, process id.
static EXECUTION_BY_ID: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {PROCESS_COLUMNS} FROM xdb_sys_process_executions \
         WHERE id = ? AND process_id = ?"
    )
});

/// Parameter: process id.
static LATEST_EXECUTION: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {PROCESS_COLUMNS} FROM xdb_sys_process_executions \
         WHERE id = (SELECT process_execution_id FROM xdb_sys_latest_process_executions \
                     WHERE process_id = ?)"
    )
});

/// Inserts the latest-execution row of a process id, or else locks the one there.
/// Parameters: process id, new execution id.
///
/// MySQL's no-op `ON DUPLICATE KEY UPDATE` takes the row's exclusive lock at once;
/// `INSERT IGNORE` would take a shared one, and two starters upgrading it would
/// deadlock. PostgreSQL's `DO NOTHING` takes no lock: [`latest_row`] does.
fn claim_sql(kind: SqlKind) -> &'static str {
    kind.pick(
        "INSERT INTO xdb_sys_latest_process_executions (process_id, process_execution_id) \
         VALUES (?, ?) ON CONFLICT (process_id) DO NOTHING",
        "INSERT INTO xdb_sys_latest_process_executions (process_id, process_execution_id) \
         VALUES (?, ?) ON DUPLICATE KEY UPDATE process_execution_id = process_execution_id",
    )
}

/// The latest-execution row of a process id, locked, and the execution it names (NULLs
/// when there is no such row yet). Parameter: process id.
fn latest_row(kind: SqlKind) -> &'static str {
    static STATEMENTS: LazyLock<[String; 2]> = LazyLock::new(|| {
        let sql = format!(
            "SELECT l.process_execution_id, {} FROM xdb_sys_latest_process_executions l \
             LEFT JOIN xdb_sys_process_executions p ON p.id = l.process_execution_id \
             WHERE l.process_id = ?",
            qualified(PROCESS_COLUMNS, "p"),
        );
        // MySQL's claim holds the row's lock already (and MariaDB has no `OF`).
        [sql.clone() + " FOR UPDATE OF l", sql]
    });
    &STATEMENTS[kind.pick(0, 1)]
}

/// Whether a claim that counts one row inserted it: MySQL counts a duplicate left as it
/// was as matched too (`CLIENT_FOUND_ROWS`).
fn claim_count_tells_first(kind: SqlKind) -> bool {
    kind.pick(true, false)
}

/// Execution `id`, locked when `lock`; `NotFound` when missing.
async fn select_process<C: SqlConn>(
    conn: &mut C,
    id: Uuid,
    lock: bool,
) -> Result<ProcessExecution, StoreError> {
    let rows = conn
        .query(&PROCESS[usize::from(lock)], &[id.into()])
        .await?;
    let row = rows
        .first()
        .ok_or_else(|| StoreError::NotFound(format!("process execution {id} not found")))?;
    let process = read_process(&mut C::columns(row, 0))?;
    Ok(process)
}

/// Execution `id` and its state `state`, in one statement; locked when `lock` (only on
/// MySQL: PostgreSQL locks no row of an outer join's nullable side). `None` when the
/// execution is gone, no state when that one is.
pub(crate) async fn process_and_state<C: SqlConn>(
    conn: &mut C,
    id: Uuid,
    state: &StateExecutionId,
    lock: bool,
) -> Result<Option<(ProcessExecution, Option<StateExecution>)>, StoreError> {
    let params = [
        state.state_id.as_str().into(),
        state.number.into(),
        id.into(),
    ];
    let sql = &PROCESS_AND_STATE[usize::from(lock)];
    let rows = conn.query(sql, &params).await?;
    rows.first().map(process_and_state_of::<C>).transpose()
}

/// [`process_and_state`]'s statement, plain, as PostgreSQL numbers it (for tests that
/// read with a bare client).
#[cfg(test)]
pub(crate) fn process_and_state_sql() -> String {
    crate::sql::numbered_placeholders(&PROCESS_AND_STATE[0]).into_owned()
}

/// The execution and state of a row of [`process_and_state`].
pub(crate) fn process_and_state_of<C: SqlConn>(
    row: &C::Row,
) -> Result<(ProcessExecution, Option<StateExecution>), StoreError> {
    let process = read_process(&mut C::columns(row, 0))?;
    let state_id = C::columns(row, PROCESS_COLUMN_COUNT + 1).optional_text()?;
    let state = match state_id {
        Some(_) => Some(read_state(&mut C::columns(row, PROCESS_COLUMN_COUNT))?),
        None => None,
    };
    Ok((process, state))
}

impl<C: SqlConn + NewExecutionRow> ProcessRows for C {
    async fn lock_process(&mut self, id: Uuid) -> Result<ProcessExecution, StoreError> {
        select_process(self, id, true).await
    }

    async fn latest_execution(&mut self, process_id: &str) -> Result<Option<Uuid>, StoreError> {
        let rows = self
            .query(
                "SELECT process_execution_id FROM xdb_sys_latest_process_executions \
                 WHERE process_id = ?",
                &[process_id.into()],
            )
            .await?;
        rows.first()
            .map(|row| C::columns(row, 0).uuid())
            .transpose()
    }

    async fn find_execution(
        &mut self,
        process_id: &str,
        execution_id: Option<Uuid>,
    ) -> Result<Option<ProcessExecution>, StoreError> {
        let rows = match execution_id {
            Some(id) => {
                let params = [id.into(), process_id.into()];
                self.query(&EXECUTION_BY_ID, &params).await?
            }
            None => self.query(&LATEST_EXECUTION, &[process_id.into()]).await?,
        };
        rows.first()
            .map(|row| read_process(&mut C::columns(row, 0)))
            .transpose()
    }

    async fn list_executions(&mut self, query: &ListQuery<'_>) -> Result<Vec<Listed>, StoreError> {
        list_executions(self, query).await
    }

    async fn claim_process_id(
        &mut self,
        process_id: &str,
        new_id: Uuid,
    ) -> Result<Option<ProcessExecution>, StoreError> {
        let claimed = self
            .execute(claim_sql(C::KIND), &[process_id.into(), new_id.into()])
            .await?;
        if claimed == 1 && claim_count_tells_first(C::KIND) {
            return Ok(None);
        }
        let rows = self
            .query(latest_row(C::KIND), &[process_id.into()])
            .await?;
        let row = rows
            .first()
            .ok_or_else(|| StoreError::Database("the latest-execution row vanished".into()))?;
        let latest = C::columns(row, 0).uuid()?;
        if latest == new_id {
            return Ok(None);
        }
        // The execution's columns are NULL when the row names no execution there is.
        if C::columns(row, 2).optional_text()?.is_none() {
            return Err(StoreError::NotFound(format!(
                "process execution {latest} not found"
            )));
        }
        let previous = read_process(&mut C::columns(row, 1))?;
        Ok(Some(previous))
    }

    async fn repoint_latest(&mut self, process_id: &str, new_id: Uuid) -> Result<(), StoreError> {
        self.execute(
            "UPDATE xdb_sys_latest_process_executions SET process_execution_id = ? \
             WHERE process_id = ?",
            &[new_id.into(), process_id.into()],
        )
        .await?;
        Ok(())
    }

    async fn insert_execution(&mut self, execution: &ProcessExecution) -> Result<(), StoreError> {
        self.insert_new_execution(execution).await
    }

    async fn read_process(&mut self, id: Uuid) -> Result<ProcessExecution, StoreError> {
        select_process(self, id, false).await
    }

    async fn read_process_and_state(
        &mut self,
        id: Uuid,
        state: &StateExecutionId,
    ) -> Result<Option<(ProcessExecution, Option<StateExecution>)>, StoreError> {
        process_and_state(self, id, state, false).await
    }
}

/// See [`ProcessRows::list_executions`]. Only the filters asked for go into the SQL
/// (fixed fragments, values bound), so the database can pick the index that matches; a
/// handful of distinct statements results.
async fn list_executions<C: SqlConn>(
    conn: &mut C,
    query: &ListQuery<'_>,
) -> Result<Vec<Listed>, StoreError> {
    let mut conditions = Vec::new();
    let mut params: Vec<Param<'_>> = Vec::new();
    if let Some(status) = query.status {
        conditions.push("status = ?");
        params.push(status.as_str().into());
    }
    if let Some(process_type) = query.process_type {
        conditions.push("process_type = ?");
        params.push(process_type.into());
    }
    if let Some(process_id) = query.process_id {
        conditions.push("process_id = ?");
        params.push(process_id.into());
    }
    if let Some(min) = query.start_min {
        conditions.push("start_time >= ?");
        params.push(min.into());
    }
    if let Some(max) = query.start_max {
        conditions.push("start_time < ?");
        params.push(max.into());
    }
    if let Some((start, id)) = query.after {
        // PostgreSQL walks the (start_time, id) index from a row comparison; MySQL does
        // not range-scan one, so it gets the comparison spelled out.
        match C::KIND {
            SqlKind::Postgres => {
                conditions.push("(start_time, id) < (?, ?)");
                params.extend([start.into(), id.into()]);
            }
            SqlKind::MySql => {
                conditions.push("(start_time < ? OR (start_time = ? AND id < ?))");
                params.extend([start.into(), start.into(), id.into()]);
            }
        }
    }
    params.push(query.limit.into());
    let where_clause = if conditions.is_empty() {
        String::new()
    } else {
        format!("WHERE {} ", conditions.join(" AND "))
    };
    let sql = format!(
        "SELECT {SUMMARY_COLUMNS} FROM xdb_sys_process_executions p {where_clause}\
         ORDER BY start_time DESC, id DESC LIMIT ?"
    );
    let rows = conn.query(&sql, &params).await?;
    rows.iter().map(summary_of::<C>).collect()
}

/// A list row, from the columns of `query::SUMMARY_COLUMNS` in their order.
pub(crate) fn summary_of<C: SqlConn>(row: &C::Row) -> Result<Listed, StoreError> {
    let mut columns = C::columns(row, 0);
    let id = columns.uuid()?;
    let process_id = columns.text()?;
    let process_type = columns.text()?;
    let status = columns.text()?;
    let start = columns.time()?;
    let close = columns.optional_time()?;
    // 0: running freely or closed; 1: paused by an operator; 2: held by a running limit.
    let held = columns.int()?;
    let may_back_off = columns.int()? != 0;
    let priority = crate::columns::priority_of(columns.int()?)?;
    let summary = ProcessExecutionSummary {
        backing_off: None,
        process_execution_id: id.to_string(),
        process_id,
        process_type,
        status: ProcessStatus::parse(&status)
            .ok_or_else(|| StoreError::Database(format!("unknown status {status}")))?,
        start_timestamp_ms: start.timestamp_millis(),
        close_timestamp_ms: close.map(|t| t.timestamp_millis()),
        paused: held != 0,
        pending: held == 2,
        priority,
    };
    Ok(Listed {
        summary,
        start,
        may_back_off,
        id,
    })
}
