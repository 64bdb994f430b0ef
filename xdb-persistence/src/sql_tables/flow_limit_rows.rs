//! [`FlowLimitStore`] over every dialect, and the declared limits a registration writes
//! in its own transaction. Limits are stored as the protocol's JSON in text columns.

use std::collections::BTreeMap;

use async_trait::async_trait;
use xdb_protocol::{
    FlowLimitChange, FlowLimitSource, FlowLimits, FlowLimitsEntry, FlowLimitsHistoryRequest,
    FlowLimitsHistoryResponse, FlowLimitsSetRequest, ProcessDefinition,
};

use super::change_pages::{change_page, ChangePageQuery};
use crate::columns::ColumnReader;
use crate::conflict_retry::retrying_conflicts;
use crate::flow_limit_store::{
    declared_by, declared_changes, effective, FlowLimitStore, WHOLE_TYPE,
};
use crate::sql::{Param, SqlConn, SqlKind};
use crate::tables::{Dialect, Lane, Transaction};
use crate::StoreError;

const ENTRY_COLUMNS: &str = "process_type, state_id, declared, \
     CASE WHEN override_set THEN 1 ELSE 0 END, override_limits, updated_at";

const CHANGE_COLUMNS: &str = "change_id, process_type, state_id, source, before_limits, \
     after_limits, changed_by, reason, changed_at";

/// The database's time in a statement, as each dialect writes it.
fn now(kind: SqlKind) -> &'static str {
    kind.pick("clock_timestamp()", "UTC_TIMESTAMP(6)")
}

fn to_text(limits: &Option<FlowLimits>) -> Option<String> {
    limits
        .as_ref()
        .map(|limits| serde_json::to_string(limits).expect("flow limits serialize"))
}

/// The fields of [`FlowLimits`] this release knows, as stored.
static KNOWN_FIELDS: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
    // Every field set, so that each is serialized: a field added to the struct without
    // being listed here does not compile.
    let every = FlowLimits {
        max_calls_per_second: Some(1.0),
        max_concurrent_calls: Some(1),
        max_running_executions: Some(1),
        concurrency_key_attribute: Some(String::new()),
        priority: Some(1),
        fairness_key_attribute: Some(String::new()),
        fairness_weight: Some(1),
    };
    match serde_json::to_value(every) {
        Ok(serde_json::Value::Object(fields)) => fields.keys().cloned().collect(),
        _ => unreachable!("flow limits serialize as an object"),
    }
});

/// Stored limits, as this release reads them. A field it does not know was written by a
/// newer release (an operator set it during a rolling upgrade) and is left out, so that
/// a newer release's limits never stop this one's starts and claims; requests are still
/// held to the fields this release knows.
pub(crate) fn from_text(text: Option<String>) -> Result<Option<FlowLimits>, StoreError> {
    let Some(text) = text else {
        return Ok(None);
    };
    let unreadable = |e: serde_json::Error| {
        StoreError::Database(format!("unreadable flow limits {text:?}: {e}"))
    };
    let mut fields: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&text).map_err(unreadable)?;
    fields.retain(|name, _| KNOWN_FIELDS.contains(name));
    serde_json::from_value(serde_json::Value::Object(fields))
        .map(Some)
        .map_err(unreadable)
}

fn state_of(key: String) -> Option<String> {
    (key != WHOLE_TYPE).then_some(key)
}

fn read_entry(row: &mut impl ColumnReader) -> Result<FlowLimitsEntry, StoreError> {
    let process_type = row.text()?;
    let state_id = state_of(row.text()?);
    let declared = from_text(row.optional_text()?)?;
    let override_set = row.int()? != 0;
    let override_text = row.optional_text()?;
    let override_limits = if override_set {
        Some(from_text(override_text)?.unwrap_or_default())
    } else {
        None
    };
    let updated = row.time()?;
    Ok(FlowLimitsEntry {
        effective: effective(&declared, &override_limits),
        process_type,
        state_id,
        declared,
        override_limits,
        updated_timestamp_ms: updated.timestamp_millis(),
    })
}

fn read_change(row: &mut impl ColumnReader) -> Result<FlowLimitChange, StoreError> {
    let change_id = row.bigint()?;
    let process_type = row.text()?;
    let state_id = state_of(row.text()?);
    let source_text = row.text()?;
    let source = FlowLimitSource::parse(&source_text).ok_or_else(|| {
        StoreError::Database(format!("unknown flow limit change source {source_text}"))
    })?;
    Ok(FlowLimitChange {
        change_id,
        process_type,
        state_id,
        source,
        before: from_text(row.optional_text()?)?,
        after: from_text(row.optional_text()?)?,
        changed_by: row.text()?,
        reason: row.optional_text()?,
        changed_timestamp_ms: row.time()?.timestamp_millis(),
    })
}

/// One change to record: whose entry, by whom, and its limits before and after.
struct Change<'a> {
    process_type: &'a str,
    state_key: &'a str,
    source: FlowLimitSource,
    before: &'a Option<FlowLimits>,
    after: &'a Option<FlowLimits>,
    changed_by: &'a str,
    reason: Option<&'a str>,
}

async fn record_change<C: SqlConn>(conn: &mut C, change: Change<'_>) -> Result<(), StoreError> {
    let before = to_text(change.before);
    let after = to_text(change.after);
    let sql = format!(
        "INSERT INTO xdb_sys_flow_limit_changes (process_type, state_id, source, \
           before_limits, after_limits, changed_by, reason, changed_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, {})",
        now(C::KIND)
    );
    conn.execute(
        &sql,
        &[
            change.process_type.into(),
            change.state_key.into(),
            change.source.as_str().into(),
            Param::Text(before.as_deref()),
            Param::Text(after.as_deref()),
            change.changed_by.into(),
            Param::Text(change.reason),
        ],
    )
    .await?;
    Ok(())
}

/// Writes the limits `definition` declares where they differ from the stored ones, and
/// records each change as `changed_by`'s, in the registration's transaction `tx`.
pub(super) async fn record_declared<T: Transaction + SqlConn>(
    tx: &mut T,
    definition: &ProcessDefinition,
    changed_by: &str,
) -> Result<(), StoreError> {
    let process_type = definition.process_type.as_str();
    let rows = tx
        .query(
            "SELECT state_id, declared FROM xdb_sys_flow_limits WHERE process_type = ? \
             FOR UPDATE",
            &[process_type.into()],
        )
        .await?;
    let mut stored = BTreeMap::new();
    for row in &rows {
        let mut columns = T::columns(row, 0);
        let key = columns.text()?;
        stored.insert(key, from_text(columns.optional_text()?)?);
    }
    for (key, before, after) in declared_changes(&stored, &declared_by(definition)) {
        let text = to_text(&after);
        let params = [
            Param::Text(text.as_deref()),
            process_type.into(),
            key.as_str().into(),
        ];
        if stored.contains_key(&key) {
            let sql = format!(
                "UPDATE xdb_sys_flow_limits SET declared = ?, updated_at = {} \
                 WHERE process_type = ? AND state_id = ?",
                now(T::KIND)
            );
            tx.execute(&sql, &params).await?;
        } else {
            let sql = format!(
                "INSERT INTO xdb_sys_flow_limits (declared, process_type, state_id, updated_at) \
                 VALUES (?, ?, ?, {})",
                now(T::KIND)
            );
            tx.execute(&sql, &params).await?;
        }
        let change = Change {
            process_type,
            state_key: &key,
            source: FlowLimitSource::Definition,
            before: &before,
            after: &after,
            changed_by,
            reason: None,
        };
        record_change(tx, change).await?;
    }
    Ok(())
}

#[async_trait]
impl<D: Dialect> FlowLimitStore for D
where
    D::Session: SqlConn,
{
    async fn set_flow_limit_override(
        &self,
        request: &FlowLimitsSetRequest,
        changed_by: &str,
    ) -> Result<FlowLimitsEntry, StoreError> {
        let process_type = request.process_type.as_str();
        let key = request.state_id.as_deref().unwrap_or(WHOLE_TYPE);
        retrying_conflicts(|| async {
            let mut tx = self.begin(Lane::Main).await?;
            let kind = <D::Tx as SqlConn>::KIND;
            let select = format!(
                "SELECT {ENTRY_COLUMNS} FROM xdb_sys_flow_limits \
                 WHERE process_type = ? AND state_id = ? FOR UPDATE"
            );
            let params = [process_type.into(), key.into()];
            let rows = tx.query(&select, &params).await?;
            let existing = match rows.first() {
                Some(row) => Some(read_entry(&mut <D::Tx as SqlConn>::columns(row, 0))?),
                None => None,
            };
            let before = existing.as_ref().and_then(|e| e.override_limits.clone());
            let after = request.override_limits.clone();
            let text = to_text(&after);
            let write = [
                Param::Bool(Some(after.is_some())),
                Param::Text(text.as_deref()),
                process_type.into(),
                key.into(),
            ];
            let sql = if existing.is_some() {
                format!(
                    "UPDATE xdb_sys_flow_limits SET override_set = ?, override_limits = ?, \
                       updated_at = {} WHERE process_type = ? AND state_id = ?",
                    now(kind)
                )
            } else {
                format!(
                    "INSERT INTO xdb_sys_flow_limits (override_set, override_limits, \
                       process_type, state_id, updated_at) VALUES (?, ?, ?, ?, {})",
                    now(kind)
                )
            };
            tx.execute(&sql, &write).await?;
            let change = Change {
                process_type,
                state_key: key,
                source: FlowLimitSource::Operator,
                before: &before,
                after: &after,
                changed_by,
                reason: request.reason.as_deref(),
            };
            record_change(&mut tx, change).await?;
            let rows = tx.query(&select, &params).await?;
            let row = rows.first().ok_or_else(|| {
                StoreError::Database("the flow limit just written is gone".into())
            })?;
            let entry = read_entry(&mut <D::Tx as SqlConn>::columns(row, 0))?;
            tx.commit().await?;
            // This instance's next start reads the change; others within a second.
            self.run_limits().forget();
            Ok(entry)
        })
        .await
    }

    async fn list_flow_limits(
        &self,
        process_type: Option<&str>,
    ) -> Result<Vec<FlowLimitsEntry>, StoreError> {
        // A row whose declaration was dropped and whose override was cleared limits
        // nothing: it is kept (for its place in the history) but not listed.
        let mut sql = format!(
            "SELECT {ENTRY_COLUMNS} FROM xdb_sys_flow_limits \
             WHERE (declared IS NOT NULL OR override_set)"
        );
        let mut params: Vec<Param<'_>> = Vec::new();
        if let Some(process_type) = process_type {
            sql.push_str(" AND process_type = ?");
            params.push(process_type.into());
        }
        sql.push_str(" ORDER BY process_type, state_id");
        let mut session = self.session(Lane::Main).await?;
        let rows = session.query(&sql, &params).await?;
        rows.iter()
            .map(|row| read_entry(&mut D::Session::columns(row, 0)))
            .collect()
    }

    async fn flow_limit_history(
        &self,
        request: &FlowLimitsHistoryRequest,
    ) -> Result<FlowLimitsHistoryResponse, StoreError> {
        let mut session = self.session(Lane::Main).await?;
        let query = ChangePageQuery {
            table: "xdb_sys_flow_limit_changes",
            columns: CHANGE_COLUMNS,
            subject_column: "process_type",
            subject: request.process_type.as_deref(),
            page_size: request.page_size,
            next_page_token: request.next_page_token.as_deref(),
        };
        let page = change_page(&mut session, query).await?;
        let changes = page
            .rows
            .iter()
            .map(|row| read_change(&mut D::Session::columns(row, 0)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(FlowLimitsHistoryResponse {
            next_page_token: page.next_page_token(changes.last().map(|c| c.change_id)),
            changes,
        })
    }
}

#[cfg(test)]
#[path = "flow_limit_rows_tests.rs"]
mod tests;
