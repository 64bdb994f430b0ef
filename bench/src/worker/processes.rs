//! The processes the bench runs. Each is as small as the figure it measures allows, so
//! the figures show XDB's own cost, not the worker's. The timer scenario's process is the
//! one the integration tests run too ([`TimerProcess`]); the bench's [`Recorder`]
//! observes it.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use xdb_samples::timer::TimerObserver;
use xdb_sdk::*;

use super::recorder::Recorder;

/// The timer scenario's process: one state whose `waitUntil` asks for a durable timer;
/// `execute` notes when it was called and completes the process, with no output.
pub type TimerProcess = xdb_samples::timer::TimerProcess<Recorder>;

impl TimerObserver for Recorder {
    fn on_wait_until(&self, ctx: &Context) {
        self.wait_until_answered(&ctx.process_id);
    }

    fn on_execute(&self, ctx: &Context, at: SystemTime, _fired: bool) {
        self.executed(&ctx.process_id, at);
    }
}

/// The local queue [`QueueProcess`] and [`WaitingProcess`] wait on.
pub const QUEUE: &str = "go";
/// The RPC of [`QueueProcess`]: answers its input.
pub const RPC_ECHO: &str = "echo";

/// Two states, no attributes, no queues: measures XDB's own overhead.
/// `StateA` → `StateB` → graceful complete, neither with a `waitUntil`, so each process
/// costs two `execute` calls.
#[derive(Debug, Default, Clone, Copy)]
pub struct BenchProcess;

impl Process for BenchProcess {
    fn state_schema(&self) -> StateSchema {
        StateSchema::with_starting_state(StateA).state(StateB)
    }
}

/// Moves straight on to [`StateB`].
pub struct StateA;

#[async_trait]
impl AsyncState for StateA {
    type Input = ();

    async fn execute(
        &self,
        _ctx: &Context,
        _input: (),
        _results: &CommandResults,
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        Ok(StateDecision::single_next_state::<StateB>(()))
    }
}

/// Completes the process.
pub struct StateB;

#[async_trait]
impl AsyncState for StateB {
    type Input = ();

    async fn execute(
        &self,
        _ctx: &Context,
        _input: (),
        _results: &CommandResults,
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        Ok(StateDecision::graceful_complete_process(()))
    }
}

/// One state waiting for a message on [`QUEUE`]; `execute` notes when it was called and
/// completes the process. While it waits, RPC [`RPC_ECHO`] can be called on it.
#[derive(Debug, Clone)]
pub struct QueueProcess {
    pub recorder: Arc<Recorder>,
}

impl QueueProcess {
    /// Answers its input: the RPC round trip with no attribute to load or write.
    async fn echo(
        &self,
        _ctx: &Context,
        input: u64,
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<u64> {
        Ok(input)
    }
}

impl Process for QueueProcess {
    fn state_schema(&self) -> StateSchema {
        StateSchema::with_starting_state(QueueState(self.recorder.clone()))
    }

    fn communication_schema(&self) -> CommunicationSchema {
        CommunicationSchema::new().local_queue(QUEUE)
    }

    fn rpc_schema(&self) -> RpcSchema<Self> {
        RpcSchema::new().rpc(RPC_ECHO, Self::echo)
    }
}

/// The state of [`QueueProcess`].
pub struct QueueState(Arc<Recorder>);

#[async_trait]
impl AsyncState for QueueState {
    type Input = ();
    const HAS_WAIT_UNTIL: bool = true;

    async fn wait_until(
        &self,
        ctx: &Context,
        _input: (),
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<CommandRequest> {
        self.0.wait_until_answered(&ctx.process_id);
        Ok(CommandRequest::any_of(vec![Command::local_queue(QUEUE)]))
    }

    async fn execute(
        &self,
        ctx: &Context,
        _input: (),
        _results: &CommandResults,
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        self.0.executed(&ctx.process_id, SystemTime::now());
        Ok(StateDecision::graceful_complete_process(()))
    }
}

/// One state waiting for a far timer or a message on [`QUEUE`], whichever comes first:
/// the process that sits in the database while others run. Both kinds of wait are held
/// at once, so the async service keeps a timer row and a queue wait for each.
#[derive(Debug, Clone)]
pub struct WaitingProcess {
    pub recorder: Arc<Recorder>,
    pub delay: Duration,
}

impl Process for WaitingProcess {
    fn state_schema(&self) -> StateSchema {
        StateSchema::with_starting_state(WaitingState(self.clone()))
    }

    fn communication_schema(&self) -> CommunicationSchema {
        CommunicationSchema::new().local_queue(QUEUE)
    }
}

/// The state of [`WaitingProcess`].
pub struct WaitingState(WaitingProcess);

#[async_trait]
impl AsyncState for WaitingState {
    type Input = ();
    const HAS_WAIT_UNTIL: bool = true;

    async fn wait_until(
        &self,
        _ctx: &Context,
        _input: (),
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<CommandRequest> {
        self.0.recorder.counted_waiting();
        Ok(CommandRequest::any_of(vec![
            Command::timer(self.0.delay),
            Command::local_queue(QUEUE),
        ]))
    }

    async fn execute(
        &self,
        _ctx: &Context,
        _input: (),
        _results: &CommandResults,
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        Ok(StateDecision::graceful_complete_process(()))
    }
}
