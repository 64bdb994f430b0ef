//! The registry of running service instances, on the database's clock.

use std::time::Duration;

use async_trait::async_trait;

use crate::columns::ColumnReader;
use crate::sql::{Param, SqlConn, SqlKind};
use crate::tables::{Dialect, Lane};
use crate::{InstanceRegistry, ServiceInstance, ServiceKind, StoreError};

/// Inserts or refreshes an instance's row. Parameters: id, service, notify URL,
/// liveness timeout (ms).
fn heartbeat(kind: SqlKind) -> &'static str {
    kind.pick(
        "INSERT INTO xdb_sys_service_instances \
         (instance_id, service, notify_url, heartbeat_at, liveness_timeout_ms) \
         VALUES (?, ?, ?, clock_timestamp(), ?) ON CONFLICT (instance_id) DO UPDATE \
         SET service = EXCLUDED.service, notify_url = EXCLUDED.notify_url, \
             heartbeat_at = EXCLUDED.heartbeat_at, \
             liveness_timeout_ms = EXCLUDED.liveness_timeout_ms",
        "INSERT INTO xdb_sys_service_instances \
         (instance_id, service, notify_url, heartbeat_at, liveness_timeout_ms) \
         VALUES (?, ?, ?, UTC_TIMESTAMP(6), ?) ON DUPLICATE KEY UPDATE \
         service = VALUES(service), notify_url = VALUES(notify_url), \
         heartbeat_at = VALUES(heartbeat_at), \
         liveness_timeout_ms = VALUES(liveness_timeout_ms)",
    )
}

/// Deletes rows no instance has heartbeated for an hour. PostgreSQL reads them in key
/// order, so that the primary key serves the scan: the store's sessions disable
/// sequential scans, and the cost of a disabled one set off JIT compilation, which
/// took 0.2 to 1 s per heartbeat.
fn sweep(kind: SqlKind) -> &'static str {
    kind.pick(
        "DELETE FROM xdb_sys_service_instances WHERE instance_id IN ( \
           SELECT instance_id FROM xdb_sys_service_instances \
           WHERE heartbeat_at < clock_timestamp() - interval '1 hour' \
           ORDER BY instance_id)",
        "DELETE FROM xdb_sys_service_instances \
         WHERE heartbeat_at < UTC_TIMESTAMP(6) - INTERVAL 1 HOUR",
    )
}

/// An instance's id and notify URL where its heartbeat is younger than the parameter
/// (µs). Parameters: service, age.
fn live(kind: SqlKind) -> &'static str {
    kind.pick(
        "SELECT instance_id, notify_url FROM xdb_sys_service_instances \
         WHERE service = ? \
           AND heartbeat_at >= clock_timestamp() - CAST(? AS BIGINT) * interval '1 microsecond' \
         ORDER BY instance_id",
        "SELECT instance_id, notify_url FROM xdb_sys_service_instances \
         WHERE service = ? AND heartbeat_at >= UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND \
         ORDER BY instance_id",
    )
}

#[async_trait]
impl<D: Dialect> InstanceRegistry for D
where
    D::Session: SqlConn,
{
    async fn heartbeat_instance(&self, instance: &ServiceInstance) -> Result<(), StoreError> {
        // The timekeeping lane: a backlog of transitions must not hold a heartbeat back,
        // or a busy instance would look dead to its peers (see `release_dead_leases`).
        let mut session = self.session(Lane::Timekeeping).await?;
        let kind = <D::Session as SqlConn>::KIND;
        let params = [
            instance.instance_id.as_str().into(),
            instance.service.as_str().into(),
            instance.notify_url.as_str().into(),
            Param::from(instance.liveness_timeout_ms()),
        ];
        session.execute(heartbeat(kind), &params).await?;
        session.execute(sweep(kind), &[]).await?;
        Ok(())
    }

    async fn live_instances(
        &self,
        service: ServiceKind,
        max_age: Duration,
    ) -> Result<Vec<ServiceInstance>, StoreError> {
        let mut session = self.session(Lane::Main).await?;
        let micros = i64::try_from(max_age.as_micros()).unwrap_or(i64::MAX);
        let sql = live(<D::Session as SqlConn>::KIND);
        let rows = session
            .query(sql, &[service.as_str().into(), micros.into()])
            .await?;
        let pairs = rows
            .iter()
            .map(|row| {
                let mut columns = D::Session::columns(row, 0);
                Ok((columns.text()?, columns.text()?))
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(ServiceInstance::all_of(service, pairs))
    }

    async fn internal_secret(&self) -> Result<String, StoreError> {
        let mut session = self.session(Lane::Main).await?;
        let rows = session
            .query(
                "SELECT secret FROM xdb_sys_cluster_secrets WHERE name = 'internal'",
                &[],
            )
            .await?;
        match rows.first() {
            Some(row) => D::Session::columns(row, 0).text(),
            None => Err(StoreError::NotFound(
                "xdb_sys_cluster_secrets has no 'internal' secret: run `xdb-sys-schema \
                 install` again, or set security.internal_secret"
                    .into(),
            )),
        }
    }

    async fn remove_instance(&self, instance_id: &str) -> Result<(), StoreError> {
        let mut session = self.session(Lane::Main).await?;
        session
            .execute(
                "DELETE FROM xdb_sys_service_instances WHERE instance_id = ?",
                &[instance_id.into()],
            )
            .await?;
        Ok(())
    }
}
