//! The operator's controls (`retry-now`, `give-up`, `pause`, `resume`, `reprioritize`) as
//! one value, so a command, its output and its call are chosen together.

use xdb_protocol::{
    ProcessExecutionControlRequest, ProcessExecutionControlResponse, Reprioritization,
};
use xdb_sdk::{Client, ClientError};

/// One of the controls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Control {
    RetryNow,
    GiveUp,
    Pause,
    Resume,
    /// The change travels with the control so the request and the output both show it.
    Reprioritize(Reprioritization),
}

impl Control {
    /// What the request carries besides its target: the change, for reprioritize only
    /// (the service refuses it on the other controls).
    pub fn reprioritization(&self) -> Option<&Reprioritization> {
        match self {
            Control::Reprioritize(change) => Some(change),
            _ => None,
        }
    }

    /// Sends this control through the SDK's client.
    pub async fn send(
        &self,
        client: &Client,
        request: &ProcessExecutionControlRequest,
    ) -> Result<ProcessExecutionControlResponse, ClientError> {
        match self {
            Control::RetryNow => client.retry_now(request).await,
            Control::GiveUp => client.give_up(request).await,
            Control::Pause => client.pause(request).await,
            Control::Resume => client.resume(request).await,
            Control::Reprioritize(_) => client.reprioritize(request).await,
        }
    }
}
