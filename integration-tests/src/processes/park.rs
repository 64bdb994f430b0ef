//! `ParkProcess`: waits on local queue `go`, then completes with the message and its
//! local attribute `tag`. Good for anything that needs a process that stays running.

use serde_json::{json, Value};
use xdb_sdk::*;

pub const QUEUE_GO: &str = "go";
pub const LOCAL_TAG: &str = "tag";

#[derive(Debug, Clone, Default)]
pub struct ParkProcess;

impl Process for ParkProcess {
    fn state_schema(&self) -> StateSchema {
        StateSchema::with_starting_state(ParkState)
    }

    fn persistence_schema(&self) -> PersistenceSchema {
        PersistenceSchema::new().local_attribute(LOCAL_TAG)
    }

    fn communication_schema(&self) -> CommunicationSchema {
        CommunicationSchema::new().local_queue(QUEUE_GO)
    }
}

/// Waits for one message on `go`; completes with `{message, tag}`.
pub struct ParkState;

#[async_trait]
impl AsyncState for ParkState {
    type Input = ();
    const HAS_WAIT_UNTIL: bool = true;

    async fn wait_until(
        &self,
        _ctx: &Context,
        _input: (),
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<CommandRequest> {
        Ok(CommandRequest::any_of(vec![Command::local_queue(QUEUE_GO)]))
    }

    async fn execute(
        &self,
        _ctx: &Context,
        _input: (),
        results: &CommandResults,
        persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        let messages: Vec<Value> = results.messages_from_queue(QUEUE_GO)?;
        let tag: Option<String> = persistence.get_local_attribute(LOCAL_TAG)?;
        Ok(StateDecision::graceful_complete_process(
            json!({ "message": messages.first(), "tag": tag }),
        ))
    }
}
