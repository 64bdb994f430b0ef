//! The registry of running service instances, on the database's clock.

use std::time::Duration;

use async_trait::async_trait;

use crate::columns::ColumnReader;
use crate::sql::{Param, SqlConn, SqlKind};
use crate::tables::{Dialect, Lane};
use crate::{InstanceRegistry, ServiceInstance, ServiceKind, StoreError};

/// Inserts or refreshes an instance's row. Parameters: id, service, notify URL,
/// liveness timeout (ms).
///
/// On PostgreSQL the commit does not wait for the WAL to reach the disk
/// (`synchronous_commit` off for this transaction alone): a heartbeat lost in a crash is
/// worth nothing, while one waiting seconds behind a busy disk makes its instance wait
/// a whole liveness timeout more before it judges others (`SelfCheck` in the async
/// service), and its peers see it older than it is. Beside a loop of synchronous disk
/// writes, heartbeats took up to 2.2 s that way, and the slowest of 20 takeovers was
/// 2.7 and 4.1 s in two of three runs; with this, heartbeats took at most 45 ms and the
/// slowest takeover 1.1 to 1.3 s.
fn heartbeat(kind: SqlKind) -> &'static str {
    kind.pick(
        "WITH unsynced AS (SELECT set_config('synchronous_commit', 'off', true)) \
         INSERT INTO xdb_sys_service_instances \
         (instance_id, service, notify_url, heartbeat_at, liveness_timeout_ms) \
         SELECT ?, ?, ?, clock_timestamp(), ?::int FROM unsynced \
         ON CONFLICT (instance_id) DO UPDATE \
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::SqlConn;

    on_both_databases!(
        store => store;
        a_heartbeat_registers_then_refreshes_the_instance,
    );

    fn instance(id: &str, timeout: Option<Duration>) -> ServiceInstance {
        ServiceInstance {
            instance_id: id.into(),
            service: ServiceKind::Async,
            notify_url: format!("http://127.0.0.1:9/{id}"),
            liveness_timeout: timeout,
        }
    }

    /// Each instance's row: id, stated timeout, heartbeat in µs since the epoch.
    async fn rows<D: Dialect>(store: &D) -> Vec<(String, Option<i32>, i64)>
    where
        D::Session: SqlConn,
    {
        let mut session = store.session(Lane::Main).await.unwrap();
        let rows = session
            .query(
                "SELECT instance_id, liveness_timeout_ms, heartbeat_at \
                 FROM xdb_sys_service_instances ORDER BY instance_id",
                &[],
            )
            .await
            .unwrap();
        rows.iter()
            .map(|row| {
                let mut columns = D::Session::columns(row, 0);
                (
                    columns.text().unwrap(),
                    columns.optional_int().unwrap(),
                    columns.time().unwrap().timestamp_micros(),
                )
            })
            .collect()
    }

    async fn a_heartbeat_registers_then_refreshes_the_instance<D: Dialect>(store: D)
    where
        D::Session: SqlConn,
    {
        store
            .heartbeat_instance(&instance("a", Some(Duration::from_millis(1500))))
            .await
            .unwrap();
        store
            .heartbeat_instance(&instance("b", None))
            .await
            .unwrap();
        let first = rows(&store).await;
        assert_eq!(
            first
                .iter()
                .map(|(id, timeout, _)| (id.as_str(), *timeout))
                .collect::<Vec<_>>(),
            [("a", Some(1500)), ("b", None)]
        );
        store
            .heartbeat_instance(&instance("a", Some(Duration::from_millis(1500))))
            .await
            .unwrap();
        let second = rows(&store).await;
        assert!(second[0].2 > first[0].2, "{first:?} then {second:?}");
        assert_eq!(second[1], first[1]);
        let live = store
            .live_instances(ServiceKind::Async, Duration::from_secs(60))
            .await
            .unwrap();
        let ids: Vec<_> = live.iter().map(|i| i.instance_id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
    }

    async fn settings_seen<D: Dialect>(store: &D) -> Vec<String>
    where
        D::Session: SqlConn,
    {
        let mut session = store.session(Lane::Main).await.unwrap();
        let rows = session
            .query("SELECT setting FROM seen", &[])
            .await
            .unwrap();
        rows.iter()
            .map(|row| D::Session::columns(row, 0).text().unwrap())
            .collect()
    }

    /// What `synchronous_commit` was in the transaction of each heartbeat, as a trigger
    /// saw it, and in a statement of the store's own after it: the setting is the
    /// heartbeat's alone.
    #[tokio::test]
    async fn on_postgres_a_heartbeat_alone_commits_without_waiting_for_the_disk() {
        let db = xdb_test_util::TestDatabase::create_postgres().await;
        let store = crate::postgres::PostgresStore::connect(db.url(), 4)
            .await
            .unwrap();
        let mut session = store.session(Lane::Main).await.unwrap();
        for sql in [
            "CREATE TABLE seen (setting TEXT)",
            "CREATE FUNCTION record_setting() RETURNS trigger LANGUAGE plpgsql AS $$ \
             BEGIN INSERT INTO seen VALUES (current_setting('synchronous_commit')); \
             RETURN NEW; END $$",
            "CREATE TRIGGER record_setting BEFORE INSERT \
             ON xdb_sys_service_instances FOR EACH ROW EXECUTE FUNCTION record_setting()",
        ] {
            session.execute(sql, &[]).await.unwrap();
        }
        drop(session);
        let one = instance("a", Some(Duration::from_secs(1)));
        store.heartbeat_instance(&one).await.unwrap();
        store.heartbeat_instance(&one).await.unwrap();
        for lane in [Lane::Timekeeping, Lane::Main] {
            let mut session = store.session(lane).await.unwrap();
            session
                .execute(
                    "INSERT INTO seen SELECT current_setting('synchronous_commit')",
                    &[],
                )
                .await
                .unwrap();
        }
        let seen = settings_seen(&store).await;
        assert_eq!(seen, ["off", "off", "on", "on"]);
    }
}
