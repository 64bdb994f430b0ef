//! Keeps this instance's row in the registry fresh.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use xdb_persistence::{InstanceRegistry, ServiceInstance};

use crate::HEARTBEAT_INTERVAL;

/// A registered instance; [`Registration::stop`] removes it.
pub struct Registration<R: InstanceRegistry + ?Sized = dyn InstanceRegistry> {
    registry: Arc<R>,
    instance_id: String,
    stop: watch::Sender<bool>,
    heartbeat: JoinHandle<()>,
}

impl<R: InstanceRegistry + ?Sized> Registration<R> {
    /// Registers `instance` and keeps it alive, every [`HEARTBEAT_INTERVAL`].
    ///
    /// A first heartbeat the database refuses (a restart under way as the service
    /// starts) does not stop the service: the registration only saves its peers' polls,
    /// so it is retried with the next heartbeat and the service serves meanwhile.
    pub async fn start(registry: Arc<R>, instance: ServiceInstance) -> Self {
        Self::start_every(registry, instance, HEARTBEAT_INTERVAL).await
    }

    async fn start_every(registry: Arc<R>, instance: ServiceInstance, every: Duration) -> Self {
        if let Err(error) = registry.heartbeat_instance(&instance).await {
            tracing::warn!(
                instance = %instance.instance_id,
                %error,
                retry_in = ?every,
                "registering this instance failed; peers reach it by polling until a heartbeat succeeds"
            );
        }
        let (stop, mut stopped) = watch::channel(false);
        let background = registry.clone();
        let instance_id = instance.instance_id.clone();
        let heartbeat = tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(every) => {}
                    _ = stopped.changed() => return,
                }
                if let Err(error) = background.heartbeat_instance(&instance).await {
                    tracing::warn!(%error, "renewing the service registration failed");
                }
            }
        });
        Self {
            registry,
            instance_id,
            stop,
            heartbeat,
        }
    }

    /// Stops the heartbeat and removes the registration.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.heartbeat.await;
        if let Err(error) = self.registry.remove_instance(&self.instance_id).await {
            tracing::warn!(%error, "removing the service registration failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use async_trait::async_trait;
    use xdb_persistence::{ServiceKind, StoreError};

    use super::*;

    /// Refuses the first `failures` heartbeats, then records the live instances.
    #[derive(Default)]
    struct FlakyRegistry {
        failures: Mutex<u32>,
        live: Mutex<Vec<String>>,
    }

    #[async_trait]
    impl InstanceRegistry for FlakyRegistry {
        async fn heartbeat_instance(&self, instance: &ServiceInstance) -> Result<(), StoreError> {
            let mut failures = self.failures.lock().unwrap();
            if *failures > 0 {
                *failures -= 1;
                return Err(StoreError::ConnectionLost("connection closed".into()));
            }
            let mut live = self.live.lock().unwrap();
            if !live.contains(&instance.instance_id) {
                live.push(instance.instance_id.clone());
            }
            Ok(())
        }

        async fn live_instances(
            &self,
            service: ServiceKind,
            _max_age: Duration,
        ) -> Result<Vec<ServiceInstance>, StoreError> {
            let live = self.live.lock().unwrap();
            Ok(live
                .iter()
                .map(|id| ServiceInstance {
                    instance_id: id.clone(),
                    service,
                    notify_url: "http://127.0.0.1:1".into(),
                    liveness_timeout: None,
                })
                .collect())
        }

        async fn remove_instance(&self, instance_id: &str) -> Result<(), StoreError> {
            self.live.lock().unwrap().retain(|id| id != instance_id);
            Ok(())
        }

        async fn internal_secret(&self) -> Result<String, StoreError> {
            unreachable!("registration reads no secret")
        }
    }

    fn instance() -> ServiceInstance {
        ServiceInstance {
            instance_id: "api-1".into(),
            service: ServiceKind::Api,
            notify_url: "http://127.0.0.1:1".into(),
            liveness_timeout: None,
        }
    }

    async fn live_within(registry: &FlakyRegistry, deadline: Duration) -> bool {
        let until = tokio::time::Instant::now() + deadline;
        while tokio::time::Instant::now() < until {
            if !registry.live.lock().unwrap().is_empty() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        false
    }

    #[tokio::test]
    async fn a_refused_first_heartbeat_is_retried_and_the_service_goes_on() {
        let registry = Arc::new(FlakyRegistry {
            failures: Mutex::new(2),
            ..Default::default()
        });
        let registration =
            Registration::start_every(registry.clone(), instance(), Duration::from_millis(10))
                .await;
        assert!(registry.live.lock().unwrap().is_empty());
        assert!(
            live_within(&registry, Duration::from_secs(5)).await,
            "a later heartbeat registers the instance"
        );
        registration.stop().await;
        assert!(registry.live.lock().unwrap().is_empty(), "stop removes it");
    }

    #[tokio::test]
    async fn a_registration_is_there_at_once_and_gone_after_stop() {
        let registry = Arc::new(FlakyRegistry::default());
        let registration =
            Registration::start_every(registry.clone(), instance(), Duration::from_secs(60)).await;
        assert_eq!(*registry.live.lock().unwrap(), vec!["api-1".to_string()]);
        registration.stop().await;
        assert!(registry.live.lock().unwrap().is_empty());
    }
}
