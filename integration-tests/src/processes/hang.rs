//! `HangProcess`: the first execute call of each execution hangs (as if the async service
//! making it died mid-call) until the test releases the held calls or the state's
//! 60-second execute timeout passes; later calls write `note = "done"` and complete.
//! [`HangProcess::after_wait_until`] puts a `waitUntil` that waits for nothing first, so
//! that the execute task is the continuation of the instance that ran the `waitUntil`.

use std::ops::Deref;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use xdb_sdk::*;

use super::Recorder;

/// How long a held call lasts at most: the state's execute timeout.
const HOLD: Duration = Duration::from_secs(60);

#[derive(Debug, Clone)]
pub struct HangProcess {
    /// Every execute call, oldest first.
    pub calls: Recorder<HangCall>,
    release: Arc<watch::Sender<bool>>,
    wait_until_first: bool,
}

/// One execute call of [`HangProcess`]; reads as its [`Context`].
#[derive(Debug, Clone)]
pub struct HangCall {
    /// When the worker received the call.
    pub at: Instant,
    pub context: Context,
}

impl Deref for HangCall {
    type Target = Context;

    fn deref(&self) -> &Context {
        &self.context
    }
}

impl Default for HangProcess {
    fn default() -> Self {
        Self {
            calls: Recorder::new(),
            release: Arc::new(watch::channel(false).0),
            wait_until_first: false,
        }
    }
}

impl HangProcess {
    pub fn new() -> Self {
        Self::default()
    }

    /// The state runs a `waitUntil` that waits for nothing before its execute.
    pub fn after_wait_until() -> Self {
        Self {
            wait_until_first: true,
            ..Self::default()
        }
    }

    /// The execute calls of `execution`, oldest first.
    pub fn calls_of(&self, execution: &str) -> Vec<HangCall> {
        self.calls
            .all()
            .into_iter()
            .filter(|call| call.process_execution_id == execution)
            .collect()
    }

    /// Whether the state runs a `waitUntil` first ([`Self::after_wait_until`]).
    pub fn waits_first(&self) -> bool {
        self.wait_until_first
    }

    /// Ends every held call, and lets later first calls through at once: a worker
    /// that outlives its async-service instances must not hold their calls to the end.
    pub fn release(&self) {
        self.release.send_replace(true);
    }
}

impl Process for HangProcess {
    fn state_schema(&self) -> StateSchema {
        if self.wait_until_first {
            StateSchema::with_starting_state(HangAfterWaitUntilState(self.clone()))
        } else {
            StateSchema::with_starting_state(HangState(self.clone()))
        }
    }

    fn persistence_schema(&self) -> PersistenceSchema {
        PersistenceSchema::with_table("test_entity", "id").global_attribute("note")
    }
}

impl HangProcess {
    fn options() -> AsyncStateConfig {
        AsyncStateConfig {
            execute_api_timeout_seconds: Some(HOLD.as_secs() as u32),
            ..Default::default()
        }
    }

    /// The execute call: held when it is the execution's first.
    async fn execute(&self, ctx: &Context, persistence: &mut Persistence) -> Result<StateDecision> {
        let first = self.calls_of(&ctx.process_execution_id).is_empty();
        self.calls.push(HangCall {
            at: Instant::now(),
            context: ctx.clone(),
        });
        if first {
            let mut released = self.release.subscribe();
            let _ = tokio::time::timeout(HOLD, released.wait_for(|go| *go)).await;
        }
        persistence.set_global_attribute("note", "done")?;
        Ok(StateDecision::graceful_complete_process("done"))
    }
}

pub struct HangState(HangProcess);

#[async_trait]
impl AsyncState for HangState {
    type Input = ();

    fn options(&self) -> AsyncStateConfig {
        HangProcess::options()
    }

    async fn execute(
        &self,
        ctx: &Context,
        _input: (),
        _results: &CommandResults,
        persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        self.0.execute(ctx, persistence).await
    }
}

/// [`HangState`] after a `waitUntil` that waits for nothing.
pub struct HangAfterWaitUntilState(HangProcess);

#[async_trait]
impl AsyncState for HangAfterWaitUntilState {
    type Input = ();
    const HAS_WAIT_UNTIL: bool = true;

    fn options(&self) -> AsyncStateConfig {
        HangProcess::options()
    }

    async fn wait_until(
        &self,
        _ctx: &Context,
        _input: (),
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<CommandRequest> {
        Ok(CommandRequest::empty())
    }

    async fn execute(
        &self,
        ctx: &Context,
        _input: (),
        _results: &CommandResults,
        persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        self.0.execute(ctx, persistence).await
    }
}
