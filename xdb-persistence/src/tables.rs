//! The narrow per-table traits that storage operations are written against.
//!
//! `operations/` holds the logic of each operation once; a dialect implements these
//! traits with its statements, type conversions and locking primitives, nothing more.
//! Reads that lock take rows in the one order every transaction keeps, so that no two
//! operations deadlock: the user's business row, then the process execution row, then
//! its task and state rows.

use std::future::Future;
use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;
use xdb_engine::TransitionPlan;
use xdb_engine::{ProcessExecution, QueuedMessage, StateExecution, StateExecutionId, Task};
use xdb_protocol::{
    GlobalAttributeConfig, GlobalAttributeValue, LocalAttributeValue, LockType, PauseInfo,
    ProcessExecutionStartRequest, ProcessExecutionSummary, ProcessStatus,
};

use crate::continuation::LeaseTo;
use crate::plan_writes::NewMessage;
use crate::receipts::Receipt;
use crate::sql::{Param, SqlConn};
use crate::sql_tables::business_rows::BusinessConn;
use crate::sql_tables::plan_rows;
use crate::sql_tables::transition_batch::Batches;
use crate::{Applied, StateCall, StoreError};

/// Shorthand for the futures the traits return: every operation runs on a
/// multi-threaded runtime, so each must be `Send`.
pub trait Answer<T>: Future<Output = Result<T, StoreError>> + Send {}
impl<T, F: Future<Output = Result<T, StoreError>> + Send> Answer<T> for F {}

/// `xdb_sys_process_executions` and the latest-execution index.
pub trait ProcessRows: Send {
    /// The execution row, locked until the transaction ends; `NotFound` when missing.
    fn lock_process(&mut self, id: Uuid) -> impl Answer<ProcessExecution>;
    /// The latest execution of `process_id`, if it has any.
    fn latest_execution(&mut self, process_id: &str) -> impl Answer<Option<Uuid>>;
    /// The execution `execution_id` names, or else the latest of `process_id`, locked.
    fn lock_execution_of(
        &mut self,
        process_id: &str,
        execution_id: Option<&str>,
    ) -> impl Answer<ProcessExecution> {
        async move {
            let id = self.resolve_execution(process_id, execution_id).await?;
            self.lock_process(id).await
        }
    }
    /// The execution `execution_id` names, or else the latest of `process_id`.
    fn resolve_execution(
        &mut self,
        process_id: &str,
        execution_id: Option<&str>,
    ) -> impl Answer<Uuid> {
        async move {
            match execution_id {
                Some(id) => crate::parse_execution_id(id),
                None => self.latest_execution(process_id).await?.ok_or_else(|| {
                    StoreError::NotFound(format!("process '{process_id}' not found"))
                }),
            }
        }
    }
    /// The execution row of `process_id`: the one `execution_id` names, or else its
    /// latest; as read, in one statement (describe is what wait-for-completion polls).
    fn find_execution(
        &mut self,
        process_id: &str,
        execution_id: Option<Uuid>,
    ) -> impl Answer<Option<ProcessExecution>>;
    /// Executions matching `query`, newest first (by start time, then id), at most
    /// `query.limit`, each with its start time to the microsecond (for paging).
    fn list_executions(&mut self, query: &ListQuery<'_>) -> impl Answer<Vec<Listed>>;
    /// Claims `process_id` for its new execution `new_id`: concurrent starts of one id
    /// serialize on its latest-execution row, locked until the transaction ends.
    /// `None` for a first execution (the row now names `new_id`), else the previous
    /// execution as read.
    fn claim_process_id(
        &mut self,
        process_id: &str,
        new_id: Uuid,
    ) -> impl Answer<Option<ProcessExecution>>;
    /// Points the latest-execution row of `process_id` at `new_id`.
    fn repoint_latest(&mut self, process_id: &str, new_id: Uuid) -> impl Answer<()>;
    /// Inserts a new execution's row (a dialect may send it with the next writes).
    fn insert_execution(&mut self, execution: &ProcessExecution) -> impl Answer<()>;
    /// The execution row as read (not locked); `NotFound` when missing.
    fn read_process(&mut self, id: Uuid) -> impl Answer<ProcessExecution>;
    /// The execution row and its state `state`, as read (not locked); `None` when the
    /// execution is gone.
    fn read_process_and_state(
        &mut self,
        id: Uuid,
        state: &StateExecutionId,
    ) -> impl Answer<Option<(ProcessExecution, Option<StateExecution>)>>;
}

/// A list request, checked (see `operations::list`): `None` filters are off.
pub struct ListQuery<'a> {
    pub status: Option<ProcessStatus>,
    pub process_type: Option<&'a str>,
    pub process_id: Option<&'a str>,
    pub start_min: Option<DateTime<Utc>>,
    pub start_max: Option<DateTime<Utc>>,
    /// Only executions before this `(start time, id)`: the last of the previous page.
    pub after: Option<(DateTime<Utc>, Uuid)>,
    pub limit: i64,
}

/// `xdb_sys_async_state_executions`.
pub trait StateRows: Send {
    /// One state row, locked.
    fn lock_state(
        &mut self,
        process: Uuid,
        id: &StateExecutionId,
    ) -> impl Answer<Option<StateExecution>>;
    /// The execution's states waiting for commands, oldest first, locked.
    fn lock_waiting_states(&mut self, process: Uuid) -> impl Answer<Vec<StateExecution>>;
}

/// `xdb_sys_tasks`, as the task's owner sees it.
pub trait TaskRows: Send {
    /// Deletes `task` if `owner` still holds it; `Stale` when it does not (the work is
    /// someone else's now, and the transaction must not go on).
    fn take_task(&mut self, task: &Task, owner: &str) -> impl Answer<()>;
    /// Deletes `task` if `owner` still holds it, and says nothing either way: for a task
    /// found stale.
    fn drop_task(&mut self, task: &Task, owner: &str) -> impl Answer<()>;
    /// Gives `task` back for attempt `attempt + 1`, due at `at`; `Stale` unless `owner`
    /// holds it.
    fn retry_task(&mut self, task: &Task, owner: &str, at: DateTime<Utc>) -> impl Answer<()>;
    /// Gives `task` back at the same attempt, due at `at`, with `info`; whether `owner`
    /// held it.
    fn hold_task(
        &mut self,
        task: &Task,
        owner: &str,
        at: DateTime<Utc>,
        info: &crate::trace_context::TaskInfo,
    ) -> impl Answer<bool>;
}

/// `xdb_sys_local_queue_messages`.
pub trait QueueRows: Send {
    /// Inserts `messages`, dropping those whose dedup id the execution has; returns how
    /// many were new (see `crate::plan_writes::checked_messages`).
    fn insert_messages(&mut self, process: Uuid, messages: &[NewMessage<'_>]) -> impl Answer<u64>;
    /// The execution's unconsumed messages, in FIFO order.
    fn queued_messages(&mut self, process: Uuid) -> impl Answer<Vec<QueuedMessage>>;
}

/// The user's business table (global attributes) and `xdb_sys_local_attributes`.
pub trait AttributeRows: Send {
    /// `columns` (not empty) of the business row `config` names, locked as asked; a
    /// missing row reads as no attributes.
    fn read_business_row(
        &mut self,
        config: &GlobalAttributeConfig,
        columns: &[String],
        lock: LockType,
    ) -> impl Answer<Vec<GlobalAttributeValue>>;
    /// Inserts the business row `config` names with `writes`, or updates it with them.
    fn upsert_business_row(
        &mut self,
        config: &GlobalAttributeConfig,
        writes: &[GlobalAttributeValue],
    ) -> impl Answer<()>;
    /// The execution's local attributes among `keys`, locked as asked.
    fn read_local_attributes(
        &mut self,
        process: Uuid,
        keys: &[String],
        lock: LockType,
    ) -> impl Answer<Vec<LocalAttributeValue>>;
    /// Every column of the business row `config` names, as JSON by column name, read
    /// without a lock; `None` when there is no such row.
    fn read_whole_business_row(
        &mut self,
        config: &GlobalAttributeConfig,
    ) -> impl Answer<Option<serde_json::Map<String, serde_json::Value>>>;
    /// Every local attribute of the execution, by key.
    fn all_local_attributes(&mut self, process: Uuid) -> impl Answer<Vec<LocalAttributeValue>>;
}

/// `xdb_sys_history_events` (written by [`PlanWriter::apply_plan`]).
pub trait HistoryRows: Send {
    /// Events of execution `id` of `process_id` that `query` asks for, oldest first.
    fn read_history(
        &mut self,
        id: Uuid,
        process_id: &str,
        query: &HistoryQuery<'_>,
    ) -> impl Answer<Vec<xdb_protocol::HistoryEvent>>;
}

/// A history request, checked (see `operations::queries`).
pub struct HistoryQuery<'a> {
    /// Only events with a greater id.
    pub after_event_id: Option<i64>,
    /// Only events of these types; every type when empty.
    pub event_types: &'a [&'static str],
    pub limit: i64,
    /// Newest first (and `after_event_id` unused): the latest events of some types.
    pub newest_first: bool,
}

/// Why a task was set aside into `xdb_sys_parked_tasks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParkReason {
    /// Its execution is paused; it goes back when the execution resumes.
    Paused,
    /// The database refused its transition too many times in a row; it goes back on
    /// retry-now.
    Refused,
    /// The worker answered its call with an error that can never succeed
    /// ([`xdb_protocol::WorkerErrorType`]); it goes back on retry-now (after a deploy
    /// fixed the worker), or give-up applies the state's failure recovery.
    NonRetryable,
}

impl ParkReason {
    pub fn as_str(self) -> &'static str {
        match self {
            ParkReason::Paused => "PAUSED",
            ParkReason::Refused => "REFUSED",
            // `reason` is a VARCHAR(16).
            ParkReason::NonRetryable => "NON_RETRYABLE",
        }
    }

    /// Set aside until an operator acts (retry-now, give-up), not by a pause.
    pub fn awaits_operator(self) -> bool {
        !matches!(self, ParkReason::Paused)
    }

    pub fn parse(text: &str) -> Option<Self> {
        [
            ParkReason::Paused,
            ParkReason::Refused,
            ParkReason::NonRetryable,
        ]
        .into_iter()
        .find(|r| r.as_str() == text)
    }
}

/// A task as operators see it, in `xdb_sys_tasks` or set aside.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskView {
    pub task: Task,
    /// The instance holding it: its call is running.
    pub lease_owner: Option<String>,
    /// Set aside: why, and the last error that set it aside.
    pub parked: Option<(ParkReason, Option<String>)>,
    /// Made due later by a flow limit, at the attempt it is at.
    pub rate_limited: bool,
}

impl TaskView {
    /// A task as read with its lease owner and, when set aside, the reason and last
    /// error stored with it; a reason no dialect writes means a corrupt row.
    pub(crate) fn decode(
        (task, info): (Task, crate::trace_context::TaskInfo),
        lease_owner: Option<String>,
        reason: Option<String>,
        error: Option<String>,
    ) -> Result<Self, StoreError> {
        let parked = match reason {
            Some(reason) => Some((
                ParkReason::parse(&reason)
                    .ok_or_else(|| StoreError::Database(format!("unknown park reason {reason}")))?,
                error,
            )),
            None => None,
        };
        Ok(TaskView {
            rate_limited: info.rate_limited_attempt == Some(task.attempt),
            task,
            lease_owner,
            parked,
        })
    }
}

/// What operators read and change: an execution's tasks as they stand (also those set
/// aside in `xdb_sys_parked_tasks`), its states and queues, its pause mark.
pub trait OperatorRows: Send {
    /// The execution's tasks, in `xdb_sys_tasks` and set aside, by id; locked when
    /// `lock` (a control deciding on them: claims skip locked tasks).
    fn tasks_of(&mut self, process: Uuid, lock: bool) -> impl Answer<Vec<TaskView>>;
    /// The execution's states, in the order they started, as read.
    fn states_of(&mut self, process: Uuid) -> impl Answer<Vec<StateExecution>>;
    /// Its unconsumed local-queue messages, counted per queue.
    fn queued_counts(&mut self, process: Uuid) -> impl Answer<Vec<(String, u64)>>;
    /// Sets (or clears) the execution's pause mark.
    fn set_paused(&mut self, process: Uuid, paused: Option<&PauseInfo>) -> impl Answer<()>;
    /// Sets the execution's priority and fairness, and its tasks' (timers and timeouts
    /// take no key: see `columns::task_fairness`), so that they are claimed in the new
    /// order. Tasks set aside take the execution's when released.
    fn reorder(
        &mut self,
        process: Uuid,
        priority: u8,
        fairness: Option<&xdb_engine::Fairness>,
    ) -> impl Answer<()>;
    /// Makes task `id` due at `at` if no instance holds it; whether it did.
    fn make_due(&mut self, id: i64, at: DateTime<Utc>) -> impl Answer<bool>;
    /// Sets task `id` aside if `owner` holds it (no one, for `None`); whether it did.
    fn park(
        &mut self,
        id: i64,
        owner: Option<&str>,
        reason: ParkReason,
        error: Option<&str>,
        now: DateTime<Utc>,
    ) -> impl Answer<bool>;
    /// Puts set-aside task `id` back, unleased, due at `due` (or when it was due).
    fn unpark(&mut self, id: i64, due: Option<DateTime<Utc>>) -> impl Answer<bool>;
    /// Deletes task `id` if no instance holds it, or its set-aside copy.
    fn delete_unheld_task(&mut self, id: i64) -> impl Answer<()>;
    /// Deletes task `id`, held by an instance or not, and its set-aside copy: a reset
    /// cancels it (a holder's transition then finds it gone, and applies nothing).
    fn delete_task(&mut self, id: i64) -> impl Answer<()>;
    /// The state calls of `processes` waiting out a retry's backoff at `now` (unleased,
    /// attempt 2 or more, due later), by execution.
    fn backing_off_of(&mut self, processes: &[Uuid], now: DateTime<Utc>) -> impl Answer<Vec<Task>>;
    /// How many of the execution's tasks wait for an operator: set aside as
    /// [`ParkReason::Refused`] or [`ParkReason::NonRetryable`].
    fn count_refused(&mut self, process: Uuid) -> impl Answer<u64>;
}

/// Receipts of requests with a request id and of batches' items (`crate::receipts`).
pub trait ReceiptRows: Send {
    /// Records `receipt` with its `outcome` and `answer` (JSON text) at `now`; `false`
    /// when its request id has a receipt already (waiting for a concurrent one to end).
    fn insert_receipt(
        &mut self,
        receipt: &crate::receipts::Receipt,
        outcome: xdb_protocol::BatchItemOutcome,
        answer: &str,
        now: DateTime<Utc>,
    ) -> impl Answer<bool>;
    /// The receipt of `request_id`, if any.
    fn find_receipt(
        &mut self,
        request_id: &str,
    ) -> impl Answer<Option<crate::receipts::StoredReceipt>>;
    fn delete_receipt(&mut self, request_id: &str) -> impl Answer<()>;
    /// Deletes up to `limit` clients' receipts (not batches' items) made before `before`,
    /// oldest first; how many.
    fn delete_receipts_before(&mut self, before: DateTime<Utc>, limit: i64) -> impl Answer<u64>;
}

/// How a transaction ends after [`PlanWriter::apply_plan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// The caller goes on, and commits.
    Later,
    /// The dialect may send COMMIT along with the writes, where nothing has to follow
    /// them. Only for a caller that locked every state row the plan updates.
    WithWrites,
}

/// Which notifications a transaction sends besides "process closed", where the
/// database can push them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Announce {
    /// A client's request created tasks: wake every async-service instance.
    NewTasks,
    /// The async service wakes itself for the tasks it creates (see `Applied`).
    ClosuresOnly,
    /// An operator's control may have made tasks due that the plan does not create:
    /// wake every async-service instance whatever the plan.
    TasksDue,
}

/// Writes a [`TransitionPlan`]: the generic writer of `sql_tables::plan_rows` unless a
/// dialect has a faster one (PostgreSQL's single statement).
pub(crate) trait PlanWriter: BusinessConn + Sized {
    /// Applies `plan` for `process`; a state row whose version moved meanwhile fails it
    /// as `Stale`. With `lease_to`, the plan's continuation is inserted leased and
    /// returned. Also says whether the transaction is committed already (only ever
    /// when `finish` allowed it; the generic writer never commits: no notification to
    /// announce with where the database has none, and COMMIT is a statement of its own).
    fn apply_plan(
        &mut self,
        process: &ProcessExecution,
        plan: &TransitionPlan,
        now: DateTime<Utc>,
        _announce: Announce,
        lease_to: Option<LeaseTo<'_>>,
        _finish: Finish,
    ) -> impl Answer<(Applied, bool)> {
        async move {
            let applied = plan_rows::apply_plan(self, process, plan, now, lease_to).await?;
            Ok((applied, false))
        }
    }
}

/// An open transaction: rolled back when dropped without [`Transaction::commit`].
pub(crate) trait Transaction:
    ProcessRows
    + StateRows
    + TaskRows
    + QueueRows
    + AttributeRows
    + OperatorRows
    + ReceiptRows
    + PlanWriter
    + Sized
{
    /// Takes `task` and locks its execution and its state `state`, in the lock order:
    /// the usual beginning of a task's transition (a dialect may do it in one statement).
    fn lock_for_task(
        &mut self,
        task: &Task,
        owner: &str,
        state: &StateExecutionId,
    ) -> impl Answer<(ProcessExecution, Option<StateExecution>)> {
        lock_for_task_in_order(self, task, owner, state)
    }

    /// Bounds how long the database keeps this transaction while its client says
    /// nothing (`None`: back to the connection's own limit, see `session_limits`), so
    /// that one held across a remote call gives its locks back soon after the call's
    /// own timeout when the network loses the client.
    fn limit_idle(&mut self, limit: Option<std::time::Duration>) -> impl Answer<()>;

    /// Commits (a no-op when [`PlanWriter::apply_plan`] committed already).
    fn commit(self) -> impl Answer<()>;
}

/// Statements outside a transaction: reads, and deletions that need no other row.
pub(crate) trait Session:
    ProcessRows + TaskRows + AttributeRows + HistoryRows + OperatorRows + ReceiptRows
{
}
impl<S: ProcessRows + TaskRows + AttributeRows + HistoryRows + OperatorRows + ReceiptRows> Session
    for S
{
}

/// Which connections an operation uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// State transitions and client requests.
    Main,
    /// Work whose lateness counts: timers and process timeouts. A backlog of state
    /// transitions waiting for the main pool would otherwise hold a due timer back.
    Timekeeping,
    /// Filtered lists and counts: reads that may scan a business table until their time
    /// limit. Where the dialect gives them a pool of their own (PostgreSQL), a burst of
    /// slow ones never holds the connections starts and transitions need.
    Query,
}

/// [`Transaction::lock_for_task`] one statement per row, in the lock order: the
/// generic form, also what PostgreSQL's one-statement form falls back to in the tests
/// that keep the generic forms tested there.
pub(crate) async fn lock_for_task_in_order<T: Transaction>(
    tx: &mut T,
    task: &Task,
    owner: &str,
    state: &StateExecutionId,
) -> Result<(ProcessExecution, Option<StateExecution>), StoreError> {
    let process = tx.lock_process(task.process_execution_id).await?;
    tx.take_task(task, owner).await?;
    let state = tx.lock_state(process.id, state).await?;
    Ok((process, state))
}

/// An execution of a list page, with what its token and backing-off mark need.
pub(crate) struct Listed {
    pub summary: ProcessExecutionSummary,
    /// The start time to the microsecond, for the page token.
    pub start: DateTime<Utc>,
    /// Whether a state call of it may wait for a retry (see `query::SUMMARY_COLUMNS`).
    pub may_back_off: bool,
    pub id: Uuid,
}

/// A database dialect: where its transactions come from, and the faster forms it has of
/// generic operations.
pub(crate) trait Dialect: crate::DatabaseTime + Clone + Send + Sync + 'static {
    type Tx: Transaction + SqlConn;
    type Session: Session + SqlConn;

    /// Opens a transaction on `lane` (a dialect may send BEGIN with its first statement).
    fn begin(&self, lane: Lane) -> impl Answer<Self::Tx>;
    /// [`Dialect::begin`] for a batch of the generic faster forms (see
    /// [`Dialect::batches`]): a dialect may keep their connections apart.
    fn begin_batch(&self, lane: Lane) -> impl Answer<Self::Tx> {
        self.begin(lane)
    }
    /// A connection of `lane` for statements outside a transaction.
    fn session(&self, lane: Lane) -> impl Answer<Self::Session>;
    /// Whom a transition recorded for `owner` leases its continuation to, if anyone.
    fn lease_to<'a>(&self, owner: &'a str) -> Option<LeaseTo<'a>>;
    /// The pieces of filtered lists' and counts' SQL this dialect writes its own way.
    fn query_syntax(&self) -> &'static dyn crate::query::QuerySyntax;
    /// The types' running-execution limits as this store last read them.
    fn run_limits(&self) -> &crate::run_limits::RunLimits;
    /// A statement that, in a transaction creating a batch, wakes the async service's
    /// batch drivers when it commits (PostgreSQL's NOTIFY); `None` where the API service
    /// wakes them itself once the batch is committed (MySQL).
    fn batch_wake_up(&self) -> Option<&'static str> {
        None
    }

    /// Runs one read-only statement, at most `limit` long: the generic form runs it on a
    /// plain connection, for a dialect whose statement text carries the bound
    /// (`QuerySyntax::time_limited`, MySQL's `MAX_EXECUTION_TIME`).
    fn read_bounded(
        &self,
        lane: Lane,
        sql: &str,
        params: &[Param<'_>],
        _limit: Duration,
    ) -> impl Answer<Vec<<Self::Session as SqlConn>::Row>> {
        async move {
            let mut session = self.session(lane).await?;
            session.query_once(sql, params).await
        }
    }

    /// The batches of the generic faster forms below (`sql_tables::transition_batch`,
    /// `first_start_batch`), for a dialect that takes them (MySQL).
    fn batches(&self) -> Option<&Batches<Self>> {
        None
    }
    /// Applies `plan`, decided from `call` as read (not locked), if the dialect can do
    /// so safely, checking that the rows are still as read (PostgreSQL in one statement,
    /// the generic form in a batch); `None`: not done, nothing written, the caller
    /// locks, reads and decides again.
    fn transition_as_read(
        &self,
        lane: Lane,
        task: &Task,
        owner: &str,
        call: &StateCall,
        plan: &TransitionPlan,
        now: DateTime<Utc>,
    ) -> impl Answer<Option<Applied>> {
        async move {
            match self.batches() {
                Some(batches) if self.transitions_as_read() => {
                    let transitions = &batches.transitions;
                    let applied =
                        transitions.transition_as_read(self, lane, task, owner, call, plan, now);
                    applied.await
                }
                _ => Ok(None),
            }
        }
    }
    /// Starts `request` as the first execution of its process id by a faster form, if
    /// the dialect has one (PostgreSQL's one statement, the generic form's batches);
    /// `None`: not done, nothing written (the id had an execution, or the start needs
    /// the generic path).
    fn start_first_execution(
        &self,
        request: &ProcessExecutionStartRequest,
        new_id: Uuid,
        now: DateTime<Utc>,
        receipt: Option<&Receipt>,
    ) -> impl Answer<Option<Uuid>> {
        async move {
            match self.batches() {
                Some(batches) => {
                    let starts = &batches.first_starts;
                    starts
                        .start_first_execution(self, request, new_id, now, receipt)
                        .await
                }
                None => Ok(None),
            }
        }
    }
    /// Whether [`Dialect::transition_as_read`] is worth deciding for.
    fn transitions_as_read(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task() -> Task {
        let task_type = xdb_engine::TaskType::parse("TIMER").unwrap();
        Task {
            id: 1,
            task_type,
            fire_at: DateTime::UNIX_EPOCH,
            process_execution_id: Uuid::nil(),
            state: None,
            timer_index: Some(0),
            attempt: 0,
            first_attempt_at: None,
            traceparent: None,
        }
    }

    #[test]
    fn a_set_aside_task_keeps_its_reason_and_error() {
        let view = TaskView::decode(
            (task(), Default::default()),
            None,
            Some("REFUSED".into()),
            Some("e".into()),
        );
        let parked = view.unwrap().parked;
        assert_eq!(parked, Some((ParkReason::Refused, Some("e".into()))));
        let held =
            TaskView::decode((task(), Default::default()), Some("me".into()), None, None).unwrap();
        assert_eq!(
            (held.lease_owner.as_deref(), held.parked),
            (Some("me"), None)
        );
    }

    #[test]
    fn an_unknown_park_reason_is_a_corrupt_row() {
        let error = TaskView::decode(
            (task(), Default::default()),
            None,
            Some("LOST".into()),
            None,
        )
        .unwrap_err();
        assert!(
            matches!(&error, StoreError::Database(m) if m == "unknown park reason LOST"),
            "{error:?}"
        );
    }
}
