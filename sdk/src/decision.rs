//! What `execute` returns: the next states, or how the thread closes.

use serde::Serialize;
use xdb_protocol::{EncodedObject, ThreadCloseType};

use crate::encoding;
use crate::error::XdbError;
use crate::state::AsyncState;

/// A state to move to, with its input. Its config comes from the state's registration.
///
/// Encoding failures are kept, not raised, so decisions stay one-liners; the worker
/// reports them as a failure of the call.
#[derive(Debug, Clone, PartialEq)]
pub struct NextState {
    pub(crate) state_id: String,
    pub(crate) input: Result<Option<EncodedObject>, XdbError>,
}

impl NextState {
    /// Move to state `S` with `input`.
    pub fn of<S: AsyncState>(input: S::Input) -> Self {
        let state_id = S::id();
        let input = encoding::encode_optional(&format!("input of state {state_id:?}"), &input);
        Self { state_id, input }
    }

    /// Move to the state registered as `state_id`, for states known only by id.
    pub fn by_id(state_id: impl Into<String>, input: impl Serialize) -> Self {
        let state_id = state_id.into();
        let input = encoding::encode_optional(&format!("input of state {state_id:?}"), &input);
        Self { state_id, input }
    }

    pub fn state_id(&self) -> &str {
        &self.state_id
    }

    /// The encoded input; `None` means the input was JSON `null`.
    pub fn input(&self) -> Result<Option<&EncodedObject>, &XdbError> {
        self.input.as_ref().map(Option::as_ref)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum DecisionKind {
    NextStates(Vec<NextState>),
    Close {
        close_type: ThreadCloseType,
        output: Result<Option<EncodedObject>, XdbError>,
    },
}

/// The outcome of `execute`.
#[derive(Debug, Clone, PartialEq)]
pub struct StateDecision {
    pub(crate) kind: DecisionKind,
}

impl StateDecision {
    /// Go on with state `S` in this thread.
    pub fn single_next_state<S: AsyncState>(input: S::Input) -> Self {
        Self::multiple_next_states(vec![NextState::of::<S>(input)])
    }

    /// Go on with several states; each runs as its own thread, in parallel.
    pub fn multiple_next_states(next_states: Vec<NextState>) -> Self {
        Self {
            kind: DecisionKind::NextStates(next_states),
        }
    }

    /// Complete the process with `output` once no other thread is running.
    pub fn graceful_complete_process(output: impl Serialize) -> Self {
        Self::close(ThreadCloseType::GracefulCompleteProcess, &output)
    }

    /// Complete the process now with `output`, ending every other thread.
    pub fn force_complete_process(output: impl Serialize) -> Self {
        Self::close(ThreadCloseType::ForceCompleteProcess, &output)
    }

    /// Fail the process now with `details`, ending every other thread.
    pub fn force_fail_process(details: impl Serialize) -> Self {
        Self::close(ThreadCloseType::ForceFailProcess, &details)
    }

    /// End this thread only; the process goes on if other threads run.
    pub fn dead_end() -> Self {
        Self::close(ThreadCloseType::DeadEnd, &())
    }

    fn close(close_type: ThreadCloseType, output: &impl Serialize) -> Self {
        Self {
            kind: DecisionKind::Close {
                close_type,
                output: encoding::encode_optional("process output", output),
            },
        }
    }

    /// The states this decision moves to (empty for a close).
    pub fn next_states(&self) -> &[NextState] {
        match &self.kind {
            DecisionKind::NextStates(states) => states,
            DecisionKind::Close { .. } => &[],
        }
    }

    /// How the thread closes, if it does.
    pub fn close_type(&self) -> Option<ThreadCloseType> {
        match &self.kind {
            DecisionKind::NextStates(_) => None,
            DecisionKind::Close { close_type, .. } => Some(*close_type),
        }
    }

    /// The encoded process output of a close (`None`: no output).
    pub fn output(&self) -> Option<Result<Option<&EncodedObject>, &XdbError>> {
        match &self.kind {
            DecisionKind::NextStates(_) => None,
            DecisionKind::Close { output, .. } => Some(output.as_ref().map(Option::as_ref)),
        }
    }
}
