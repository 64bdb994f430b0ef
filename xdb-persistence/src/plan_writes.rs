//! A [`TransitionPlan`] as the row writes that apply it, in the order every dialect
//! sends them: which rows change is decided here once; a dialect only turns each write
//! into its statement (and PostgreSQL sends them all as one).
//!
//! The writes never change one row twice (PostgreSQL's one-statement form sees a single
//! snapshot, where a second change of a row would be lost): a plan that closes the
//! execution aborts the states it updates in their own update, and leaves them out of
//! the abort of the others.

use chrono::{DateTime, Utc};
use xdb_engine::decide::{DecideError, StartPlan};
use xdb_engine::{
    HistoryEntry, MessageConsumption, NewStateExecution, NewTask, ProcessExecution, ProcessUpdate,
    StateExecution, StateExecutionId, StateExecutionStatus, StateUpdate, TransitionPlan,
};
use xdb_protocol::{
    AttributeWrites, EncodedObject, GlobalAttributeConfig, LocalQueueMessage,
    ProcessExecutionWaitForCompletionResponse,
};

use crate::continuation::{continuation_index, LeaseTo};
use crate::StoreError;

/// One write of a plan.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Write<'a> {
    /// The execution row's changed columns.
    Process(&'a ProcessUpdate),
    /// A state row, if still at `update.expected_version` (else the transition is
    /// stale), to `status`.
    State {
        update: &'a StateUpdate,
        status: StateExecutionStatus,
    },
    /// The execution closed: its other active states are aborted.
    AbortActiveStates {
        except: Vec<&'a StateExecutionId>,
    },
    /// The execution closed: every task of it goes.
    DeleteTasks,
    /// The execution closed: its tasks set aside (paused, parked) go too, whichever
    /// thread or request closed it.
    DeleteParkedTasks,
    NewState(&'a NewStateExecution),
    /// A state's commands are settled: its timers go.
    DeleteTimers(&'a StateExecutionId),
    /// A task; `leased` for the continuation, inserted leased to the transition's owner.
    NewTask {
        task: &'a NewTask,
        leased: Option<LeaseTo<'a>>,
    },
    /// Messages consumed, each exactly once (else the transition is stale).
    Consume(&'a MessageConsumption),
    /// The transition's events, in one insert.
    History(&'a [HistoryEntry]),
}

/// The writes of `plan`, attribute writes aside (see [`checked_attribute_writes`]). With
/// `lease_to`, the plan's continuation (see [`crate::continuation`]) is the first task,
/// leased.
pub(crate) fn plan_writes<'a>(
    plan: &'a TransitionPlan,
    now: DateTime<Utc>,
    lease_to: Option<LeaseTo<'a>>,
) -> Vec<Write<'a>> {
    let mut writes = Vec::new();
    if let Some(update) = &plan.process {
        writes.push(Write::Process(update));
    }
    for update in &plan.state_updates {
        let status = if plan.close_execution && update.status.is_active() {
            StateExecutionStatus::Aborted
        } else {
            update.status
        };
        writes.push(Write::State { update, status });
    }
    if plan.close_execution && !plan.nothing_else_open {
        writes.push(Write::AbortActiveStates {
            except: plan.state_updates.iter().map(|u| &u.id).collect(),
        });
        writes.push(Write::DeleteTasks);
        writes.push(Write::DeleteParkedTasks);
    }
    writes.extend(plan.new_states.iter().map(Write::NewState));
    writes.extend(plan.delete_timers_of.iter().map(Write::DeleteTimers));
    let leased = lease_to.and_then(|to| Some((to, continuation_index(plan, now)?)));
    if let Some((to, index)) = leased {
        writes.push(Write::NewTask {
            task: &plan.new_tasks[index],
            leased: Some(to),
        });
    }
    writes.extend(
        plan.new_tasks
            .iter()
            .enumerate()
            .filter(|(index, _)| leased.map(|(_, leased)| leased) != Some(*index))
            .map(|(_, task)| Write::NewTask { task, leased: None }),
    );
    writes.extend(plan.consume_messages.iter().map(Write::Consume));
    if !plan.history.is_empty() {
        writes.push(Write::History(&plan.history));
    }
    writes
}

/// Whether `plan` leaves nothing to do after its row writes: no attribute writes
/// (written after them) and no message consumptions (kept on the path that commits
/// after its writes, where they were read).
pub(crate) fn commits_with_writes(plan: &TransitionPlan) -> bool {
    plan.attribute_writes.global_attributes.is_empty()
        && plan.attribute_writes.local_attributes.is_empty()
        && plan.consume_messages.is_empty()
}

/// The answer for waiters on completion when `plan` closes `process` (as read before
/// the plan): what its close announces, to PostgreSQL's LISTEN and MySQL's peers alike.
pub(crate) fn closed_outcome(
    process: &ProcessExecution,
    plan: &TransitionPlan,
) -> Option<ProcessExecutionWaitForCompletionResponse> {
    if !plan.closes_process() {
        return None;
    }
    let mut closed = process.clone();
    if let Some(update) = &plan.process {
        update.apply_to(&mut closed);
    }
    Some(ProcessExecutionWaitForCompletionResponse {
        process_execution_id: closed.id.to_string(),
        status: closed.status,
        timed_out: false,
        result: closed.result,
        failure: closed.failure,
    })
}

/// Whether `start`, decided as a first execution, writes only new rows of its own: no
/// business row (which the generic start locks before the process id) and nothing
/// after its row writes. A dialect may write such starts in a faster form.
pub(crate) fn is_plain_first_start(start: &StartPlan) -> bool {
    start.execution.global_attribute_config.is_none() && commits_with_writes(&start.plan)
}

/// Whether `plan`, decided from `process` and `state` as read, is a usual transition a
/// dialect may apply in its faster form, checking that the rows are still as read: it
/// writes only rows of XDB's tables, updates the one state it was decided for, and its
/// continuation's call reads no attributes (which would be read after the writes).
pub(crate) fn is_plain_transition(
    process: &ProcessExecution,
    state: &StateExecution,
    plan: &TransitionPlan,
    now: DateTime<Utc>,
) -> bool {
    commits_with_writes(plan)
        && !plan.state_updates.is_empty()
        && crate::continuation::updates_only(plan, state)
        && !crate::continuation::continuation_reads_attributes(process, plan, Some(state), now)
}

/// The business-row config that `writes` need (when they write global attributes), once
/// the writes are checked: global attributes need a table, local keys must be ids.
pub(crate) fn checked_attribute_writes<'a>(
    process: &'a ProcessExecution,
    writes: &AttributeWrites,
) -> Result<Option<&'a GlobalAttributeConfig>, StoreError> {
    for attribute in &writes.local_attributes {
        check_id("localAttributes.key", &attribute.key)?;
    }
    if writes.global_attributes.is_empty() {
        return Ok(None);
    }
    match &process.global_attribute_config {
        Some(config) => Ok(Some(config)),
        None => Err(StoreError::Decide(DecideError::InvalidWorkerResponse(
            "global attributes written, but the process has no global attribute table".into(),
        ))),
    }
}

/// A local-queue message as its row is inserted.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMessage<'a> {
    pub queue_name: &'a str,
    /// The caller's, or a fresh one: a message without one is never a duplicate.
    pub dedup_id: String,
    pub payload: Option<&'a EncodedObject>,
}

/// `messages` as rows, once their names are checked to be ids that fit their columns.
pub(crate) fn checked_messages(
    messages: &[LocalQueueMessage],
) -> Result<Vec<NewMessage<'_>>, StoreError> {
    messages
        .iter()
        .map(|message| {
            check_id("queueName", &message.queue_name)?;
            let dedup_id = match &message.dedup_id {
                Some(id) => {
                    check_id("dedupId", id)?;
                    id.clone()
                }
                None => uuid::Uuid::now_v7().to_string(),
            };
            Ok(NewMessage {
                queue_name: &message.queue_name,
                dedup_id,
                payload: message.payload.as_ref(),
            })
        })
        .collect()
}

fn check_id(field: &str, value: &str) -> Result<(), StoreError> {
    xdb_engine::validation::check_id(field, value).map_err(|e| StoreError::Decide(e.into()))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use chrono::TimeDelta;
    use xdb_engine::TaskType;

    use super::*;

    fn state(name: &str) -> StateExecutionId {
        StateExecutionId {
            state_id: name.into(),
            number: 1,
        }
    }

    fn update(name: &str, status: StateExecutionStatus) -> StateUpdate {
        StateUpdate {
            id: state(name),
            expected_version: 1,
            status,
            command_request: None,
            command_progress: None,
            last_failure: None,
        }
    }

    #[test]
    fn a_close_with_nothing_else_open_aborts_and_deletes_nothing_else() {
        let plan = TransitionPlan {
            state_updates: vec![update("B", StateExecutionStatus::Completed)],
            close_execution: true,
            nothing_else_open: true,
            ..Default::default()
        };
        let writes = plan_writes(&plan, Utc::now(), None);
        assert_eq!(
            writes,
            vec![Write::State {
                update: &plan.state_updates[0],
                status: StateExecutionStatus::Completed,
            }]
        );
    }

    #[test]
    fn a_closing_plan_aborts_its_updated_states_in_their_update_and_leaves_them_out_after() {
        let plan = TransitionPlan {
            state_updates: vec![
                update("A", StateExecutionStatus::WaitingCommands),
                update("B", StateExecutionStatus::Completed),
            ],
            close_execution: true,
            ..Default::default()
        };
        let writes = plan_writes(&plan, Utc::now(), None);
        assert_eq!(
            writes,
            vec![
                Write::State {
                    update: &plan.state_updates[0],
                    status: StateExecutionStatus::Aborted,
                },
                Write::State {
                    update: &plan.state_updates[1],
                    status: StateExecutionStatus::Completed,
                },
                Write::AbortActiveStates {
                    except: vec![&plan.state_updates[0].id, &plan.state_updates[1].id],
                },
                Write::DeleteTasks,
                Write::DeleteParkedTasks,
            ]
        );
    }

    #[test]
    fn the_continuation_is_the_first_task_due_now_and_goes_first_leased() {
        let now = Utc::now();
        let plan = TransitionPlan {
            new_tasks: vec![
                NewTask {
                    task_type: TaskType::Timer,
                    fire_at: now + TimeDelta::seconds(5),
                    state: Some(state("A")),
                    timer_index: Some(0),
                },
                NewTask::immediate(TaskType::Execute, state("B"), now),
                NewTask::immediate(TaskType::WaitUntil, state("C"), now),
            ],
            ..Default::default()
        };
        let lease_to = LeaseTo::new(Some(Duration::from_secs(30)), "owner");
        let writes = plan_writes(&plan, now, lease_to);
        let tasks: Vec<_> = writes
            .iter()
            .map(|write| match write {
                Write::NewTask { task, leased } => (task.state.clone(), leased.is_some()),
                other => panic!("unexpected write {other:?}"),
            })
            .collect();
        assert_eq!(
            tasks,
            vec![
                (Some(state("B")), true),
                (Some(state("A")), false),
                (Some(state("C")), false),
            ]
        );
        // Without a lease to give, no task is leased.
        let writes = plan_writes(&plan, now, None);
        assert!(writes
            .iter()
            .all(|w| matches!(w, Write::NewTask { leased: None, .. })));
    }

    #[test]
    fn attribute_writes_are_refused_without_a_table_or_with_a_bad_key() {
        let process = ProcessExecution {
            id: uuid::Uuid::now_v7(),
            process_id: "p".into(),
            process_type: "T".into(),
            worker_url: "http://127.0.0.1:9".into(),
            status: xdb_protocol::ProcessStatus::Running,
            start_time: Utc::now(),
            close_time: None,
            timeout_seconds: 0,
            running_state_executions: 1,
            graceful_completion: None,
            state_execution_sequences: Default::default(),
            global_attribute_config: None,
            result: None,
            failure: None,
            paused: None,
            priority: xdb_protocol::priority::DEFAULT,
            fairness: None,
        };
        let global = AttributeWrites {
            global_attributes: vec![xdb_protocol::GlobalAttributeValue {
                column: "email".into(),
                value: serde_json::json!("a@b.c"),
            }],
            ..Default::default()
        };
        assert!(matches!(
            checked_attribute_writes(&process, &global),
            Err(StoreError::Decide(DecideError::InvalidWorkerResponse(_)))
        ));
        let local = AttributeWrites {
            local_attributes: vec![xdb_protocol::LocalAttributeValue {
                key: String::new(),
                value: xdb_protocol::EncodedObject {
                    encoding: "json".into(),
                    data: "1".into(),
                },
            }],
            ..Default::default()
        };
        assert!(matches!(
            checked_attribute_writes(&process, &local),
            Err(StoreError::Decide(_))
        ));
        assert!(matches!(
            checked_attribute_writes(&process, &AttributeWrites::default()),
            Ok(None)
        ));
    }

    #[test]
    fn messages_get_a_fresh_dedup_id_unless_they_bring_one_and_bad_names_are_refused() {
        let message = |queue: &str, dedup: Option<&str>| LocalQueueMessage {
            queue_name: queue.into(),
            dedup_id: dedup.map(Into::into),
            payload: None,
        };
        let messages = [message("q", Some("d1")), message("q", None)];
        let rows = checked_messages(&messages).unwrap();
        assert_eq!(rows[0].dedup_id, "d1");
        assert!(!rows[1].dedup_id.is_empty());
        assert_ne!(
            checked_messages(&[message("q", None)]).unwrap()[0].dedup_id,
            rows[1].dedup_id
        );
        assert!(checked_messages(&[message("", None)]).is_err());
        assert!(checked_messages(&[message("q", Some(""))]).is_err());
    }
}
