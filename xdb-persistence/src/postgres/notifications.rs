//! LISTEN/NOTIFY: prompt wake-ups for the async service and for waiters on completion.
//!
//! A dedicated connection (not from the pool) listens; it reconnects by itself. Missing
//! a notification costs latency only: every consumer also polls as a fallback.

use std::time::Duration;

use futures::StreamExt;
use tokio::sync::broadcast;
use tokio_postgres::AsyncMessage;
use xdb_db_connect::PostgresTarget;

use xdb_protocol::ProcessExecutionWaitForCompletionResponse;

use crate::notifications::{Listen, Notification, Notifications};

/// New tasks were committed; with [`BATCHES_PAYLOAD`], a batch was.
pub const CHANNEL_TASKS: &str = "xdb_sys_tasks";
/// The payload on [`CHANNEL_TASKS`] announcing a new batch. The async service listens
/// there already, and a listener from before batch wake-ups takes it for new tasks: a
/// search for nothing, no harm.
pub const BATCHES_PAYLOAD: &str = "batches";
/// Announces a batch when its transaction commits (see [`BATCHES_PAYLOAD`]).
pub(crate) const NOTIFY_BATCHES: &str = "SELECT pg_notify('xdb_sys_tasks', 'batches')";
/// A process execution closed; the payload is its wait-for-completion answer as JSON,
/// or only its id where that answer is too large for a payload.
pub const CHANNEL_PROCESS_CLOSED: &str = "xdb_sys_process_closed";

/// The largest closed-process answer sent as a payload, in bytes of JSON: PostgreSQL's
/// NOTIFY payloads are limited to 8,000 bytes.
const MAX_CLOSED_OUTCOME_BYTES: usize = 7_900;

/// Starts the listener feeding a new hub; it reconnects by itself and stops when every
/// handle to the hub is gone.
pub(crate) fn spawn(target: PostgresTarget, what: Listen) -> Notifications {
    let hub = Notifications::new();
    let weak = hub.sender().downgrade();
    tokio::spawn(async move {
        let mut first = true;
        loop {
            let Some(sender) = weak.upgrade() else { return };
            if let Err(error) = listen(&target, what, &sender, first).await {
                tracing::warn!(error = %error, "notification listener lost its connection; reconnecting");
            }
            drop(sender);
            first = false;
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    });
    hub
}

/// A lost or refused connection: the listener logs it and connects again.
type ListenError = Box<dyn std::error::Error + Send + Sync>;

async fn listen(
    target: &PostgresTarget,
    what: Listen,
    sender: &broadcast::Sender<Notification>,
    first: bool,
) -> Result<(), ListenError> {
    let (client, mut connection) = target.connect().await?;
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
                Some(Err(error)) => return Err(error.into()),
                Some(Ok(AsyncMessage::Notification(n))) => {
                    let notification = if n.channel() == CHANNEL_PROCESS_CLOSED {
                        closed(n.payload())
                    } else if n.payload() == BATCHES_PAYLOAD {
                        Notification::Batches
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

/// The payload announcing a close: its `outcome` (see
/// [`crate::plan_writes::closed_outcome`]), or only its id where that is too large.
pub(crate) fn closed_payload(outcome: &ProcessExecutionWaitForCompletionResponse) -> String {
    match serde_json::to_string(outcome) {
        Ok(json) if json.len() <= MAX_CLOSED_OUTCOME_BYTES => json,
        _ => outcome.process_execution_id.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_batch_notice_goes_to_the_tasks_channel_with_its_payload() {
        assert_eq!(
            NOTIFY_BATCHES,
            format!("SELECT pg_notify('{CHANNEL_TASKS}', '{BATCHES_PAYLOAD}')")
        );
    }

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

    #[test]
    fn a_closing_plan_announces_the_execution_as_it_leaves_it() {
        use xdb_engine::{ProcessUpdate, TransitionPlan};
        use xdb_protocol::{EncodedObject, ProcessStatus};

        use crate::plan_writes::closed_outcome;

        let process = crate::fixtures::process(ProcessStatus::Running);
        let result = EncodedObject {
            encoding: "json".into(),
            data: "42".into(),
        };
        let mut plan = TransitionPlan {
            process: Some(ProcessUpdate {
                status: Some(ProcessStatus::Completed),
                result: Some(result.clone()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let outcome = closed_outcome(&process, &plan).expect("the plan closes it");
        assert_eq!(outcome.process_execution_id, process.id.to_string());
        assert_eq!(outcome.status, ProcessStatus::Completed);
        assert_eq!(outcome.result, Some(result));
        assert!(!outcome.timed_out && outcome.failure.is_none());
        let announced = Notification::ProcessClosed {
            id: process.id.to_string(),
            outcome: Some(std::sync::Arc::new(outcome.clone())),
        };
        assert_eq!(closed(&closed_payload(&outcome)), announced);

        plan.process.as_mut().unwrap().result = Some(EncodedObject {
            encoding: "json".into(),
            data: "x".repeat(MAX_CLOSED_OUTCOME_BYTES),
        });
        let large = closed_outcome(&process, &plan).unwrap();
        assert_eq!(closed_payload(&large), process.id.to_string(), "id only");

        plan.process.as_mut().unwrap().status = Some(ProcessStatus::Running);
        assert!(closed_outcome(&process, &plan).is_none(), "not a close");
    }
}
