//! The database-queue task source: claims due tasks with leases and runs them.
//!
//! Woken by LISTEN/NOTIFY, by its own tasks creating tasks, and at the next task's due
//! time; it polls at `poll_interval` as the fallback (and to pick up expired leases).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Notify, Semaphore};
use tokio::task::JoinSet;
use xdb_cluster::PeerNotifier;
use xdb_persistence::Notifications;

use crate::handlers::{handle_task, HandlerContext};

pub(crate) struct DbQueue {
    pub context: Arc<HandlerContext>,
    pub notifications: Option<Notifications>,
    /// Told about closed executions, for their waiting clients (MySQL).
    pub api_peers: PeerNotifier,
    pub max_in_flight: usize,
    pub lease: Duration,
    pub poll_interval: Duration,
}

impl DbQueue {
    /// Runs until `shutdown` turns true, then waits for in-flight tasks.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let wake = Arc::new(Notify::new());
        if let Some(notifications) = &self.notifications {
            let mut receiver = notifications.subscribe();
            let wake = wake.clone();
            tokio::spawn(async move {
                loop {
                    match receiver.recv().await {
                        Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                            wake.notify_one()
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                    }
                }
            });
        }
        let permits = Arc::new(Semaphore::new(self.max_in_flight));
        let mut running = JoinSet::new();
        while !*shutdown.borrow() {
            while running.try_join_next().is_some() {}
            let free = permits.available_permits();
            let claimed = if free == 0 {
                Vec::new()
            } else {
                match self
                    .context
                    .store
                    .claim_due_tasks(&self.context.owner, free.min(256) as i64, self.lease)
                    .await
                {
                    Ok(tasks) => tasks,
                    Err(error) => {
                        tracing::warn!(%error, "claiming tasks failed; retrying");
                        Vec::new()
                    }
                }
            };
            let claimed_count = claimed.len();
            for task in claimed {
                let permit = permits.clone().acquire_owned().await.expect("never closed");
                let context = self.context.clone();
                let wake = wake.clone();
                let api_peers = self.api_peers.clone();
                running.spawn(async move {
                    match handle_task(&context, &task).await {
                        Ok(applied) => {
                            if applied.closed_process {
                                api_peers.process_closed(task.process_execution_id.to_string());
                            }
                            if applied.created_tasks {
                                wake.notify_one();
                            }
                        }
                        Err(error) => {
                            tracing::warn!(task = task.id, %error, "task failed; its lease will expire and it will run again")
                        }
                    }
                    drop(permit);
                });
            }
            if claimed_count > 0 && permits.available_permits() > 0 {
                // There may be more due work right away.
                continue;
            }
            let sleep_for = match self.context.store.next_task_due_in().await {
                Ok(Some(due_in)) => due_in.min(self.poll_interval),
                Ok(None) => self.poll_interval,
                Err(_) => self.poll_interval,
            };
            tokio::select! {
                _ = wake.notified() => {}
                _ = tokio::time::sleep(sleep_for) => {}
                _ = shutdown.changed() => {}
                Some(_) = running.join_next(), if permits.available_permits() == 0 => {}
            }
        }
        while running.join_next().await.is_some() {}
    }
}
