//! Sends wake-ups to the live instances of the other service, batched.
//!
//! Calls return at once; a background task sends what accumulated since its last round,
//! so a burst of starts costs one request per peer per round, not one per start.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use xdb_persistence::{InstanceRegistry, ServiceKind};
use xdb_protocol::{paths, InternalNotifyRequest};

use crate::LIVENESS_WINDOW;

/// Re-read the registry at most this often.
const PEER_CACHE_TTL: Duration = Duration::from_secs(1);
const NOTIFY_TIMEOUT: Duration = Duration::from_secs(1);

#[derive(Default)]
struct Pending {
    new_tasks: bool,
    closed: BTreeSet<String>,
}

/// Wakes instances of one service kind; a disabled notifier does nothing.
#[derive(Clone)]
pub struct PeerNotifier {
    inner: Option<Arc<Inner>>,
}

struct Inner {
    pending: Mutex<Pending>,
    wake: Notify,
}

impl PeerNotifier {
    /// For databases that push notifications themselves.
    pub fn disabled() -> Self {
        Self { inner: None }
    }

    /// Notifies live instances of `target`, found in `registry`.
    pub fn start(registry: Arc<dyn InstanceRegistry>, target: ServiceKind) -> Self {
        let inner = Arc::new(Inner {
            pending: Mutex::new(Pending::default()),
            wake: Notify::new(),
        });
        tokio::spawn(send_rounds(Arc::downgrade(&inner), registry, target));
        Self { inner: Some(inner) }
    }

    pub fn is_enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// New tasks were committed.
    pub fn new_tasks(&self) {
        self.update(|pending| pending.new_tasks = true);
    }

    /// An execution closed.
    pub fn process_closed(&self, process_execution_id: String) {
        self.update(|pending| {
            pending.closed.insert(process_execution_id);
        });
    }

    fn update(&self, change: impl FnOnce(&mut Pending)) {
        if let Some(inner) = &self.inner {
            change(&mut inner.pending.lock().expect("never poisoned"));
            inner.wake.notify_one();
        }
    }
}

async fn send_rounds(
    inner: std::sync::Weak<Inner>,
    registry: Arc<dyn InstanceRegistry>,
    target: ServiceKind,
) {
    let http = reqwest::Client::builder()
        .timeout(NOTIFY_TIMEOUT)
        .tcp_nodelay(true)
        .build()
        .expect("the HTTP client builds");
    let mut peers: Vec<String> = Vec::new();
    let mut peers_read_at: Option<Instant> = None;
    loop {
        let Some(strong) = inner.upgrade() else {
            return;
        };
        strong.wake.notified().await;
        let pending = std::mem::take(&mut *strong.pending.lock().expect("never poisoned"));
        drop(strong);
        if !pending.new_tasks && pending.closed.is_empty() {
            continue;
        }
        if peers_read_at.is_none_or(|at| at.elapsed() > PEER_CACHE_TTL) {
            match registry.live_instances(target, LIVENESS_WINDOW).await {
                Ok(instances) => {
                    peers = instances.into_iter().map(|i| i.notify_url).collect();
                    peers_read_at = Some(Instant::now());
                }
                Err(error) => tracing::warn!(%error, "reading the service registry failed"),
            }
        }
        let request = InternalNotifyRequest {
            new_tasks: pending.new_tasks,
            closed_process_execution_ids: pending.closed.into_iter().collect(),
        };
        let sends = peers.iter().map(|base| {
            let url = format!("{}{}", base.trim_end_matches('/'), paths::INTERNAL_NOTIFY);
            let http = http.clone();
            let request = &request;
            async move {
                if let Err(error) = http.post(&url).json(request).send().await {
                    tracing::debug!(%url, %error, "waking a peer failed; it will poll");
                }
            }
        });
        futures::future::join_all(sends).await;
    }
}
