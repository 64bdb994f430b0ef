//! XDB's own delayed messages: a task due later is a [`TaskTimer`] on the timer topic,
//! published with `deliverAt` = its due time.

use std::time::SystemTime;

use chrono::{DateTime, Utc};
use prost::Message as _;
use pulsar::{Producer, TokioExecutor};
use tokio::sync::Mutex;

use super::permits::PlaceRequest;

/// `xdb.pulsar.v1.TaskTimer` of `proto/xdb_pulsar.proto`, the contract; written out
/// with prost's derive rather than generated, so building needs no `protoc`. A test
/// keeps the field numbers and types in step with the `.proto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TaskTimer {
    /// `xdb_sys_tasks.id`.
    #[prost(int64, tag = "1")]
    pub task_id: i64,
    /// The execution the task belongs to; also the message key.
    #[prost(string, tag = "2")]
    pub process_execution_id: String,
    /// When the task is due, Unix epoch milliseconds.
    #[prost(int64, tag = "3")]
    pub due_at_millis: i64,
    /// The priority of the task's execution; 0 (absent): the default.
    #[prost(uint32, tag = "4")]
    pub priority: u32,
    /// The task's fairness key; empty (absent): none.
    #[prost(string, tag = "5")]
    pub fairness_key: String,
    /// The fairness key's weight; 0 (absent): the default.
    #[prost(uint32, tag = "6")]
    pub fairness_weight: u32,
}

impl TaskTimer {
    /// The timer of task `task_id` of `execution`, due at `due_at`, waiting for a place
    /// with `place`.
    pub(crate) fn new(
        task_id: i64,
        execution: &str,
        due_at: DateTime<Utc>,
        place: &PlaceRequest,
    ) -> Self {
        Self {
            task_id,
            process_execution_id: execution.to_string(),
            due_at_millis: due_at.timestamp_millis().max(0),
            priority: u32::from(place.priority),
            fairness_key: place.fairness_key.clone(),
            fairness_weight: place.fairness_weight,
        }
    }

    /// The priority and fairness key the timer's task waits for a place with.
    pub(crate) fn place(&self) -> PlaceRequest {
        PlaceRequest {
            priority: super::permits::priority_or_default(i64::from(self.priority)),
            fairness_key: self.fairness_key.clone(),
            fairness_weight: match self.fairness_weight {
                0 => xdb_protocol::fairness::DEFAULT_WEIGHT,
                weight => weight,
            },
        }
    }
}

/// Publishes timer messages; one producer shared by the instance's handlers.
pub(crate) struct TimerPublisher {
    producer: Mutex<Producer<TokioExecutor>>,
}

impl TimerPublisher {
    pub fn new(producer: Producer<TokioExecutor>) -> Self {
        Self {
            producer: Mutex::new(producer),
        }
    }

    /// Publishes a timer for `task_id` (waiting for a place with `place`), to be
    /// delivered at `due_at`, and waits for the broker's receipt: only then may the
    /// message that asked for it be acknowledged.
    pub async fn publish(
        &self,
        task_id: i64,
        execution: &str,
        due_at: DateTime<Utc>,
        place: &PlaceRequest,
    ) -> Result<(), pulsar::Error> {
        let timer = TaskTimer::new(task_id, execution, due_at, place);
        let receipt = {
            let mut producer = self.producer.lock().await;
            let mut message = producer
                .create_message()
                .with_content(timer.encode_to_vec())
                .deliver_at(SystemTime::from(due_at))
                .expect("the due time is after the epoch");
            if !execution.is_empty() {
                message = message.with_key(execution);
            }
            message.send_non_blocking().await?
        };
        receipt.await?;
        Ok(())
    }
}

/// Decodes a timer message's payload.
pub(crate) fn decode(payload: &[u8]) -> Result<TaskTimer, prost::DecodeError> {
    TaskTimer::decode(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_matches_the_proto_file() {
        let proto = include_str!("../../proto/xdb_pulsar.proto");
        for field in [
            "int64 task_id = 1;",
            "string process_execution_id = 2;",
            "int64 due_at_millis = 3;",
            "uint32 priority = 4;",
            "string fairness_key = 5;",
            "uint32 fairness_weight = 6;",
        ] {
            assert!(proto.contains(field), "{field} is not in the .proto");
        }
        assert!(proto.contains("package xdb.pulsar.v1;") && proto.contains("message TaskTimer {"));
    }

    #[test]
    fn a_timer_round_trips_through_its_protobuf_encoding() {
        let timer = TaskTimer {
            task_id: 42,
            process_execution_id: "0190c5a4-0000-7000-8000-000000000001".into(),
            due_at_millis: 1_700_000_000_123,
            priority: 1,
            fairness_key: "tenant-a".into(),
            fairness_weight: 2,
        };
        let bytes = timer.encode_to_vec();
        // Field 1 (task_id, varint) comes first: the wire format of the .proto.
        assert_eq!(&bytes[..2], &[0x08, 42]);
        assert_eq!(decode(&bytes).unwrap(), timer);
        assert!(decode(&[0xff, 0xff]).is_err());
        let place = decode(&bytes).unwrap().place();
        assert_eq!(
            (
                place.priority,
                place.fairness_key.as_str(),
                place.fairness_weight
            ),
            (1, "tenant-a", 2)
        );
        // From a service before priorities and fairness keys: no fields 4 to 6, the
        // defaults.
        let older = TaskTimer {
            priority: 0,
            fairness_key: String::new(),
            fairness_weight: 0,
            ..timer
        };
        assert_eq!(
            decode(&older.encode_to_vec()).unwrap().place(),
            PlaceRequest::keyless(3)
        );
    }
}
