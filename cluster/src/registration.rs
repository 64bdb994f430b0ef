//! Keeps this instance's row in the registry fresh.

use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use xdb_persistence::{ProcessStore, ServiceInstance};

use crate::HEARTBEAT_INTERVAL;

/// A registered instance; [`Registration::stop`] removes it.
pub struct Registration {
    store: Arc<dyn ProcessStore>,
    instance_id: String,
    stop: watch::Sender<bool>,
    heartbeat: JoinHandle<()>,
}

impl Registration {
    /// Registers `instance` now (failing if the database refuses) and keeps it alive.
    pub async fn start(
        store: Arc<dyn ProcessStore>,
        instance: ServiceInstance,
    ) -> Result<Self, xdb_persistence::StoreError> {
        store.heartbeat_instance(&instance).await?;
        let (stop, mut stopped) = watch::channel(false);
        let background = store.clone();
        let instance_id = instance.instance_id.clone();
        let heartbeat = tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(HEARTBEAT_INTERVAL) => {}
                    _ = stopped.changed() => return,
                }
                if let Err(error) = background.heartbeat_instance(&instance).await {
                    tracing::warn!(%error, "renewing the service registration failed");
                }
            }
        });
        Ok(Self {
            store,
            instance_id,
            stop,
            heartbeat,
        })
    }

    /// Stops the heartbeat and removes the registration.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.heartbeat.await;
        if let Err(error) = self.store.remove_instance(&self.instance_id).await {
            tracing::warn!(%error, "removing the service registration failed");
        }
    }
}
