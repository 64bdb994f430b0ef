//! The `AsyncState` trait users implement, and its type-erased form the worker calls.

use std::marker::PhantomData;

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde::Serialize;
use xdb_protocol::{AsyncStateConfig, Context, EncodedObject};

use crate::command::{CommandRequest, CommandResults};
use crate::communication::Communication;
use crate::decision::StateDecision;
use crate::encoding;
use crate::error::{InvokeError, Result, XdbError};
use crate::persistence::Persistence;

/// The last path segment of a type's name, without generic arguments:
/// `my_app::signup::VerifyState` → `VerifyState`.
pub fn short_type_name<T: ?Sized>() -> String {
    let full = std::any::type_name::<T>();
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base).to_string()
}

/// A step of a process. XDB calls `wait_until` (when the state has one), waits for the
/// commands it returns, then calls `execute`, which decides what follows.
///
/// ```text
/// struct SubmitState;
/// #[async_trait]
/// impl AsyncState for SubmitState {
///     type Input = ();
///     async fn execute(&self, _ctx: &Context, _input: (), _results: &CommandResults,
///         persistence: &mut Persistence, _comm: &mut Communication) -> Result<StateDecision> {
///         Ok(StateDecision::single_next_state::<VerifyState>(()))
///     }
/// }
/// ```
#[async_trait]
pub trait AsyncState: Send + Sync + 'static {
    /// The state's input, JSON-encoded on the wire. An absent input reads as `null`, so
    /// use `()` or an `Option` for states that take none.
    type Input: Serialize + DeserializeOwned + Send + 'static;

    /// Set to `true` when implementing [`AsyncState::wait_until`]. Rust cannot see whether
    /// a default method was overridden, and XDB must know before calling: with `false` the
    /// SDK sends `skipWaitUntil: true` and XDB goes straight to `execute`.
    const HAS_WAIT_UNTIL: bool = false;

    /// The state id, unique within its process; the type's short name by default.
    fn id() -> String {
        short_type_name::<Self>()
    }

    /// Timeouts, retry policies, failure recovery and loading policies of this state.
    /// Loading policies left `None` load every declared attribute without a lock;
    /// `skipWaitUntil` is always taken from [`AsyncState::HAS_WAIT_UNTIL`].
    fn options(&self) -> AsyncStateConfig {
        AsyncStateConfig::default()
    }

    /// Limits on this state's worker calls across all async instances:
    /// `max_calls_per_second` (a rate) and `max_concurrent_calls` (at most so many calls
    /// running at once), either or both; declared when the worker registers its
    /// definitions, and an operator may override them at run time.
    fn flow_limits(&self) -> Option<xdb_protocol::FlowLimits> {
        None
    }

    /// Returns what XDB waits for before `execute`. Only called when `HAS_WAIT_UNTIL`.
    async fn wait_until(
        &self,
        _ctx: &Context,
        _input: Self::Input,
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<CommandRequest> {
        Err(XdbError::WaitUntilNotImplemented {
            state_id: Self::id(),
        }
        .into())
    }

    /// Decides what follows this state.
    async fn execute(
        &self,
        ctx: &Context,
        input: Self::Input,
        command_results: &CommandResults,
        persistence: &mut Persistence,
        communication: &mut Communication,
    ) -> Result<StateDecision>;
}

/// An [`AsyncState`] with its input type erased, so one process can hold many.
#[async_trait]
pub(crate) trait ErasedState: Send + Sync {
    fn id(&self) -> String;
    fn has_wait_until(&self) -> bool;
    fn options(&self) -> AsyncStateConfig;
    fn flow_limits(&self) -> Option<xdb_protocol::FlowLimits>;
    async fn wait_until(
        &self,
        ctx: &Context,
        input: Option<&EncodedObject>,
        persistence: &mut Persistence,
        communication: &mut Communication,
    ) -> std::result::Result<CommandRequest, InvokeError>;
    async fn execute(
        &self,
        ctx: &Context,
        input: Option<&EncodedObject>,
        command_results: &CommandResults,
        persistence: &mut Persistence,
        communication: &mut Communication,
    ) -> std::result::Result<StateDecision, InvokeError>;
}

pub(crate) struct TypedState<S: AsyncState> {
    state: S,
    _marker: PhantomData<fn() -> S>,
}

impl<S: AsyncState> TypedState<S> {
    pub(crate) fn new(state: S) -> Self {
        Self {
            state,
            _marker: PhantomData,
        }
    }

    fn decode_input(input: Option<&EncodedObject>) -> std::result::Result<S::Input, InvokeError> {
        encoding::decode(&format!("input of state {:?}", S::id()), input)
            .map_err(|e| InvokeError::UndecodableInput(e.to_string()))
    }
}

#[async_trait]
impl<S: AsyncState> ErasedState for TypedState<S> {
    fn id(&self) -> String {
        S::id()
    }

    fn has_wait_until(&self) -> bool {
        S::HAS_WAIT_UNTIL
    }

    fn options(&self) -> AsyncStateConfig {
        self.state.options()
    }

    fn flow_limits(&self) -> Option<xdb_protocol::FlowLimits> {
        self.state.flow_limits()
    }

    async fn wait_until(
        &self,
        ctx: &Context,
        input: Option<&EncodedObject>,
        persistence: &mut Persistence,
        communication: &mut Communication,
    ) -> std::result::Result<CommandRequest, InvokeError> {
        if !S::HAS_WAIT_UNTIL {
            return Err(InvokeError::NotImplemented(
                XdbError::WaitUntilNotImplemented { state_id: S::id() }.to_string(),
            ));
        }
        let input = Self::decode_input(input)?;
        self.state
            .wait_until(ctx, input, persistence, communication)
            .await
            .map_err(InvokeError::from_user)
    }

    async fn execute(
        &self,
        ctx: &Context,
        input: Option<&EncodedObject>,
        command_results: &CommandResults,
        persistence: &mut Persistence,
        communication: &mut Communication,
    ) -> std::result::Result<StateDecision, InvokeError> {
        let input = Self::decode_input(input)?;
        self.state
            .execute(ctx, input, command_results, persistence, communication)
            .await
            .map_err(InvokeError::from_user)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    mod inner {
        pub struct Generic<T>(pub T);
    }

    #[test]
    fn short_type_name_strips_path_and_generics() {
        assert_eq!(short_type_name::<inner::Generic<String>>(), "Generic");
        assert_eq!(short_type_name::<u32>(), "u32");
    }
}
