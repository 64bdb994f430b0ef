//! The dead-letter path: a message whose task could not be handled `pulsar.max_deliveries`
//! times (its transition refused by the database, or the task not even claimable) goes to
//! `<topic.prefix>.xdb.dead-letters`, and its consumer gives the task one last run and
//! otherwise parks it (`xdb_sys_parked_tasks`, `TASK_PARKED` in the history), as the
//! database queue parks a task whose transition the database keeps refusing.
//!
//! Worker failures never get here: a failed attempt is recorded in the task row (attempt
//! count, backoff), whose change event brings the retry, and exhausted retries apply the
//! failure recovery on the normal path. A message is delivered again only when its
//! transition could not be recorded at all (the database refused it or was unreachable).
//! Failing that many times, it is a poison message: the transition cannot be written. A
//! parked task shows in `states` and `describe` with its error; once the cause is fixed,
//! retry-now puts it back (its row inserted again, whose change event brings it here),
//! or give-up applies its state's failure recovery.
//!
//! The last run comes first because a long database outage also sends messages here:
//! once the database is back, the task simply runs. Parking needs the database too: while
//! it is away the message stays on the dead-letter subscription.

use prost::Message as _;
use pulsar::{Producer, TokioExecutor};
use tokio::sync::Mutex;
use xdb_engine::Task;
use xdb_persistence::{SetAside, StoreError};

use super::permits::PlaceRequest;
use super::{events, timer, Shared, Verdict};

/// Publishes messages to the dead-letter topic as they came (payload and key).
pub(super) struct DeadLetterPublisher {
    producer: Mutex<Producer<TokioExecutor>>,
}

impl DeadLetterPublisher {
    pub fn new(producer: Producer<TokioExecutor>) -> Self {
        Self {
            producer: Mutex::new(producer),
        }
    }

    /// Publishes and waits for the broker's receipt: only then may the original be
    /// acknowledged.
    pub async fn publish(&self, payload: &[u8], execution: &str) -> Result<(), pulsar::Error> {
        let receipt = {
            let mut producer = self.producer.lock().await;
            let mut message = producer.create_message().with_content(payload.to_vec());
            if !execution.is_empty() {
                message = message.with_key(execution);
            }
            message.send_non_blocking().await?
        };
        receipt.await?;
        Ok(())
    }

    /// Publishes a [`timer::TaskTimer`] naming `task`, for a task that came with no
    /// message (a continuation, or a task the sweep claimed).
    pub async fn publish_task(
        &self,
        task: &Task,
        place: &PlaceRequest,
    ) -> Result<(), pulsar::Error> {
        let execution = task.process_execution_id.to_string();
        let timer = timer::TaskTimer::new(task.id, &execution, task.fire_at, place);
        self.publish(&timer.encode_to_vec(), &execution).await
    }
}

/// The task a dead letter names, and its execution (the message key), or why none.
///
/// Both kinds of message end up here: Debezium change events and XDB's own `TaskTimer`s
/// (protobuf, whose first byte is a field tag: never 0, and never `{` or 0xff for a
/// `TaskTimer`, whose first field is 1). A change event is JSON (`{`) or, as Pulsar IO
/// publishes it, an INLINE key/value pair, whose 4-byte big-endian key length starts
/// with 0x00 (or 0xff for no key).
pub(super) fn task_of(payload: &[u8]) -> Result<Option<(i64, String)>, String> {
    if matches!(payload.first(), Some(b'{' | 0x00 | 0xff)) {
        return match events::classify(payload)? {
            events::TaskChange::Look {
                task_id, execution, ..
            } => Ok(Some((task_id, execution))),
            events::TaskChange::Ignore => Ok(None),
        };
    }
    let timer = timer::decode(payload).map_err(|e| format!("neither JSON nor a TaskTimer: {e}"))?;
    Ok(Some((timer.task_id, timer.process_execution_id)))
}

/// The last run of `task` failed with `error`: parks it, as the database queue parks a
/// task whose transition the database keeps refusing, until an operator's retry-now (or
/// give-up, for a state's call). Acknowledged once parked (or when the task moved on
/// meanwhile); delivered again when the database cannot record even that.
pub(super) async fn park(
    shared: &Shared,
    task: &Task,
    error: &StoreError,
    failures: u32,
) -> Verdict {
    let context = &shared.context;
    let why = SetAside::Refused {
        error: crate::scheduling::set_aside_reason(error, failures),
        refusals: failures,
    };
    match context.store.set_aside(task, &context.owner, &why).await {
        Ok(_) => {
            context.metrics.tasks_parked.inc();
            tracing::warn!(task = task.id, %error, "dead letter: task parked until retry-now");
            Verdict::Ack
        }
        Err(StoreError::Stale(reason)) => {
            tracing::debug!(task = task.id, %reason, "dead-lettered task is stale");
            Verdict::Ack
        }
        Err(error) => {
            tracing::warn!(task = task.id, %error, "parking a dead-lettered task failed");
            Verdict::Nack
        }
    }
}

#[cfg(test)]
mod tests {
    use prost::Message as _;

    use super::*;

    #[test]
    fn dead_letters_of_both_kinds_name_their_task() {
        let event = serde_json::to_vec(&serde_json::json!({
            "schema": {"type": "struct"},
            "payload": {"op": "c", "after": {"id": 5, "lease_owner": null, "process_execution_id": "e5"}}
        }))
        .unwrap();
        assert_eq!(task_of(&event), Ok(Some((5, "e5".into()))));
        let timer = timer::TaskTimer {
            task_id: 9,
            process_execution_id: "e9".into(),
            due_at_millis: 1,
            priority: 1,
            ..Default::default()
        };
        assert_eq!(task_of(&timer.encode_to_vec()), Ok(Some((9, "e9".into()))));
        let delete = br#"{"op": "d", "before": {"id": 5}, "after": null}"#;
        assert_eq!(task_of(delete), Ok(None));
        assert!(task_of(&[0xff, 0xff]).is_err());
    }

    #[test]
    fn a_dead_lettered_pulsar_io_change_event_names_its_task() {
        // A message of Pulsar IO's debezium-postgres source, recorded from the real
        // connector (see events.rs): an INLINE key/value pair.
        let message = include_bytes!("testdata/pulsar-io-debezium-postgres-snapshot.bin");
        assert_eq!(
            task_of(message),
            Ok(Some((1, "5a3d0698-7c33-4f3e-b4a6-ed5ecddf3e8e".into())))
        );
    }
}
