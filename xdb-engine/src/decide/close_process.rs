//! Closing an execution from outside its states: stop and timeout.

use chrono::{DateTime, Utc};
use xdb_protocol::{ProcessExecutionStopType, ProcessFailure, ProcessStatus};

use super::{check_running, close, DecideError};
use crate::model::*;
use crate::plan::*;

pub fn stop_process(
    process: &ProcessExecution,
    stop_type: ProcessExecutionStopType,
    reason: Option<&str>,
    now: DateTime<Utc>,
) -> Result<TransitionPlan, DecideError> {
    check_running(process)?;
    let mut plan = TransitionPlan::default();
    let (status, verb) = match stop_type {
        ProcessExecutionStopType::Terminate => (ProcessStatus::Terminated, "terminated"),
        ProcessExecutionStopType::Fail => (ProcessStatus::Failed, "failed"),
    };
    let failure = ProcessFailure {
        reason: format!("{verb} by a stop request"),
        details: reason.map(str::to_string),
    };
    close(&mut plan, status, None, Some(failure), now);
    Ok(plan)
}

/// The process deadline passed; a closed execution is left alone.
pub fn timeout_process(process: &ProcessExecution, now: DateTime<Utc>) -> TransitionPlan {
    let mut plan = TransitionPlan::default();
    if process.status.is_closed() {
        return plan;
    }
    let failure = ProcessFailure {
        reason: format!("timed out after {} seconds", process.timeout_seconds),
        details: None,
    };
    close(&mut plan, ProcessStatus::Timeout, None, Some(failure), now);
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::fixtures::process;

    #[test]
    fn stop_closes_a_running_execution_and_refuses_a_closed_one() {
        let plan = stop_process(
            &process(2),
            ProcessExecutionStopType::Fail,
            Some("why"),
            Utc::now(),
        )
        .unwrap();
        assert!(plan.close_execution);
        assert_eq!(plan.process.unwrap().status, Some(ProcessStatus::Failed));
        let mut closed = process(0);
        closed.status = ProcessStatus::Completed;
        assert_eq!(
            stop_process(
                &closed,
                ProcessExecutionStopType::Terminate,
                None,
                Utc::now()
            ),
            Err(DecideError::NotRunning)
        );
        assert_eq!(
            timeout_process(&closed, Utc::now()),
            TransitionPlan::default()
        );
    }
}
