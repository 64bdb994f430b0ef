//! [`ScheduleStore`] over every dialect: schedules in `xdb_sys_schedules`, their firings
//! in `xdb_sys_schedule_firings`. Every statement's text is the same in both dialects.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;
use xdb_protocol::{
    ScheduleFiring, ScheduleFiringOutcome, ScheduleFiringTrigger, ScheduleHistoryRequest,
    ScheduleHistoryResponse, ScheduleInfo, ScheduleListRequest, ScheduleListResponse,
    ScheduleOverlapPolicy,
};

use super::schedule_changes::{locked_schedule, record_schedule_change, schedule_history};
use crate::columns::ColumnReader;
use crate::conflict_retry::retrying_conflicts;
use crate::schedule_store::{
    NewFiring, NextFiring, OpenFiring, ScheduleChangeNote, ScheduleStore, StoredSchedule,
};
use crate::sql::{Param, SqlConn};
use crate::tables::{Dialect, Lane, Transaction};
use crate::StoreError;

pub(super) const SCHEDULE_COLUMNS: &str = "schedule_id, spec, start_template, overlap_policy, \
     catchup_window_seconds, CASE WHEN paused THEN 1 ELSE 0 END, note, reason, \
     CAST(next_nominal_ms AS CHAR(20)), next_fire_at, version, created_at, updated_at, \
     declared_by";

const FIRING_COLUMNS: &str = "nominal_ms, process_id, fired_by, outcome, \
     CAST(process_execution_id AS CHAR(36)), resolved_at, reason, overlap_policy, fire_at, schedule_id";

/// Most schedules a list page holds.
const MAX_PAGE: u32 = 1000;

fn corrupt(what: &str, value: &str) -> StoreError {
    StoreError::Database(format!("unknown schedule {what} {value}"))
}

fn policy(text: String) -> Result<ScheduleOverlapPolicy, StoreError> {
    ScheduleOverlapPolicy::parse(&text).ok_or_else(|| corrupt("overlap policy", &text))
}

pub(super) fn read_schedule(row: &mut impl ColumnReader) -> Result<StoredSchedule, StoreError> {
    let schedule_id = row.text()?;
    let missing = |what: &str| StoreError::Database(format!("a schedule without its {what}"));
    let spec = row.json()?.ok_or_else(|| missing("spec"))?;
    let start = row.json()?.ok_or_else(|| missing("start template"))?;
    let overlap_policy = policy(row.text()?)?;
    let catchup_window_seconds = u32::try_from(row.int()?).unwrap_or(0);
    let paused = row.int()? != 0;
    let note = row.optional_text()?;
    let reason = row.optional_text()?;
    let next_nominal = optional_bigint(row)?;
    let next_fire_at = row.optional_time()?;
    let version = row.bigint()?;
    let created = row.time()?;
    let updated = row.time()?;
    let declared_by = row.optional_text()?;
    Ok(StoredSchedule {
        info: ScheduleInfo {
            schedule_id,
            spec,
            start,
            overlap_policy,
            catchup_window_seconds,
            paused,
            note,
            reason,
            next_fire_timestamp_ms: next_nominal,
            created_timestamp_ms: created.timestamp_millis(),
            updated_timestamp_ms: updated.timestamp_millis(),
            declared_by,
        },
        next_fire_at,
        version,
    })
}

/// A nullable `BIGINT`, selected as text so every dialect's reader takes it.
fn optional_bigint(row: &mut impl ColumnReader) -> Result<Option<i64>, StoreError> {
    row.optional_text()?
        .map(|text| {
            // PostgreSQL pads a CHAR(20).
            text.trim()
                .parse()
                .map_err(|_| corrupt("next nominal time", &text))
        })
        .transpose()
}

fn read_firing(row: &mut impl ColumnReader) -> Result<OpenFiring, StoreError> {
    let nominal_timestamp_ms = row.bigint()?;
    let process_id = row.text()?;
    let trigger = row.text()?;
    let trigger =
        ScheduleFiringTrigger::parse(&trigger).ok_or_else(|| corrupt("trigger", &trigger))?;
    let outcome = row.text()?;
    let outcome =
        ScheduleFiringOutcome::parse(&outcome).ok_or_else(|| corrupt("outcome", &outcome))?;
    let process_execution_id = row.optional_text()?;
    let resolved = row.optional_time()?;
    let reason = row.optional_text()?;
    let overlap_policy = policy(row.text()?)?;
    let fire_at = row.time()?;
    let schedule_id = row.text()?;
    Ok(OpenFiring {
        schedule_id,
        firing: ScheduleFiring {
            nominal_timestamp_ms,
            process_id,
            trigger,
            outcome,
            process_execution_id,
            resolved_timestamp_ms: resolved.map(|t| t.timestamp_millis()),
            reason,
        },
        overlap_policy,
        fire_at,
    })
}

fn catchup(info: &ScheduleInfo) -> i32 {
    i32::try_from(info.catchup_window_seconds).unwrap_or(i32::MAX)
}

/// The columns a create and a replace both write, in their order: `process_type`,
/// `spec`, `start_template`, `overlap_policy`, `catchup_window_seconds`, `paused`,
/// `note`, `reason`, `next_nominal_ms`, `next_fire_at`, `declared_by`.
fn schedule_params(schedule: &ScheduleInfo, next: NextFiring) -> [Param<'_>; 11] {
    [
        schedule.start.process_type.as_str().into(),
        Param::Json(Some(crate::sql::json(&schedule.spec))),
        Param::Json(Some(crate::sql::json(&schedule.start))),
        schedule.overlap_policy.as_str().into(),
        catchup(schedule).into(),
        Param::Bool(Some(schedule.paused)),
        Param::Text(schedule.note.as_deref()),
        Param::Text(schedule.reason.as_deref()),
        Param::BigInt(next.nominal_ms),
        Param::Time(next.fire_at),
        Param::Text(schedule.declared_by.as_deref()),
    ]
}

#[async_trait]
impl<D: Dialect> ScheduleStore for D
where
    D::Session: SqlConn,
{
    async fn create_schedule(
        &self,
        schedule: &ScheduleInfo,
        next: NextFiring,
        change: &ScheduleChangeNote<'_>,
    ) -> Result<bool, StoreError> {
        retrying_conflicts(|| async {
            let mut tx = self.begin(Lane::Main).await?;
            let existing = tx
                .query(
                    "SELECT schedule_id FROM xdb_sys_schedules WHERE schedule_id = ? FOR UPDATE",
                    &[schedule.schedule_id.as_str().into()],
                )
                .await?;
            if !existing.is_empty() {
                tx.commit().await?;
                return Ok(false);
            }
            let now = self.database_clock().now();
            tx.execute(
                "INSERT INTO xdb_sys_schedules (schedule_id, process_type, spec, start_template, \
                   overlap_policy, catchup_window_seconds, paused, note, reason, \
                   next_nominal_ms, next_fire_at, declared_by, version, created_at, \
                   updated_at) \
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)",
                &[
                    &[schedule.schedule_id.as_str().into()][..],
                    &schedule_params(schedule, next),
                    &[now.into(), now.into()],
                ]
                .concat(),
            )
            .await?;
            let created = locked_schedule(&mut tx, &schedule.schedule_id).await?;
            let after = created.as_ref().map(|stored| &stored.info);
            record_schedule_change(&mut tx, &schedule.schedule_id, change, None, after).await?;
            tx.commit().await?;
            Ok(true)
        })
        .await
    }

    async fn get_schedule(&self, schedule_id: &str) -> Result<Option<StoredSchedule>, StoreError> {
        let mut session = self.session(Lane::Main).await?;
        let sql = format!("SELECT {SCHEDULE_COLUMNS} FROM xdb_sys_schedules WHERE schedule_id = ?");
        let rows = session.query(&sql, &[schedule_id.into()]).await?;
        rows.first()
            .map(|row| read_schedule(&mut D::Session::columns(row, 0)))
            .transpose()
    }

    async fn schedules_declared_by(
        &self,
        process_type: &str,
    ) -> Result<Vec<StoredSchedule>, StoreError> {
        let mut session = self.session(Lane::Main).await?;
        let sql = format!(
            "SELECT {SCHEDULE_COLUMNS} FROM xdb_sys_schedules WHERE declared_by = ? \
             ORDER BY schedule_id"
        );
        let rows = session.query(&sql, &[process_type.into()]).await?;
        rows.iter()
            .map(|row| read_schedule(&mut D::Session::columns(row, 0)))
            .collect()
    }

    async fn list_schedules(
        &self,
        request: &ScheduleListRequest,
    ) -> Result<ScheduleListResponse, StoreError> {
        let page = request.page_size.unwrap_or(50).clamp(1, MAX_PAGE);
        let mut sql = format!("SELECT {SCHEDULE_COLUMNS} FROM xdb_sys_schedules WHERE 1 = 1");
        let mut params: Vec<Param<'_>> = Vec::new();
        if let Some(process_type) = &request.process_type {
            sql.push_str(" AND process_type = ?");
            params.push(process_type.as_str().into());
        }
        // The token is the last schedule id of the page before: ids are unique and
        // ordered, and a bound parameter whatever it holds.
        if let Some(after) = &request.next_page_token {
            sql.push_str(" AND schedule_id > ?");
            params.push(after.as_str().into());
        }
        sql.push_str(" ORDER BY schedule_id LIMIT ?");
        params.push(i64::from(page + 1).into());
        let mut session = self.session(Lane::Main).await?;
        let rows = session.query(&sql, &params).await?;
        let mut schedules = Vec::with_capacity(rows.len());
        for row in rows.iter().take(page as usize) {
            schedules.push(read_schedule(&mut D::Session::columns(row, 0))?.info);
        }
        let next_page_token = match schedules.last() {
            Some(last) if rows.len() > page as usize => Some(last.schedule_id.clone()),
            _ => None,
        };
        Ok(ScheduleListResponse {
            schedules,
            next_page_token,
        })
    }

    async fn replace_schedule(
        &self,
        schedule: &ScheduleInfo,
        next: NextFiring,
        expected_version: i64,
        change: &ScheduleChangeNote<'_>,
    ) -> Result<bool, StoreError> {
        let schedule_id = schedule.schedule_id.as_str();
        retrying_conflicts(|| async {
            let mut tx = self.begin(Lane::Main).await?;
            let before = match locked_schedule(&mut tx, schedule_id).await? {
                Some(before) if before.version == expected_version => before,
                _ => {
                    tx.commit().await?;
                    return Ok(false);
                }
            };
            let now = self.database_clock().now();
            tx.execute(
                "UPDATE xdb_sys_schedules SET process_type = ?, spec = ?, start_template = ?, \
                   overlap_policy = ?, catchup_window_seconds = ?, paused = ?, note = ?, \
                   reason = ?, next_nominal_ms = ?, next_fire_at = ?, declared_by = ?, \
                   version = version + 1, updated_at = ? \
                 WHERE schedule_id = ?",
                &[
                    &schedule_params(schedule, next)[..],
                    &[now.into(), schedule_id.into()],
                ]
                .concat(),
            )
            .await?;
            let after = locked_schedule(&mut tx, schedule_id).await?;
            let after = after.as_ref().map(|stored| &stored.info);
            record_schedule_change(&mut tx, schedule_id, change, Some(&before.info), after).await?;
            tx.commit().await?;
            Ok(true)
        })
        .await
    }

    async fn delete_schedule(
        &self,
        schedule_id: &str,
        change: &ScheduleChangeNote<'_>,
    ) -> Result<bool, StoreError> {
        retrying_conflicts(|| async {
            let mut tx = self.begin(Lane::Main).await?;
            let Some(before) = locked_schedule(&mut tx, schedule_id).await? else {
                tx.commit().await?;
                return Ok(false);
            };
            tx.execute(
                "DELETE FROM xdb_sys_schedules WHERE schedule_id = ?",
                &[schedule_id.into()],
            )
            .await?;
            tx.execute(
                "DELETE FROM xdb_sys_schedule_firings WHERE schedule_id = ?",
                &[schedule_id.into()],
            )
            .await?;
            record_schedule_change(&mut tx, schedule_id, change, Some(&before.info), None).await?;
            tx.commit().await?;
            Ok(true)
        })
        .await
    }

    async fn schedule_history(
        &self,
        request: &ScheduleHistoryRequest,
    ) -> Result<ScheduleHistoryResponse, StoreError> {
        let mut session = self.session(Lane::Main).await?;
        schedule_history(&mut session, request).await
    }

    async fn recent_firings(
        &self,
        schedule_id: &str,
        limit: usize,
    ) -> Result<Vec<ScheduleFiring>, StoreError> {
        let mut session = self.session(Lane::Main).await?;
        let sql = format!(
            "SELECT {FIRING_COLUMNS} FROM xdb_sys_schedule_firings WHERE schedule_id = ? \
             ORDER BY nominal_ms DESC LIMIT ?"
        );
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = session
            .query(&sql, &[schedule_id.into(), limit.into()])
            .await?;
        rows.iter()
            .map(|row| read_firing(&mut D::Session::columns(row, 0)).map(|f| f.firing))
            .collect()
    }

    async fn record_firings(
        &self,
        schedule_id: &str,
        firings: &[NewFiring],
        advance: Option<(i64, NextFiring)>,
        change: Option<&ScheduleChangeNote<'_>>,
    ) -> Result<Option<u32>, StoreError> {
        retrying_conflicts(|| async {
            let mut tx = self.begin(Lane::Main).await?;
            let rows = tx
                .query(
                    "SELECT version FROM xdb_sys_schedules WHERE schedule_id = ? FOR UPDATE",
                    &[schedule_id.into()],
                )
                .await?;
            let Some(row) = rows.first() else {
                tx.commit().await?;
                return Ok(None);
            };
            let version = D::Tx::columns(row, 0).bigint()?;
            if matches!(advance, Some((expected, _)) if expected != version) {
                tx.commit().await?;
                return Ok(None);
            }
            let mut recorded = 0u32;
            for firing in firings {
                // Under the schedule's lock, so no other transaction inserts it meanwhile.
                let exists = tx
                    .query(
                        "SELECT 1 FROM xdb_sys_schedule_firings \
                         WHERE schedule_id = ? AND nominal_ms = ?",
                        &[schedule_id.into(), firing.nominal_ms.into()],
                    )
                    .await?;
                if !exists.is_empty() {
                    continue;
                }
                tx.execute(
                    "INSERT INTO xdb_sys_schedule_firings (schedule_id, nominal_ms, process_id, \
                       fired_by, overlap_policy, outcome, fire_at, created_at) \
                     VALUES (?, ?, ?, ?, ?, 'PENDING', ?, ?)",
                    &[
                        schedule_id.into(),
                        firing.nominal_ms.into(),
                        firing.process_id.as_str().into(),
                        firing.fired_by.as_str().into(),
                        firing.overlap_policy.as_str().into(),
                        firing.fire_at.into(),
                        self.database_clock().now().into(),
                    ],
                )
                .await?;
                recorded += 1;
            }
            if let Some((_, next)) = advance {
                tx.execute(
                    "UPDATE xdb_sys_schedules SET next_nominal_ms = ?, next_fire_at = ?, \
                       version = version + 1 WHERE schedule_id = ?",
                    &[
                        Param::BigInt(next.nominal_ms),
                        Param::Time(next.fire_at),
                        schedule_id.into(),
                    ],
                )
                .await?;
            }
            if let Some(change) = change {
                record_schedule_change(&mut tx, schedule_id, change, None, None).await?;
            }
            tx.commit().await?;
            Ok(Some(recorded))
        })
        .await
    }

    async fn due_schedules(&self, limit: usize) -> Result<Vec<StoredSchedule>, StoreError> {
        let mut session = self.session(Lane::Main).await?;
        let now = self.database_clock().now();
        let sql = format!(
            "SELECT {SCHEDULE_COLUMNS} FROM xdb_sys_schedules \
             WHERE next_fire_at <= ? AND NOT paused ORDER BY next_fire_at LIMIT ?"
        );
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = session.query(&sql, &[now.into(), limit.into()]).await?;
        rows.iter()
            .map(|row| read_schedule(&mut D::Session::columns(row, 0)))
            .collect()
    }

    async fn open_firings(&self, limit: usize) -> Result<Vec<OpenFiring>, StoreError> {
        let mut session = self.session(Lane::Main).await?;
        let now = self.database_clock().now();
        let sql = format!(
            "SELECT {FIRING_COLUMNS} FROM xdb_sys_schedule_firings \
             WHERE outcome IN ('PENDING', 'BUFFERED') AND fire_at <= ? \
             ORDER BY schedule_id, nominal_ms LIMIT ?"
        );
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = session.query(&sql, &[now.into(), limit.into()]).await?;
        rows.iter()
            .map(|row| read_firing(&mut D::Session::columns(row, 0)))
            .collect()
    }

    async fn resolve_firing(
        &self,
        schedule_id: &str,
        nominal_ms: i64,
        outcome: ScheduleFiringOutcome,
        process_execution_id: Option<Uuid>,
        reason: Option<&str>,
    ) -> Result<bool, StoreError> {
        let mut session = self.session(Lane::Main).await?;
        let now: DateTime<Utc> = self.database_clock().now();
        let resolved = match outcome {
            ScheduleFiringOutcome::Pending | ScheduleFiringOutcome::Buffered => None,
            _ => Some(now),
        };
        let updated = session
            .execute(
                "UPDATE xdb_sys_schedule_firings SET outcome = ?, process_execution_id = ?, \
                   reason = ?, resolved_at = ? \
                 WHERE schedule_id = ? AND nominal_ms = ? \
                   AND outcome IN ('PENDING', 'BUFFERED')",
                &[
                    outcome.as_str().into(),
                    Param::OptionalUuid(process_execution_id),
                    Param::Text(reason),
                    Param::Time(resolved),
                    schedule_id.into(),
                    nominal_ms.into(),
                ],
            )
            .await?;
        Ok(updated == 1)
    }

    async fn lease_schedule(
        &self,
        schedule_id: &str,
        owner: &str,
        lease: std::time::Duration,
    ) -> Result<bool, StoreError> {
        let mut session = self.session(Lane::Main).await?;
        let now = self.database_clock().now();
        let until = now + chrono::Duration::from_std(lease).unwrap_or_default();
        let updated = session
            .execute(
                "UPDATE xdb_sys_schedules SET lease_owner = ?, lease_until = ? \
                 WHERE schedule_id = ? \
                   AND (lease_owner IS NULL OR lease_owner = ? OR lease_until < ?)",
                &[
                    owner.into(),
                    until.into(),
                    schedule_id.into(),
                    owner.into(),
                    now.into(),
                ],
            )
            .await?;
        Ok(updated == 1)
    }

    async fn release_schedule(&self, schedule_id: &str, owner: &str) -> Result<(), StoreError> {
        let mut session = self.session(Lane::Main).await?;
        session
            .execute(
                "UPDATE xdb_sys_schedules SET lease_owner = NULL, lease_until = NULL \
                 WHERE schedule_id = ? AND lease_owner = ?",
                &[schedule_id.into(), owner.into()],
            )
            .await?;
        Ok(())
    }

    async fn previous_started(
        &self,
        schedule_id: &str,
        nominal_ms: i64,
    ) -> Result<Option<ScheduleFiring>, StoreError> {
        let mut session = self.session(Lane::Main).await?;
        let sql = format!(
            "SELECT {FIRING_COLUMNS} FROM xdb_sys_schedule_firings \
             WHERE schedule_id = ? AND nominal_ms < ? AND outcome = 'STARTED' \
             ORDER BY nominal_ms DESC LIMIT 1"
        );
        let rows = session
            .query(&sql, &[schedule_id.into(), nominal_ms.into()])
            .await?;
        rows.first()
            .map(|row| read_firing(&mut D::Session::columns(row, 0)).map(|f| f.firing))
            .transpose()
    }
}

#[cfg(test)]
#[path = "schedule_rows_tests.rs"]
mod tests;
