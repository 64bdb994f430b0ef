//! `TimerProcess`: one state whose `waitUntil` asks for a durable timer and whose
//! `execute` completes the process, telling a [`TimerObserver`] when each ran. The
//! integration tests prove with it that a timer never fires early; the bench measures how
//! late timers fire. One definition serves both, so both measure the same process.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use xdb_sdk::*;

/// What a [`TimerProcess`]'s worker tells as it answers XDB's calls.
pub trait TimerObserver: Send + Sync + 'static {
    /// What the process completes with; `None` completes it with no output.
    const OUTPUT: Option<&'static str> = None;

    /// `ctx`'s `waitUntil` is about to answer with the timer.
    fn on_wait_until(&self, ctx: &Context);

    /// `ctx`'s `execute` was called at `at` (taken on entry); `fired` tells whether the
    /// timer had fired.
    fn on_execute(&self, ctx: &Context, at: SystemTime, fired: bool);
}

/// One state ([`SleepState`]) waiting for a timer of `delay`, then completing.
#[derive(Debug)]
pub struct TimerProcess<O> {
    pub delay: Duration,
    /// Shared with every copy of the state the worker holds.
    pub events: Arc<O>,
}

// Not derived: a derive would ask `O: Clone`, and the observer is shared, not copied.
impl<O> Clone for TimerProcess<O> {
    fn clone(&self) -> Self {
        Self {
            delay: self.delay,
            events: self.events.clone(),
        }
    }
}

impl<O: TimerObserver + Default> TimerProcess<O> {
    /// A timer of `delay`, told to a new observer.
    pub fn new(delay: Duration) -> Self {
        Self {
            delay,
            events: Arc::default(),
        }
    }
}

impl<O: TimerObserver> Process for TimerProcess<O> {
    fn state_schema(&self) -> StateSchema {
        StateSchema::with_starting_state(SleepState(self.clone()))
    }
}

/// The state of [`TimerProcess`].
pub struct SleepState<O>(TimerProcess<O>);

#[async_trait]
impl<O: TimerObserver> AsyncState for SleepState<O> {
    type Input = ();
    const HAS_WAIT_UNTIL: bool = true;

    async fn wait_until(
        &self,
        ctx: &Context,
        _input: (),
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<CommandRequest> {
        self.0.events.on_wait_until(ctx);
        Ok(CommandRequest::all_of(vec![Command::timer(self.0.delay)]))
    }

    async fn execute(
        &self,
        ctx: &Context,
        _input: (),
        results: &CommandResults,
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        self.0
            .events
            .on_execute(ctx, SystemTime::now(), results.timer_fired(0));
        Ok(StateDecision::graceful_complete_process(O::OUTPUT))
    }
}
