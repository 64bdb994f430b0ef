//! The operator's controls (`retry-now`, `give-up`, `pause`, `resume`) as one value, so a
//! command, its output and its call are chosen together.

use xdb_protocol::{ProcessExecutionControlRequest, ProcessExecutionControlResponse};
use xdb_sdk::{Client, ClientError};

/// One of the controls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    RetryNow,
    GiveUp,
    Pause,
    Resume,
}

impl Control {
    /// Sends this control through the SDK's client.
    pub async fn send(
        self,
        client: &Client,
        request: &ProcessExecutionControlRequest,
    ) -> Result<ProcessExecutionControlResponse, ClientError> {
        match self {
            Control::RetryNow => client.retry_now(request).await,
            Control::GiveUp => client.give_up(request).await,
            Control::Pause => client.pause(request).await,
            Control::Resume => client.resume(request).await,
        }
    }
}
