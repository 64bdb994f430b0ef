//! The operator's calls: what an execution waits on, and the controls that unstick it.

use xdb_protocol::paths;
use xdb_protocol::*;

use super::retry::Repeat;
use super::{Client, ClientError};

impl Client {
    /// The state executions of an execution: the call each waits on and in which phase
    /// (scheduled, running, parked, paused), its last failure, what its commands wait for.
    pub async fn states(
        &self,
        request: &ProcessExecutionStatesRequest,
    ) -> Result<ProcessExecutionStatesResponse, ClientError> {
        self.call(paths::STATES, request, Repeat::Safe).await
    }

    /// Calls waiting out a retry backoff become due at once (attempt counts kept); parked
    /// tasks go back to the queue. `CONTROL_NOT_APPLICABLE` when none waits so, an
    /// attempt is running, or the execution is paused.
    pub async fn retry_now(
        &self,
        request: &ProcessExecutionControlRequest,
    ) -> Result<ProcessExecutionControlResponse, ClientError> {
        self.call_idempotent(paths::RETRY_NOW, request).await
    }

    /// A state whose call failed and waits for its next attempt (or is parked) goes to its
    /// failure recovery now, as if its retries ran out.
    pub async fn give_up(
        &self,
        request: &ProcessExecutionControlRequest,
    ) -> Result<ProcessExecutionControlResponse, ClientError> {
        self.call_idempotent(paths::GIVE_UP, request).await
    }

    /// Holds the execution: none of its states' calls or timers run until [`Self::resume`].
    pub async fn pause(
        &self,
        request: &ProcessExecutionControlRequest,
    ) -> Result<ProcessExecutionControlResponse, ClientError> {
        self.call_idempotent(paths::PAUSE, request).await
    }

    /// Releases a paused execution: what fell due meanwhile runs now.
    pub async fn resume(
        &self,
        request: &ProcessExecutionControlRequest,
    ) -> Result<ProcessExecutionControlResponse, ClientError> {
        self.call_idempotent(paths::RESUME, request).await
    }

    /// Changes an execution's priority or fairness key (`request.reprioritize`; a field
    /// left out stays), and its waiting tasks', so they are claimed in the new order.
    pub async fn reprioritize(
        &self,
        request: &ProcessExecutionControlRequest,
    ) -> Result<ProcessExecutionControlResponse, ClientError> {
        self.call_idempotent(paths::REPRIORITIZE, request).await
    }

    /// Restarts an execution from a named state: a running one in place (its open
    /// states aborted, their calls, timers and waits cancelled), a closed one as a new
    /// execution of its process id; answers the execution that continues.
    pub async fn reset(
        &self,
        request: &ProcessExecutionResetRequest,
    ) -> Result<ProcessExecutionResetResponse, ClientError> {
        self.call_idempotent(paths::RESET, request).await
    }
}
