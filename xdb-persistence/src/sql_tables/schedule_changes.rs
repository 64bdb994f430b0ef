//! The audit history of schedules (`xdb_sys_schedule_changes`): each operator's change,
//! with the schedule before and after it, written in the change's own transaction.

use xdb_protocol::{
    ScheduleChange, ScheduleChangeAction, ScheduleHistoryRequest, ScheduleHistoryResponse,
    ScheduleInfo,
};

use super::change_pages::{change_page, ChangePageQuery};
use super::schedule_rows::{read_schedule, SCHEDULE_COLUMNS};
use crate::columns::ColumnReader;
use crate::schedule_store::{ScheduleChangeNote, StoredSchedule};
use crate::sql::{Param, SqlConn};
use crate::StoreError;

const CHANGE_COLUMNS: &str = "change_id, schedule_id, action, before_info, after_info, \
     detail, changed_by, reason, changed_at";

fn to_text(info: Option<&ScheduleInfo>) -> Option<String> {
    info.map(|info| serde_json::to_string(info).expect("a schedule serializes"))
}

fn from_text(text: Option<String>) -> Result<Option<ScheduleInfo>, StoreError> {
    text.map(|text| {
        serde_json::from_str(&text)
            .map_err(|e| StoreError::Database(format!("unreadable schedule in history: {e}")))
    })
    .transpose()
}

fn read_change(row: &mut impl ColumnReader) -> Result<ScheduleChange, StoreError> {
    let change_id = row.bigint()?;
    let schedule_id = row.text()?;
    let action_text = row.text()?;
    let action = ScheduleChangeAction::parse(&action_text).ok_or_else(|| {
        StoreError::Database(format!("unknown schedule change action {action_text}"))
    })?;
    Ok(ScheduleChange {
        change_id,
        schedule_id,
        action,
        before: from_text(row.optional_text()?)?,
        after: from_text(row.optional_text()?)?,
        detail: row.optional_text()?,
        changed_by: row.text()?,
        reason: row.optional_text()?,
        changed_timestamp_ms: row.time()?.timestamp_millis(),
    })
}

/// The schedule's row, locked for the rest of `conn`'s transaction.
pub(super) async fn locked_schedule<C: SqlConn>(
    conn: &mut C,
    schedule_id: &str,
) -> Result<Option<StoredSchedule>, StoreError> {
    let sql = format!(
        "SELECT {SCHEDULE_COLUMNS} FROM xdb_sys_schedules WHERE schedule_id = ? FOR UPDATE"
    );
    let rows = conn.query(&sql, &[schedule_id.into()]).await?;
    rows.first()
        .map(|row| read_schedule(&mut C::columns(row, 0)))
        .transpose()
}

/// Records `change` of `schedule_id`, from `before` to `after`, in `conn`'s transaction.
pub(super) async fn record_schedule_change<C: SqlConn>(
    conn: &mut C,
    schedule_id: &str,
    change: &ScheduleChangeNote<'_>,
    before: Option<&ScheduleInfo>,
    after: Option<&ScheduleInfo>,
) -> Result<(), StoreError> {
    let (before, after) = (to_text(before), to_text(after));
    let sql = format!(
        "INSERT INTO xdb_sys_schedule_changes (schedule_id, action, before_info, after_info, \
           detail, changed_by, reason, changed_at) VALUES (?, ?, ?, ?, ?, ?, ?, {})",
        C::KIND.pick("clock_timestamp()", "UTC_TIMESTAMP(6)")
    );
    conn.execute(
        &sql,
        &[
            schedule_id.into(),
            change.action.as_str().into(),
            Param::Text(before.as_deref()),
            Param::Text(after.as_deref()),
            Param::Text(change.detail),
            change.changed_by.into(),
            Param::Text(change.reason),
        ],
    )
    .await?;
    Ok(())
}

/// A page of the history, newest first.
pub(super) async fn schedule_history<C: SqlConn>(
    conn: &mut C,
    request: &ScheduleHistoryRequest,
) -> Result<ScheduleHistoryResponse, StoreError> {
    let query = ChangePageQuery {
        table: "xdb_sys_schedule_changes",
        columns: CHANGE_COLUMNS,
        subject_column: "schedule_id",
        subject: request.schedule_id.as_deref(),
        page_size: request.page_size,
        next_page_token: request.next_page_token.as_deref(),
    };
    let page = change_page(conn, query).await?;
    let changes = page
        .rows
        .iter()
        .map(|row| read_change(&mut C::columns(row, 0)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ScheduleHistoryResponse {
        next_page_token: page.next_page_token(changes.last().map(|c| c.change_id)),
        changes,
    })
}
