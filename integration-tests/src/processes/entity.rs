//! `EntityProcess`: RPCs over a `test_entity` row — a locked read-modify-write counter,
//! a write-and-publish, and one that fails — plus a state waiting for the published event.

use std::time::Duration;

use serde_json::{json, Value};
use xdb_sdk::protocol::{GlobalAttributeLoading, LockType};
use xdb_sdk::*;

use super::Recorder;

pub const TABLE: &str = "test_entity";
pub const COL_COUNTER: &str = "counter";
pub const COL_NOTE: &str = "note";
pub const LOCAL_LAST_NOTE: &str = "last_note";
pub const QUEUE_EVENTS: &str = "events";
pub const RPC_INCREMENT: &str = "increment";
pub const RPC_NOTE: &str = "note";
pub const RPC_FAIL: &str = "fail";
/// What the failing RPC's error says.
pub const FAIL_MESSAGE: &str = "the fail rpc fails on purpose";

#[derive(Debug, Clone, Default)]
pub struct EntityProcess {
    /// The context of every RPC call.
    pub rpc_calls: Recorder<Context>,
}

impl EntityProcess {
    /// `increment`: reads `counter` under the row lock, pauses so that unserialized
    /// callers would overlap, and writes `counter + 1`; answers the new value.
    async fn increment(
        &self,
        ctx: &Context,
        _input: (),
        persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<i32> {
        self.rpc_calls.push(ctx.clone());
        let counter: i32 = persistence.get_global_attribute(COL_COUNTER)?.unwrap_or(0);
        tokio::time::sleep(Duration::from_millis(50)).await;
        persistence.set_global_attribute(COL_COUNTER, counter + 1)?;
        Ok(counter + 1)
    }

    /// `note`: writes `note` and local `last_note`, and publishes the note to `events`.
    async fn note(
        &self,
        ctx: &Context,
        note: String,
        persistence: &mut Persistence,
        communication: &mut Communication,
    ) -> Result<String> {
        self.rpc_calls.push(ctx.clone());
        persistence.set_global_attribute(COL_NOTE, &note)?;
        persistence.set_local_attribute(LOCAL_LAST_NOTE, &note)?;
        communication.publish_to_local_queue(QUEUE_EVENTS, &note)?;
        Ok("noted".to_string())
    }

    /// `fail`: asks for writes and a publish, then fails.
    async fn fail(
        &self,
        ctx: &Context,
        _input: (),
        persistence: &mut Persistence,
        communication: &mut Communication,
    ) -> Result<String> {
        self.rpc_calls.push(ctx.clone());
        persistence.set_global_attribute(COL_NOTE, "written by a failed rpc")?;
        persistence.set_global_attribute(COL_COUNTER, 999)?;
        communication.publish_to_local_queue(QUEUE_EVENTS, "from a failed rpc")?;
        Err(FAIL_MESSAGE.into())
    }
}

impl Process for EntityProcess {
    fn state_schema(&self) -> StateSchema {
        StateSchema::with_starting_state(AwaitEventState)
    }

    fn persistence_schema(&self) -> PersistenceSchema {
        PersistenceSchema::with_table(TABLE, "id")
            .global_attribute(COL_COUNTER)
            .global_attribute(COL_NOTE)
            .local_attribute(LOCAL_LAST_NOTE)
    }

    fn communication_schema(&self) -> CommunicationSchema {
        CommunicationSchema::new().local_queue(QUEUE_EVENTS)
    }

    fn rpc_schema(&self) -> RpcSchema<Self> {
        let locked = RpcOptions {
            global_attribute_loading: Some(GlobalAttributeLoading {
                columns: vec![COL_COUNTER.into()],
                lock_type: LockType::ExclusiveLock,
            }),
            ..Default::default()
        };
        RpcSchema::new()
            .rpc_with_options(RPC_INCREMENT, Self::increment, locked)
            .rpc(RPC_NOTE, Self::note)
            .rpc(RPC_FAIL, Self::fail)
    }
}

/// Waits for one `events` message; completes with `{event, note, lastNote}` as loaded.
pub struct AwaitEventState;

#[async_trait]
impl AsyncState for AwaitEventState {
    type Input = ();
    const HAS_WAIT_UNTIL: bool = true;

    async fn wait_until(
        &self,
        _ctx: &Context,
        _input: (),
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<CommandRequest> {
        Ok(CommandRequest::any_of(vec![Command::local_queue(
            QUEUE_EVENTS,
        )]))
    }

    async fn execute(
        &self,
        _ctx: &Context,
        _input: (),
        results: &CommandResults,
        persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        let events: Vec<Value> = results.messages_from_queue(QUEUE_EVENTS)?;
        let note: Option<String> = persistence.get_global_attribute(COL_NOTE)?;
        let last_note: Option<String> = persistence.get_local_attribute(LOCAL_LAST_NOTE)?;
        Ok(StateDecision::graceful_complete_process(json!({
            "event": events.first(),
            "note": note,
            "lastNote": last_note,
        })))
    }
}
