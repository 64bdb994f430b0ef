use std::net::SocketAddr;
use std::time::Duration;

use xdb_config::{
    AsyncSettings, DatabaseSettings, Limits, PulsarSettings, QueueMode, QueueSettings,
    SecuritySettings, Settings,
};

/// The async service's part of the configuration: the sections of `xdb-config`'s
/// [`Settings`] it uses, loaded from the config file, `XDB_` variables and flags by `cli`.
#[derive(Debug, Clone)]
pub struct AsyncServiceConfig {
    /// `database.url`: the user's PostgreSQL or MySQL/MariaDB database, with the XDB
    /// schema installed.
    pub database_url: String,
    /// `[async]`: listen address, instance id, pool, in-flight work, leases, polling,
    /// worker-call defaults, shutdown grace.
    pub async_service: AsyncSettings,
    /// `[queue]`: where work comes from, the database's rows or Pulsar CDC topics.
    pub queue: QueueSettings,
    /// `[pulsar]`: the broker, topics and subscription of Pulsar mode.
    pub pulsar: PulsarSettings,
    /// `[security]`: of it, the async service uses the worker-call signing secret and
    /// the internal secret.
    pub security: SecuritySettings,
    /// `[limits]`: value sizes a worker's answer may write or publish.
    pub limits: Limits,
}

impl AsyncServiceConfig {
    /// The config file's defaults for `database_url`, for embedding and tests, except
    /// that the health and internal API listen on a free port, so that several
    /// instances can run side by side.
    pub fn new(database_url: impl Into<String>) -> Self {
        let mut config = Self::from_settings(&Settings {
            database: DatabaseSettings {
                url: Some(database_url.into()),
            },
            ..Settings::default()
        });
        config.async_service.listen = SocketAddr::from(([127, 0, 0, 1], 0));
        config
    }

    /// The async service's part of validated `settings`.
    pub fn from_settings(settings: &Settings) -> Self {
        Self {
            database_url: settings.database.url.clone().unwrap_or_default(),
            async_service: settings.async_service.clone(),
            queue: settings.queue.clone(),
            pulsar: settings.pulsar.clone(),
            security: settings.security.clone(),
            limits: settings.limits.clone(),
        }
    }

    pub fn lease(&self) -> Duration {
        Duration::from_secs_f64(self.async_service.lease_seconds.max(1.0))
    }

    /// How long an instance may go without a heartbeat before its leases are released;
    /// `None`: never, they run out.
    pub fn liveness_timeout(&self) -> Option<Duration> {
        let ms = self.async_service.liveness_timeout_ms;
        (ms > 0).then(|| Duration::from_millis(ms.max(100)))
    }

    /// The lease a transition gives the next state's task, which this instance then runs
    /// at once (the continuation); `None`: every task goes through the task source.
    ///
    /// In Pulsar mode a leased task's change event is passed over, so if this instance
    /// dies holding it, only the release of its leases (liveness) or the sweep brings it
    /// back: with both off, no continuation is leased.
    pub fn continuation_lease(&self) -> Option<Duration> {
        let brought_back = match self.queue.mode {
            QueueMode::Database => true,
            QueueMode::Pulsar => {
                self.liveness_timeout().is_some() || self.pulsar.sweep_after_ms > 0
            }
        };
        brought_back.then(|| self.lease())
    }

    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_secs_f64(self.async_service.shutdown_grace_seconds.clamp(0.0, 3600.0))
    }

    pub fn poll_interval(&self) -> Duration {
        Duration::from_millis(self.async_service.poll_interval_ms.max(10))
    }

    /// The checks an embedder's config needs (`xdb_config::load` makes these and more).
    pub fn validate(&self) -> anyhow::Result<()> {
        let a = &self.async_service;
        anyhow::ensure!(a.pool_size > 0, "pool size must be at least 1");
        anyhow::ensure!(a.max_in_flight > 0, "max in flight must be at least 1");
        anyhow::ensure!(
            a.lower_priority_max_in_flight > 0,
            "lower priority max in flight must be at least 1"
        );
        anyhow::ensure!(
            a.lease_seconds.is_finite() && a.lease_seconds >= 1.0,
            "lease seconds must be at least 1"
        );
        anyhow::ensure!(
            a.liveness_timeout_ms == 0 || (100..=600_000).contains(&a.liveness_timeout_ms),
            "liveness timeout must be 0 (off) or between 100 and 600000 ms"
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pulsar_mode_leases_continuations_only_when_a_dead_instance_s_are_brought_back() {
        let mut config = AsyncServiceConfig::new("postgres://localhost/xdb");
        assert_eq!(config.continuation_lease(), Some(config.lease()));
        config.queue.mode = QueueMode::Pulsar;
        assert_eq!(config.continuation_lease(), Some(config.lease()));
        config.async_service.liveness_timeout_ms = 0;
        assert_eq!(
            config.continuation_lease(),
            Some(config.lease()),
            "the sweep"
        );
        config.pulsar.sweep_after_ms = 0;
        assert_eq!(config.continuation_lease(), None);
        config.queue.mode = QueueMode::Database;
        assert_eq!(config.continuation_lease(), Some(config.lease()));
    }
}
