//! What claiming a task by id found.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use xdb_engine::{Task, TaskType};

use crate::sql_tables::task_queue::ClaimedRows;

/// How long to wait before looking again at a task that is locked right now, or that
/// became claimable between two statements.
const LOOK_AGAIN: Duration = Duration::from_millis(100);

/// The outcome for one task of [`crate::TaskSource::claim_tasks`].
#[derive(Debug, Clone, PartialEq)]
pub enum TaskClaim {
    /// Leased to the caller: handle it, then it is deleted or rescheduled.
    Claimed(Task),
    /// Not due for this long (by the database clock): a timer, or a retry's backoff.
    NotDue(Duration),
    /// Another instance holds it for up to this long; if that instance dies the lease
    /// runs out and the task can be claimed then.
    Leased(Duration),
    /// Done (or stopped) already: nothing to do.
    Gone,
}

impl TaskClaim {
    /// The wait of a task that was not claimed, from its seconds until due and until its
    /// lease runs out; `None` when it is claimable now.
    pub(crate) fn wait(due_in: f64, lease_left: Option<f64>) -> Option<Self> {
        if due_in > 0.0 {
            return Some(Self::NotDue(Duration::from_secs_f64(due_in)));
        }
        match lease_left {
            Some(left) if left > 0.0 => Some(Self::Leased(Duration::from_secs_f64(left))),
            _ => None,
        }
    }

    /// [`TaskClaim::wait`] where the claim itself found nothing to take (the row was
    /// locked, or became claimable after): look again shortly.
    pub(crate) fn from_wait(due_in: f64, lease_left: Option<f64>) -> Self {
        Self::wait(due_in, lease_left).unwrap_or(Self::Leased(LOOK_AGAIN))
    }
}

/// The answers of a claim of `task_ids` by id, in their order: `Claimed` for each task
/// the claim leased, the wait of each it read and could not take, and `Gone` for the
/// rest. An id named twice is claimed once: its later mentions are answered as leased
/// for the whole `lease`, as another event of the same task would be a moment later.
pub(crate) fn answers_in_order(
    task_ids: &[i64],
    mut claimed: HashMap<i64, Task>,
    waits: &HashMap<i64, TaskClaim>,
    lease: Duration,
) -> Vec<TaskClaim> {
    let mut taken = HashSet::new();
    task_ids
        .iter()
        .map(|id| {
            if let Some(task) = claimed.remove(id) {
                taken.insert(*id);
                TaskClaim::Claimed(task)
            } else if taken.contains(id) {
                TaskClaim::Leased(lease)
            } else {
                waits.get(id).cloned().unwrap_or(TaskClaim::Gone)
            }
        })
        .collect()
}

/// How often a claim also looks for leases that ran out.
const EXPIRED_LEASES_EVERY: Duration = Duration::from_secs(1);

/// Whether the next claim also looks for leases that ran out. They come only from an
/// instance that died or stalled, and their tasks waited a whole lease already, so once
/// a second is soon enough. Looked for on every claim, it cost a round trip per claim on
/// MySQL, and on PostgreSQL a walk over the lease-expiry index entries of the tasks
/// finished since the last VACUUM (one such scan, run by hand 40,000 processes into a
/// load, read 172 buffers in 1.3 ms to find nothing).
#[derive(Debug, Default)]
pub(crate) struct ExpiredLeaseLook {
    last: std::sync::Mutex<Option<std::time::Instant>>,
}

impl ExpiredLeaseLook {
    /// True at most once per [`EXPIRED_LEASES_EVERY`] (and the first time).
    pub fn due(&self, now: std::time::Instant) -> bool {
        let mut last = self.last.lock().expect("never poisoned");
        match *last {
            Some(at) if now.saturating_duration_since(at) < EXPIRED_LEASES_EVERY => false,
            _ => {
                *last = Some(now);
                true
            }
        }
    }
}

/// Orders claimed tasks for running: due timers and process timeouts first, as they
/// were claimed first (their lateness is what a caller waits on; the other tasks' due
/// time is merely when they were created), then by their execution's priority (the
/// default when its row was not read along), then by due time.
pub(crate) fn order_claimed(claimed: &mut [ClaimedRows]) {
    claimed.sort_by_key(|(task, rows)| {
        let priority = rows
            .as_ref()
            .map_or(xdb_protocol::priority::DEFAULT, |(process, _)| {
                process.priority
            });
        (!is_timekeeping(task.task_type), priority, task.fire_at)
    });
}

/// Tasks due at a time someone chose, rather than as soon as possible.
pub(crate) fn is_timekeeping(task_type: TaskType) -> bool {
    matches!(task_type, TaskType::Timer | TaskType::ProcessTimeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: i64, task_type: TaskType, seconds_ago: i64) -> Task {
        Task {
            id,
            task_type,
            fire_at: chrono::Utc::now() - chrono::Duration::seconds(seconds_ago),
            process_execution_id: uuid::Uuid::nil(),
            state: None,
            timer_index: None,
            attempt: 1,
            first_attempt_at: None,
            traceparent: None,
        }
    }

    #[test]
    fn a_claim_by_ids_answers_each_mention_in_order_and_a_task_once() {
        let lease = Duration::from_secs(30);
        let one = task(1, TaskType::Execute, 0);
        let claimed = HashMap::from([(1, one.clone())]);
        let waits = HashMap::from([(2, TaskClaim::NotDue(Duration::from_secs(5)))]);
        let answers = answers_in_order(&[2, 1, 3, 1, 3], claimed, &waits, lease);
        assert_eq!(
            answers,
            vec![
                TaskClaim::NotDue(Duration::from_secs(5)),
                TaskClaim::Claimed(one),
                TaskClaim::Gone,
                TaskClaim::Leased(lease),
                TaskClaim::Gone,
            ]
        );
    }

    #[test]
    fn due_timers_run_before_older_state_tasks() {
        let mut tasks = vec![
            (task(1, TaskType::Execute, 5), None),
            (task(2, TaskType::Timer, 1), None),
            (task(3, TaskType::WaitUntil, 9), None),
            (task(4, TaskType::ProcessTimeout, 2), None),
        ];
        order_claimed(&mut tasks);
        let ids: Vec<i64> = tasks.iter().map(|(t, _)| t.id).collect();
        assert_eq!(ids, vec![4, 2, 3, 1]);
    }

    #[test]
    fn state_tasks_run_by_priority_before_due_time() {
        let of_priority = |priority| {
            let mut process = crate::fixtures::process(xdb_protocol::ProcessStatus::Running);
            process.priority = priority;
            Some((process, None))
        };
        let mut tasks = vec![
            (task(1, TaskType::Execute, 9), of_priority(5)),
            (task(2, TaskType::WaitUntil, 1), of_priority(1)),
            (task(3, TaskType::Execute, 5), None),
            (task(4, TaskType::Timer, 1), of_priority(5)),
            (task(5, TaskType::Execute, 7), of_priority(3)),
        ];
        order_claimed(&mut tasks);
        let ids: Vec<i64> = tasks.iter().map(|(t, _)| t.id).collect();
        assert_eq!(ids, vec![4, 2, 5, 3, 1]);
    }

    #[test]
    fn expired_leases_are_looked_for_at_most_once_a_second() {
        let look = ExpiredLeaseLook::default();
        let start = std::time::Instant::now();
        assert!(look.due(start), "the first claim looks");
        assert!(!look.due(start + Duration::from_millis(999)));
        assert!(look.due(start + Duration::from_secs(1)));
        assert!(!look.due(start + Duration::from_millis(1500)));
    }

    #[test]
    fn a_task_due_later_waits_for_its_due_time_first() {
        assert_eq!(
            TaskClaim::wait(2.0, Some(5.0)),
            Some(TaskClaim::NotDue(Duration::from_secs(2)))
        );
        assert_eq!(
            TaskClaim::wait(-1.0, Some(5.0)),
            Some(TaskClaim::Leased(Duration::from_secs(5)))
        );
        assert_eq!(TaskClaim::wait(-1.0, Some(-0.5)), None);
        assert_eq!(TaskClaim::wait(0.0, None), None);
        assert_eq!(
            TaskClaim::from_wait(0.0, None),
            TaskClaim::Leased(LOOK_AGAIN)
        );
    }
}
