//! `ThreadsProcess`: decisions over parallel threads. `Fork` starts three threads:
//! `Repeat` re-enters itself until its count runs out and then dead-ends; `Hold` waits
//! on queue `release` and dead-ends; `Finish` waits on queue `finish` and then decides
//! what the process was built with ([`Ending`]).

use serde::{Deserialize, Serialize};
use xdb_sdk::*;

pub const QUEUE_RELEASE: &str = "release";
pub const QUEUE_FINISH: &str = "finish";

/// What `Finish` decides once told to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Ending {
    GracefulComplete,
    ForceComplete,
    ForceFail,
}

#[derive(Debug, Clone)]
pub struct ThreadsProcess {
    pub ending: Ending,
    /// How many times `Repeat` runs in all.
    pub repeats: u32,
}

impl Process for ThreadsProcess {
    fn state_schema(&self) -> StateSchema {
        StateSchema::with_starting_state(Fork {
            repeats: self.repeats,
        })
        .state(Repeat)
        .state(Hold)
        .state(Finish {
            ending: self.ending,
        })
    }

    fn communication_schema(&self) -> CommunicationSchema {
        CommunicationSchema::new()
            .local_queue(QUEUE_RELEASE)
            .local_queue(QUEUE_FINISH)
    }
}

pub struct Fork {
    repeats: u32,
}

#[async_trait]
impl AsyncState for Fork {
    type Input = ();

    async fn execute(
        &self,
        _ctx: &Context,
        _input: (),
        _results: &CommandResults,
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        Ok(StateDecision::multiple_next_states(vec![
            NextState::of::<Repeat>(self.repeats),
            NextState::of::<Hold>(()),
            NextState::of::<Finish>(()),
        ]))
    }
}

/// Runs `left` more times, one state execution each, then ends its thread.
pub struct Repeat;

#[async_trait]
impl AsyncState for Repeat {
    type Input = u32;

    async fn execute(
        &self,
        _ctx: &Context,
        left: u32,
        _results: &CommandResults,
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        if left > 1 {
            Ok(StateDecision::single_next_state::<Repeat>(left - 1))
        } else {
            Ok(StateDecision::dead_end())
        }
    }
}

/// Keeps its thread running until a message on `release`.
pub struct Hold;

#[async_trait]
impl AsyncState for Hold {
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
            QUEUE_RELEASE,
        )]))
    }

    async fn execute(
        &self,
        _ctx: &Context,
        _input: (),
        _results: &CommandResults,
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        Ok(StateDecision::dead_end())
    }
}

/// Waits for a message on `finish`, then decides the process's ending.
pub struct Finish {
    ending: Ending,
}

#[async_trait]
impl AsyncState for Finish {
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
            QUEUE_FINISH,
        )]))
    }

    async fn execute(
        &self,
        _ctx: &Context,
        _input: (),
        _results: &CommandResults,
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        Ok(match self.ending {
            Ending::GracefulComplete => StateDecision::graceful_complete_process("graceful"),
            Ending::ForceComplete => StateDecision::force_complete_process("forced"),
            Ending::ForceFail => StateDecision::force_fail_process("gave up"),
        })
    }
}
