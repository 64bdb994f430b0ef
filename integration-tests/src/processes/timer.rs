//! `TimerProcess`: the shared [`xdb_samples::timer::TimerProcess`] recording what its
//! worker saw as [`TimerEvent`]s, to prove the timer never fires early.

use std::time::SystemTime;

use xdb_sdk::Context;

use super::Recorder;

pub use xdb_samples::timer::SleepState;

/// One state waiting on a durable timer; completes with `"woke"`.
pub type TimerProcess = xdb_samples::timer::TimerProcess<Recorder<TimerEvent>>;

/// What the worker saw, in the order it happened.
#[derive(Debug, Clone, PartialEq)]
pub enum TimerEvent {
    /// waitUntil is about to answer with the timer.
    WaitUntilAnswered(SystemTime),
    /// execute was called; whether the timer fired.
    Executed { at: SystemTime, fired: bool },
}

impl xdb_samples::timer::TimerObserver for Recorder<TimerEvent> {
    const OUTPUT: Option<&'static str> = Some("woke");

    fn on_wait_until(&self, _ctx: &Context) {
        self.push(TimerEvent::WaitUntilAnswered(SystemTime::now()));
    }

    fn on_execute(&self, _ctx: &Context, at: SystemTime, fired: bool) {
        self.push(TimerEvent::Executed { at, fired });
    }
}
