//! Messages published and states started by one call of user code.

use std::sync::Arc;

use serde::Serialize;
use xdb_protocol::LocalQueueMessage;

use crate::decision::NextState;
use crate::encoding;
use crate::error::XdbError;
use crate::schema::CommunicationSchema;
use crate::state::AsyncState;

/// Local-queue publishing (and, in RPCs, starting states) for one call.
///
/// Like attribute writes, messages are sent back in the response and take effect in the
/// transaction that records the call.
#[derive(Debug)]
pub struct Communication {
    process_type: String,
    schema: Arc<CommunicationSchema>,
    in_rpc: bool,
    messages: Vec<LocalQueueMessage>,
    state_movements: Vec<NextState>,
}

impl Communication {
    /// `in_rpc` allows [`Communication::trigger_state_movement`], which only RPCs may use:
    /// a state moves on through its decision instead.
    pub fn new(
        process_type: impl Into<String>,
        schema: Arc<CommunicationSchema>,
        in_rpc: bool,
    ) -> Self {
        Self {
            process_type: process_type.into(),
            schema,
            in_rpc,
            messages: Vec::new(),
            state_movements: Vec::new(),
        }
    }

    /// Publishes `payload` to this execution's local queue `queue_name` (a declared queue).
    /// Use `()` for a message without payload.
    pub fn publish_to_local_queue(
        &mut self,
        queue_name: &str,
        payload: impl Serialize,
    ) -> Result<(), XdbError> {
        self.publish(queue_name, &payload, None)
    }

    /// Like [`Communication::publish_to_local_queue`]; XDB drops a second message with the
    /// same `dedup_id` on the same queue of the same execution.
    pub fn publish_to_local_queue_with_dedup_id(
        &mut self,
        queue_name: &str,
        payload: impl Serialize,
        dedup_id: impl Into<String>,
    ) -> Result<(), XdbError> {
        self.publish(queue_name, &payload, Some(dedup_id.into()))
    }

    fn publish(
        &mut self,
        queue_name: &str,
        payload: &impl Serialize,
        dedup_id: Option<String>,
    ) -> Result<(), XdbError> {
        self.check_queue(queue_name)?;
        let payload =
            encoding::encode_optional(&format!("message to local queue {queue_name:?}"), payload)?;
        self.messages.push(LocalQueueMessage {
            queue_name: queue_name.to_string(),
            dedup_id,
            payload,
        });
        Ok(())
    }

    /// Starts state `S` as a new thread of the execution. RPCs only.
    pub fn trigger_state_movement<S: AsyncState>(
        &mut self,
        input: S::Input,
    ) -> Result<(), XdbError> {
        self.trigger(NextState::of::<S>(input))
    }

    /// Starts the state in `next` as a new thread of the execution. RPCs only.
    pub fn trigger(&mut self, next: NextState) -> Result<(), XdbError> {
        if !self.in_rpc {
            return Err(XdbError::NotAllowed(
                "trigger_state_movement is only allowed in RPCs; states move on through their decision"
                    .to_string(),
            ));
        }
        self.state_movements.push(next);
        Ok(())
    }

    pub(crate) fn check_queue(&self, queue_name: &str) -> Result<(), XdbError> {
        if self.schema.declares_local_queue(queue_name) {
            Ok(())
        } else {
            Err(XdbError::Undeclared {
                kind: "local queue",
                name: queue_name.to_string(),
                process_type: self.process_type.clone(),
            })
        }
    }

    /// Messages published so far.
    pub fn published(&self) -> &[LocalQueueMessage] {
        &self.messages
    }

    pub(crate) fn into_parts(self) -> (Vec<LocalQueueMessage>, Vec<NextState>) {
        (self.messages, self.state_movements)
    }
}
