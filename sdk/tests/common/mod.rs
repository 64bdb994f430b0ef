//! A small process used by the SDK tests: a counter that waits for "go" messages.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use xdb_sdk::*;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ticket {
    pub n: u32,
}

pub struct StartState;

#[async_trait]
impl AsyncState for StartState {
    type Input = Ticket;

    async fn execute(
        &self,
        _ctx: &Context,
        input: Ticket,
        _results: &CommandResults,
        persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        if input.n == 0 {
            return Err("ticket number must be positive".into());
        }
        persistence.set_global_attribute("status", "started")?;
        persistence.set_local_attribute("count", input.n)?;
        Ok(StateDecision::multiple_next_states(vec![
            NextState::of::<WaitState>(()),
            NextState::of::<WaitState>(()),
        ]))
    }
}

pub struct WaitState;

#[async_trait]
impl AsyncState for WaitState {
    type Input = ();
    const HAS_WAIT_UNTIL: bool = true;

    fn options(&self) -> AsyncStateConfig {
        AsyncStateConfig {
            execute_api_timeout_seconds: Some(30),
            global_attribute_loading: Some(GlobalAttributeLoading {
                columns: vec!["status".into()],
                lock_type: LockType::ExclusiveLock,
            }),
            ..Default::default()
        }
    }

    async fn wait_until(
        &self,
        _ctx: &Context,
        _input: (),
        _persistence: &mut Persistence,
        communication: &mut Communication,
    ) -> Result<CommandRequest> {
        communication.publish_to_local_queue("audit", "waiting")?;
        Ok(CommandRequest::any_of(vec![
            Command::timer(Duration::from_secs(5)),
            Command::local_queue("go"),
        ]))
    }

    async fn execute(
        &self,
        _ctx: &Context,
        _input: (),
        results: &CommandResults,
        persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        if results.local_queue_received(0) {
            let who: Vec<String> = results.local_queue_messages(0)?;
            persistence.set_global_attribute("status", format!("done by {}", who.join(",")))?;
            Ok(StateDecision::graceful_complete_process(who))
        } else {
            Ok(StateDecision::dead_end())
        }
    }
}

#[derive(Default)]
pub struct CounterProcess;

impl CounterProcess {
    async fn bump(
        &self,
        _ctx: &Context,
        by: u32,
        persistence: &mut Persistence,
        communication: &mut Communication,
    ) -> Result<u32> {
        let count: u32 = persistence.get_local_attribute("count")?.unwrap_or(0);
        persistence.set_local_attribute("count", count + by)?;
        communication.publish_to_local_queue("go", "rpc")?;
        communication.trigger_state_movement::<WaitState>(())?;
        Ok(count + by)
    }
}

impl Process for CounterProcess {
    fn state_schema(&self) -> StateSchema {
        StateSchema::with_starting_state(StartState).state(WaitState)
    }

    fn persistence_schema(&self) -> PersistenceSchema {
        PersistenceSchema::with_table("counter", "id")
            .global_attribute("status")
            .global_attribute("owner")
            .local_attribute("count")
    }

    fn communication_schema(&self) -> CommunicationSchema {
        CommunicationSchema::new()
            .local_queue("go")
            .local_queue("audit")
    }

    fn rpc_schema(&self) -> RpcSchema<Self> {
        RpcSchema::new().rpc("bump", Self::bump)
    }
}
