//! A claimed task's worker call from the rows the claim read along with it.
//!
//! Claiming a task can return its process and state rows in the same statement; when
//! the state loads no attributes, those rows are the whole call, and the handler skips
//! [`crate::Transitions::load_state_call`] (a statement and a round trip per claimed
//! state task). Anything else (a closed process, a state that moved on, attributes to
//! read) is left to `load_state_call`, which also deletes stale tasks.

use xdb_engine::{ProcessExecution, StateExecution, StateExecutionStatus, Task, TaskType};

use crate::continuation::loads_attributes;
use crate::StateCall;

/// The call of `task` if `process` and `state` are all it needs.
pub(crate) fn ready_call(
    task: &Task,
    process: ProcessExecution,
    state: StateExecution,
) -> Option<StateCall> {
    let expected = match task.task_type {
        TaskType::WaitUntil => StateExecutionStatus::WaitUntilRunning,
        TaskType::Execute => StateExecutionStatus::ExecuteRunning,
        TaskType::Timer | TaskType::ProcessTimeout => return None,
    };
    let same_state = task.state.as_ref() == Some(&state.id)
        && state.process_execution_id == task.process_execution_id;
    if !same_state
        || process.status.is_closed()
        || state.status != expected
        || loads_attributes(&process, &state)
    {
        return None;
    }
    Some(StateCall {
        process,
        state,
        attributes: Default::default(),
    })
}

#[cfg(test)]
mod tests {

    use chrono::Utc;
    use uuid::Uuid;
    use xdb_engine::StateExecutionId;
    use xdb_protocol::{LocalAttributeLoading, LockType, ProcessStatus};

    use super::*;
    use crate::fixtures::process;

    fn state(status: StateExecutionStatus) -> StateExecution {
        crate::fixtures::state("A-1", status)
    }

    fn task(task_type: TaskType) -> Task {
        Task {
            id: 1,
            task_type,
            fire_at: Utc::now(),
            process_execution_id: Uuid::nil(),
            state: Some(StateExecutionId {
                state_id: "A".into(),
                number: 1,
            }),
            timer_index: None,
            attempt: 1,
            first_attempt_at: None,
            traceparent: None,
        }
    }

    #[test]
    fn a_running_state_without_attributes_is_ready() {
        let call = ready_call(
            &task(TaskType::Execute),
            process(ProcessStatus::Running),
            state(StateExecutionStatus::ExecuteRunning),
        )
        .expect("ready");
        assert_eq!(call.state.id.state_id, "A");
        assert_eq!(call.attributes, Default::default());
        assert!(ready_call(
            &task(TaskType::WaitUntil),
            process(ProcessStatus::Running),
            state(StateExecutionStatus::WaitUntilRunning),
        )
        .is_some());
    }

    #[test]
    fn stale_rows_or_attributes_to_read_leave_it_to_loading() {
        let running = || process(ProcessStatus::Running);
        // The state moved on, the process closed, or the task is not a state's call.
        assert!(ready_call(
            &task(TaskType::Execute),
            running(),
            state(StateExecutionStatus::WaitingCommands)
        )
        .is_none());
        assert!(ready_call(
            &task(TaskType::Execute),
            process(ProcessStatus::Completed),
            state(StateExecutionStatus::ExecuteRunning)
        )
        .is_none());
        assert!(ready_call(
            &task(TaskType::Timer),
            running(),
            state(StateExecutionStatus::ExecuteRunning)
        )
        .is_none());
        // Local attributes to read.
        let mut reads = state(StateExecutionStatus::ExecuteRunning);
        reads.config.local_attribute_loading = Some(LocalAttributeLoading {
            keys: vec!["k".into()],
            lock_type: LockType::NoLock,
        });
        assert!(ready_call(&task(TaskType::Execute), running(), reads).is_none());
        // Another state's rows.
        let mut other = state(StateExecutionStatus::ExecuteRunning);
        other.id.number = 2;
        assert!(ready_call(&task(TaskType::Execute), running(), other).is_none());
    }
}
