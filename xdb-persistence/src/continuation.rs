//! Continuations: the next task of a chain of states, leased to the instance that
//! created it, in the transaction that created it.
//!
//! A state that moves on to the next one creates the next state's task. The instance
//! that committed the move runs that task straight away: it saves claiming it (a
//! round trip and a write) and the wake-up that claiming waits for. The lease is the
//! same as a claimed task's, so if the instance dies the task is claimed again once the
//! lease runs out, like any other. Only one task per transition is kept: the others
//! (parallel threads) stay unleased for any instance to claim.

use std::time::Duration;

use chrono::{DateTime, Utc};
use xdb_engine::{
    ProcessExecution, StateExecution, StateExecutionStatus, Task, TaskType, TransitionPlan,
};
use xdb_protocol::LockType;

/// Who takes a transition's continuation, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseTo<'a> {
    pub owner: &'a str,
    pub lease: Duration,
}

impl<'a> LeaseTo<'a> {
    /// `Some` when the store was told to lease continuations (async-service stores).
    pub fn new(lease: Option<Duration>, owner: &'a str) -> Option<Self> {
        lease.map(|lease| Self { owner, lease })
    }
}

/// The index in `plan.new_tasks` of the task to lease as the continuation: the first
/// state task that is due now. Timers and process timeouts are due later by nature.
pub(crate) fn continuation_index(plan: &TransitionPlan, now: DateTime<Utc>) -> Option<usize> {
    plan.new_tasks.iter().position(|task| {
        matches!(task.task_type, TaskType::WaitUntil | TaskType::Execute) && task.fire_at <= now
    })
}

/// The process and state rows a continuation's worker call reads, as the transaction
/// that created it leaves them: known without reading them again. `None` when they are
/// not known (the plan did not write the state) or when reading its attributes inside
/// that transaction would take a lock out of the lock order (a global-attribute row is
/// locked before the process row everywhere): then the call is loaded as usual.
pub(crate) fn continuation_rows(
    process: &ProcessExecution,
    plan: &TransitionPlan,
    state_before: Option<&StateExecution>,
    task: &Task,
    now: DateTime<Utc>,
) -> Option<(ProcessExecution, StateExecution)> {
    let state = plan.state_after(process.id, task.state.as_ref()?, state_before, now)?;
    let expected = match task.task_type {
        TaskType::WaitUntil => StateExecutionStatus::WaitUntilRunning,
        TaskType::Execute => StateExecutionStatus::ExecuteRunning,
        TaskType::Timer | TaskType::ProcessTimeout => return None,
    };
    let locks_user_row = state
        .config
        .global_attribute_loading
        .as_ref()
        .is_some_and(|loading| loading.lock_type != LockType::NoLock);
    if state.status != expected || locks_user_row {
        return None;
    }
    let mut process = process.clone();
    if let Some(update) = &plan.process {
        update.apply_to(&mut process);
    }
    if process.status.is_closed() {
        return None;
    }
    Some((process, state))
}

/// Whether the continuation's state (if `plan` has one) loads any attributes, which
/// [`continuation_rows`]' caller reads inside the transaction (it reads them only where
/// the state takes no lock, so this says yes at least as often): a transaction
/// committed along with its writes never needs to read after them.
pub(crate) fn continuation_reads_attributes(
    process: &ProcessExecution,
    plan: &TransitionPlan,
    state_before: Option<&StateExecution>,
    now: DateTime<Utc>,
) -> bool {
    let Some(index) = continuation_index(plan, now) else {
        return false;
    };
    let Some(id) = plan.new_tasks[index].state.as_ref() else {
        return false;
    };
    plan.state_after(process.id, id, state_before, now)
        .is_some_and(|state| loads_attributes(process, &state))
}

/// Whether a worker call of `state` reads attributes: global ones where the process has
/// a global attribute row and the state a loading policy, local ones where the state
/// names keys (as `load_state_call` reads them).
pub(crate) fn loads_attributes(process: &ProcessExecution, state: &StateExecution) -> bool {
    let global = process.global_attribute_config.is_some()
        && state.config.global_attribute_loading.is_some();
    let local = state
        .config
        .local_attribute_loading
        .as_ref()
        .is_some_and(|loading| !loading.keys.is_empty());
    global || local
}

/// Whether every state row `plan` updates is `locked` (the one row its transaction
/// locked), so that its version check cannot fail for a row that is not there.
pub(crate) fn updates_only(plan: &TransitionPlan, locked: &StateExecution) -> bool {
    plan.state_updates
        .iter()
        .all(|update| update.id == locked.id)
}

#[cfg(test)]
mod tests {
    use chrono::Duration as Delta;
    use xdb_engine::{NewTask, StateExecutionId};

    use super::*;

    fn state(name: &str) -> StateExecutionId {
        StateExecutionId {
            state_id: name.into(),
            number: 1,
        }
    }

    #[test]
    fn picks_the_first_state_task_due_now() {
        let now = Utc::now();
        let mut plan = TransitionPlan::default();
        plan.new_tasks.push(NewTask {
            task_type: TaskType::Timer,
            fire_at: now,
            state: Some(state("A")),
            timer_index: Some(0),
        });
        plan.new_tasks
            .push(NewTask::immediate(TaskType::Execute, state("B"), now));
        plan.new_tasks
            .push(NewTask::immediate(TaskType::WaitUntil, state("C"), now));
        assert_eq!(continuation_index(&plan, now), Some(1));
    }

    #[test]
    fn leaves_tasks_due_later_and_timers_alone() {
        let now = Utc::now();
        let mut plan = TransitionPlan::default();
        plan.new_tasks.push(NewTask::immediate(
            TaskType::Execute,
            state("B"),
            now + Delta::seconds(1),
        ));
        plan.new_tasks.push(NewTask {
            task_type: TaskType::ProcessTimeout,
            fire_at: now,
            state: None,
            timer_index: None,
        });
        assert_eq!(continuation_index(&plan, now), None);
        assert_eq!(continuation_index(&TransitionPlan::default(), now), None);
    }
}
