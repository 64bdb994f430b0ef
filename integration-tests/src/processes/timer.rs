//! `TimerProcess`: one state that waits on a durable timer; records when its waitUntil
//! answered and when its execute ran, to prove the timer never fires early.

use std::time::{Duration, SystemTime};

use xdb_sdk::*;

use super::Recorder;

/// What the worker saw, in the order it happened.
#[derive(Debug, Clone, PartialEq)]
pub enum TimerEvent {
    /// waitUntil is about to answer with the timer.
    WaitUntilAnswered(SystemTime),
    /// execute was called; whether the timer fired.
    Executed { at: SystemTime, fired: bool },
}

#[derive(Debug, Clone)]
pub struct TimerProcess {
    pub delay: Duration,
    pub events: Recorder<TimerEvent>,
}

impl TimerProcess {
    pub fn new(delay: Duration) -> Self {
        Self {
            delay,
            events: Recorder::new(),
        }
    }
}

impl Process for TimerProcess {
    fn state_schema(&self) -> StateSchema {
        StateSchema::with_starting_state(SleepState {
            delay: self.delay,
            events: self.events.clone(),
        })
    }
}

pub struct SleepState {
    delay: Duration,
    events: Recorder<TimerEvent>,
}

#[async_trait]
impl AsyncState for SleepState {
    type Input = ();
    const HAS_WAIT_UNTIL: bool = true;

    async fn wait_until(
        &self,
        _ctx: &Context,
        _input: (),
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<CommandRequest> {
        self.events
            .push(TimerEvent::WaitUntilAnswered(SystemTime::now()));
        Ok(CommandRequest::all_of(vec![Command::timer(self.delay)]))
    }

    async fn execute(
        &self,
        _ctx: &Context,
        _input: (),
        results: &CommandResults,
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        self.events.push(TimerEvent::Executed {
            at: SystemTime::now(),
            fired: results.timer_fired(0),
        });
        Ok(StateDecision::graceful_complete_process("woke"))
    }
}
