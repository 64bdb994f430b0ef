//! LISTEN/NOTIFY: prompt wake-ups for the async service and for waiters on completion.
//!
//! A dedicated connection (not from the pool) listens; it reconnects by itself. Missing
//! a notification costs latency only: every consumer also polls as a fallback.

use std::time::Duration;

use futures::StreamExt;
use tokio::sync::broadcast;
use tokio_postgres::{AsyncMessage, NoTls};

use xdb_protocol::ProcessExecutionWaitForCompletionResponse;

use crate::notifications::{Listen, Notification, Notifications};

/// New tasks were committed.
pub const CHANNEL_TASKS: &str = "xdb_sys_tasks";
/// A process execution closed; the payload is its wait-for-completion answer as JSON,
/// or only its id where that answer is too large for a payload.
pub const CHANNEL_PROCESS_CLOSED: &str = "xdb_sys_process_closed";

/// The largest closed-process answer sent as a payload, in bytes of JSON: PostgreSQL's
/// NOTIFY payloads are limited to 8,000 bytes.
const MAX_CLOSED_OUTCOME_BYTES: usize = 7_900;

/// Starts the listener feeding a new hub; it reconnects by itself and stops when every
/// handle to the hub is gone.
pub(crate) fn spawn(config: tokio_postgres::Config, what: Listen) -> Notifications {
    let hub = Notifications::new();
    let weak = hub.sender().downgrade();
    tokio::spawn(async move {
        let mut first = true;
        loop {
            let Some(sender) = weak.upgrade() else { return };
            if let Err(error) = listen(&config, what, &sender, first).await {
                tracing::warn!(error = %error, "notification listener lost its connection; reconnecting");
            }
            drop(sender);
            first = false;
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    });
    hub
}

async fn listen(
    config: &tokio_postgres::Config,
    what: Listen,
    sender: &broadcast::Sender<Notification>,
    first: bool,
) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = config.connect(NoTls).await?;
    let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
    let channel = match what {
        Listen::NewTasks => CHANNEL_TASKS,
        Listen::ClosedProcesses => CHANNEL_PROCESS_CLOSED,
    };
    let statement = format!("LISTEN {channel}");
    let listen = client.batch_execute(&statement);
    tokio::pin!(listen);
    let mut listening = false;
    loop {
        tokio::select! {
            result = &mut listen, if !listening => {
                result?;
                listening = true;
                if !first {
                    let _ = sender.send(Notification::Reconnected);
                }
            }
            message = messages.next() => match message {
                None => return Ok(()),
                Some(Err(error)) => return Err(error),
                Some(Ok(AsyncMessage::Notification(n))) => {
                    let notification = if n.channel() == CHANNEL_PROCESS_CLOSED {
                        closed(n.payload())
                    } else {
                        Notification::Tasks
                    };
                    let _ = sender.send(notification);
                }
                Some(Ok(_)) => {}
            },
        }
    }
}

/// A `ProcessClosed` from its payload (see [`CHANNEL_PROCESS_CLOSED`]).
fn closed(payload: &str) -> Notification {
    match serde_json::from_str::<ProcessExecutionWaitForCompletionResponse>(payload) {
        Ok(outcome) => Notification::ProcessClosed {
            id: outcome.process_execution_id.clone(),
            outcome: Some(std::sync::Arc::new(outcome)),
        },
        Err(_) => Notification::ProcessClosed {
            id: payload.to_string(),
            outcome: None,
        },
    }
}

/// The payload announcing that `process` (as the closing transaction leaves it) closed.
pub(crate) fn closed_payload(process: &xdb_engine::ProcessExecution) -> String {
    let outcome = ProcessExecutionWaitForCompletionResponse {
        process_execution_id: process.id.to_string(),
        status: process.status,
        timed_out: false,
        result: process.result.clone(),
        failure: process.failure.clone(),
    };
    match serde_json::to_string(&outcome) {
        Ok(json) if json.len() <= MAX_CLOSED_OUTCOME_BYTES => json,
        _ => process.id.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_payload_and_an_outcome_payload_both_name_the_execution() {
        let id = "0190a0e4-0000-7000-8000-000000000001";
        assert_eq!(
            closed(id),
            Notification::ProcessClosed {
                id: id.into(),
                outcome: None
            }
        );
        let json =
            format!(r#"{{"processExecutionId":"{id}","status":"COMPLETED","timedOut":false}}"#);
        match closed(&json) {
            Notification::ProcessClosed {
                id: got,
                outcome: Some(outcome),
            } => {
                assert_eq!(got, id);
                assert_eq!(outcome.status, xdb_protocol::ProcessStatus::Completed);
            }
            other => panic!("{other:?}"),
        }
    }
}
