//! Pages of an audit history (flow limits', schedules'): newest first, by change id,
//! optionally of one subject. The page token is the last change id of the page before.

use crate::sql::{Param, SqlConn};
use crate::StoreError;

/// Most changes a page holds.
const MAX_PAGE: u32 = 1000;

/// Which history, of whom, and which page.
pub(super) struct ChangePageQuery<'a> {
    /// `SELECT {columns} FROM {table}`; the first column is the change id.
    pub table: &'static str,
    pub columns: &'static str,
    /// The column naming a change's subject, and the one subject asked for, if any.
    pub subject_column: &'static str,
    pub subject: Option<&'a str>,
    pub page_size: Option<u32>,
    pub next_page_token: Option<&'a str>,
}

/// A page's rows, and whether more follow it.
pub(super) struct ChangePage<R> {
    pub rows: Vec<R>,
    pub more: bool,
}

impl<R> ChangePage<R> {
    /// The token of the page after this one, given the id of its last change.
    pub fn next_page_token(&self, last_change_id: Option<i64>) -> Option<String> {
        last_change_id
            .filter(|_| self.more)
            .map(|id| id.to_string())
    }
}

pub(super) async fn change_page<C: SqlConn>(
    conn: &mut C,
    query: ChangePageQuery<'_>,
) -> Result<ChangePage<C::Row>, StoreError> {
    let page = query.page_size.unwrap_or(50).clamp(1, MAX_PAGE);
    let mut sql = format!("SELECT {} FROM {} WHERE 1 = 1", query.columns, query.table);
    let mut params: Vec<Param<'_>> = Vec::new();
    if let Some(subject) = query.subject {
        sql.push_str(&format!(" AND {} = ?", query.subject_column));
        params.push(subject.into());
    }
    // The API service checks that a token is a number before it gets here.
    if let Some(before) = query.next_page_token {
        let before: i64 = before.parse().map_err(|_| {
            StoreError::Database(format!("nextPageToken {before:?} is not a change id"))
        })?;
        sql.push_str(" AND change_id < ?");
        params.push(before.into());
    }
    sql.push_str(" ORDER BY change_id DESC LIMIT ?");
    params.push(i64::from(page + 1).into());
    let mut rows = conn.query(&sql, &params).await?;
    let more = rows.len() > page as usize;
    rows.truncate(page as usize);
    Ok(ChangePage { rows, more })
}
