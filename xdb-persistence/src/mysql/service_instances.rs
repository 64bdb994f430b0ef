//! The registry of running service instances.

use std::time::Duration;

use async_trait::async_trait;

use mysql_async::prelude::Queryable;

use super::MySqlStore;
use crate::{ServiceInstance, ServiceKind, StoreError};

#[async_trait]
impl crate::InstanceRegistry for MySqlStore {
    async fn heartbeat_instance(&self, instance: &ServiceInstance) -> Result<(), StoreError> {
        // The timekeeping lane: a backlog of transitions must not hold a heartbeat back,
        // or a busy instance would look dead to its peers (see `release_dead_leases`).
        let mut conn = self.timekeeping_pool().get_conn().await?;
        conn.exec_drop(
            "INSERT INTO xdb_sys_service_instances \
             (instance_id, service, notify_url, heartbeat_at, liveness_timeout_ms) \
             VALUES (?, ?, ?, UTC_TIMESTAMP(6), ?) ON DUPLICATE KEY UPDATE \
             service = VALUES(service), notify_url = VALUES(notify_url), \
             heartbeat_at = VALUES(heartbeat_at), \
             liveness_timeout_ms = VALUES(liveness_timeout_ms)",
            (
                &instance.instance_id,
                instance.service.as_str(),
                &instance.notify_url,
                instance.liveness_timeout_ms(),
            ),
        )
        .await?;
        conn.query_drop(
            "DELETE FROM xdb_sys_service_instances \
             WHERE heartbeat_at < UTC_TIMESTAMP(6) - INTERVAL 1 HOUR",
        )
        .await?;
        Ok(())
    }

    async fn live_instances(
        &self,
        service: ServiceKind,
        max_age: Duration,
    ) -> Result<Vec<ServiceInstance>, StoreError> {
        let mut conn = self.pool().get_conn().await?;
        let micros = i64::try_from(max_age.as_micros()).unwrap_or(i64::MAX);
        let rows: Vec<(String, String)> = conn
            .exec(
                "SELECT instance_id, notify_url FROM xdb_sys_service_instances \
                 WHERE service = ? AND heartbeat_at >= UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND \
                 ORDER BY instance_id",
                (service.as_str(), micros),
            )
            .await?;
        Ok(ServiceInstance::all_of(service, rows))
    }

    async fn remove_instance(&self, instance_id: &str) -> Result<(), StoreError> {
        let mut conn = self.pool().get_conn().await?;
        conn.exec_drop(
            "DELETE FROM xdb_sys_service_instances WHERE instance_id = ?",
            (instance_id,),
        )
        .await?;
        Ok(())
    }
}
