//! Wake-ups from the database: new tasks, new batches, closed executions.
//!
//! A store that can push them (PostgreSQL LISTEN/NOTIFY) feeds a [`Notifications`] hub;
//! consumers subscribe and still poll as a fallback, since a notification may be missed.

use std::sync::Arc;

use tokio::sync::broadcast;
use xdb_protocol::ProcessExecutionWaitForCompletionResponse;

/// One notification, or `Reconnected` after the listener lost its connection (a consumer
/// should re-check the database, as notifications may have been missed).
#[derive(Debug, Clone, PartialEq)]
pub enum Notification {
    Tasks,
    /// New tasks, every one of them of these executions (MySQL's wake-ups name a start's
    /// execution): a claim may take theirs without searching the queue.
    TasksOf(Arc<[uuid::Uuid]>),
    /// Execution `id` closed; `outcome` is the answer for its waiters when the closing
    /// transaction could send it along (PostgreSQL, when it is small), so they need not
    /// read it back.
    ProcessClosed {
        id: String,
        outcome: Option<Arc<ProcessExecutionWaitForCompletionResponse>>,
    },
    /// A batch was created: an idle batch driver looks for it now rather than at its
    /// next poll.
    Batches,
    Reconnected,
}

/// What a service listens for: the async service for new tasks, the API service for
/// closed executions (its waiters on completion). Each hears only its own kind, so a
/// busy system's starts do not wake every waiter, nor its closes every claim loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listen {
    NewTasks,
    ClosedProcesses,
}

/// A handle to the background listener; the listener stops when every handle is gone.
#[derive(Clone)]
pub struct Notifications {
    sender: broadcast::Sender<Notification>,
}

impl Notifications {
    /// A hub nobody feeds yet.
    pub fn new() -> Self {
        let (sender, _) = broadcast::channel(1024);
        Self { sender }
    }

    /// Delivers `notification` to every subscriber.
    pub fn publish(&self, notification: Notification) {
        let _ = self.sender.send(notification);
    }

    pub(crate) fn sender(&self) -> &broadcast::Sender<Notification> {
        &self.sender
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Notification> {
        self.sender.subscribe()
    }
}

impl Default for Notifications {
    fn default() -> Self {
        Self::new()
    }
}
