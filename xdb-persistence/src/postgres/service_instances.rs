//! The registry of running service instances.

use std::time::Duration;

use async_trait::async_trait;

use super::PostgresStore;
use crate::{ServiceInstance, ServiceKind, StoreError};

#[async_trait]
impl crate::InstanceRegistry for PostgresStore {
    async fn heartbeat_instance(&self, instance: &ServiceInstance) -> Result<(), StoreError> {
        // The timekeeping lane: a backlog of transitions must not hold a heartbeat back,
        // or a busy instance would look dead to its peers (see `release_dead_leases`).
        let client = self.timekeeping_pool().get().await?;
        let upsert = client
            .prepare_cached(
                "INSERT INTO xdb_sys_service_instances \
                 (instance_id, service, notify_url, heartbeat_at, liveness_timeout_ms) \
                 VALUES ($1, $2, $3, clock_timestamp(), $4) ON CONFLICT (instance_id) DO UPDATE \
                 SET service = EXCLUDED.service, notify_url = EXCLUDED.notify_url, \
                     heartbeat_at = EXCLUDED.heartbeat_at, \
                     liveness_timeout_ms = EXCLUDED.liveness_timeout_ms",
            )
            .await?;
        client
            .execute(
                &upsert,
                &[
                    &instance.instance_id,
                    &instance.service.as_str(),
                    &instance.notify_url,
                    &instance.liveness_timeout_ms(),
                ],
            )
            .await?;
        // Read in key order, so that the primary key serves the scan: the store's sessions
        // disable sequential scans, and the cost of a disabled one set off JIT
        // compilation, which took 0.2 to 1 s per heartbeat.
        let sweep = client
            .prepare_cached(
                "DELETE FROM xdb_sys_service_instances WHERE instance_id IN ( \
                   SELECT instance_id FROM xdb_sys_service_instances \
                   WHERE heartbeat_at < clock_timestamp() - interval '1 hour' \
                   ORDER BY instance_id)",
            )
            .await?;
        client.execute(&sweep, &[]).await?;
        Ok(())
    }

    async fn live_instances(
        &self,
        service: ServiceKind,
        max_age: Duration,
    ) -> Result<Vec<ServiceInstance>, StoreError> {
        let client = self.pool().get().await?;
        let statement = client
            .prepare_cached(
                "SELECT instance_id, notify_url FROM xdb_sys_service_instances \
                 WHERE service = $1 AND heartbeat_at >= clock_timestamp() - make_interval(secs => $2) \
                 ORDER BY instance_id",
            )
            .await?;
        let rows = client
            .query(&statement, &[&service.as_str(), &max_age.as_secs_f64()])
            .await?;
        let pairs = rows.iter().map(|row| (row.get(0), row.get(1)));
        Ok(ServiceInstance::all_of(service, pairs))
    }

    async fn remove_instance(&self, instance_id: &str) -> Result<(), StoreError> {
        let client = self.pool().get().await?;
        client
            .execute(
                "DELETE FROM xdb_sys_service_instances WHERE instance_id = $1",
                &[&instance_id],
            )
            .await?;
        Ok(())
    }
}
