//! `QueueProcess`: one state waiting on a configurable command request over local queues
//! `a` and `b` (and timers); records the command results its execute received.

use serde_json::{json, Value};
use xdb_sdk::protocol::CommandResults as RawResults;
use xdb_sdk::*;

use super::Recorder;

pub const QUEUE_A: &str = "a";
pub const QUEUE_B: &str = "b";

#[derive(Debug, Clone)]
pub struct QueueProcess {
    pub request: CommandRequest,
    pub results: Recorder<RawResults>,
}

impl QueueProcess {
    pub fn new(request: CommandRequest) -> Self {
        Self {
            request,
            results: Recorder::new(),
        }
    }
}

impl Process for QueueProcess {
    fn state_schema(&self) -> StateSchema {
        StateSchema::with_starting_state(WaitQueuesState {
            request: self.request.clone(),
            results: self.results.clone(),
        })
    }

    fn communication_schema(&self) -> CommunicationSchema {
        CommunicationSchema::new()
            .local_queue(QUEUE_A)
            .local_queue(QUEUE_B)
    }
}

/// Completes with `{a: [...], b: [...]}`, the payloads it consumed per queue.
pub struct WaitQueuesState {
    request: CommandRequest,
    results: Recorder<RawResults>,
}

#[async_trait]
impl AsyncState for WaitQueuesState {
    type Input = ();
    const HAS_WAIT_UNTIL: bool = true;

    async fn wait_until(
        &self,
        _ctx: &Context,
        _input: (),
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<CommandRequest> {
        Ok(self.request.clone())
    }

    async fn execute(
        &self,
        _ctx: &Context,
        _input: (),
        results: &CommandResults,
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        self.results.push(results.raw().clone());
        let a: Vec<Value> = results.messages_from_queue(QUEUE_A)?;
        let b: Vec<Value> = results.messages_from_queue(QUEUE_B)?;
        Ok(StateDecision::graceful_complete_process(
            json!({ "a": a, "b": b }),
        ))
    }
}
