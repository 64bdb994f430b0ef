//! The storage contract of the API service and the async service.

use std::time::Duration;

use async_trait::async_trait;
use uuid::Uuid;
use xdb_engine::decide::{AttemptFailure, StateApi};
use xdb_engine::{ProcessExecution, StateExecution, Task};
use xdb_protocol::*;

use crate::{DefinitionRegistry, QueryTable, StoreError};

/// Everything a worker call for one state needs, read in one go.
#[derive(Debug, Clone, PartialEq)]
pub struct StateCall {
    pub process: ProcessExecution,
    pub state: StateExecution,
    pub attributes: LoadedAttributes,
}

/// A task a claim leased, with its worker call where the claim could read it along, and
/// its execution's priority where the claim read the execution's row (every task in
/// PostgreSQL's one-statement claim; state tasks in the generic claim, which MySQL and
/// PostgreSQL while keyed tasks wait use).
#[derive(Debug, Clone, PartialEq)]
pub struct Claimed {
    pub task: Task,
    pub call: Option<StateCall>,
    pub priority: Option<u8>,
}

/// What [`TaskSource::lease_named`] claimed, and whether that was all there was of the
/// named executions' tasks (when not, the caller searches the queue as well).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NamedClaimed {
    pub claimed: Vec<Claimed>,
    pub complete: bool,
}

/// A due timer whose firing settles its state's commands, decided from the rows as read
/// (nothing written yet), with the execute call that firing starts: the caller calls the
/// worker, then commits the firing and the answer as one transition
/// ([`Transitions::complete_fired_execute`]).
#[derive(Debug, Clone, PartialEq)]
pub struct FiredTimer {
    pub timer_index: i32,
    /// The rows the firing was decided from.
    pub before: StateCall,
    /// The execute call, its command results those of this firing.
    pub call: StateCall,
}

/// What the async service does after applying a task's outcome.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Applied {
    /// The transaction created tasks besides [`Applied::continuation`]; the caller should
    /// look for due work again.
    pub created_tasks: bool,
    pub closed_process: bool,
    /// The answer for waiters on completion, when the transaction closed the execution:
    /// where the database cannot announce it (MySQL), the caller sends it to them.
    pub closed_outcome: Option<Box<ProcessExecutionWaitForCompletionResponse>>,
    /// A task due now that the transaction created already leased to the caller, who
    /// should run it at once (only when the store leases continuations, see
    /// [`crate::StoreOptions::continuation_lease`]).
    pub continuation: Option<Task>,
    /// What the continuation's worker call needs, read in the transaction that created
    /// it, when it could be (see the `continuation` module): the caller skips loading it.
    pub continuation_call: Option<Box<StateCall>>,
}

/// The two kinds of XDB service process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServiceKind {
    Api,
    Async,
}

impl ServiceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ServiceKind::Api => "API",
            ServiceKind::Async => "ASYNC",
        }
    }
}

/// A running service instance and the URL of its internal API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceInstance {
    pub instance_id: String,
    pub service: ServiceKind,
    pub notify_url: String,
    /// How long a silence of this instance's heartbeat means it is dead, for its peers
    /// to release its leases ([`TaskSource::release_dead_leases`]); `None`: never judged.
    pub liveness_timeout: Option<Duration>,
}

impl ServiceInstance {
    /// [`Self::liveness_timeout`] as the registry stores it (at most `i32::MAX` ms).
    pub(crate) fn liveness_timeout_ms(&self) -> Option<i32> {
        self.liveness_timeout
            .map(|timeout| i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX))
    }

    /// Instances of `service` from `(instance_id, notify_url)` rows.
    pub(crate) fn all_of(
        service: ServiceKind,
        rows: impl IntoIterator<Item = (String, String)>,
    ) -> Vec<ServiceInstance> {
        let instance = |(instance_id, notify_url)| ServiceInstance {
            instance_id,
            service,
            notify_url,
            liveness_timeout: None,
        };
        rows.into_iter().map(instance).collect()
    }
}

/// Calls the worker's RPC API on behalf of [`ProcessApi::rpc`], which runs it inside
/// the transaction that holds the requested locks.
#[async_trait]
pub trait RpcWorker: Send + Sync {
    async fn call_rpc(
        &self,
        worker_url: &str,
        request: &ProcessRpcWorkerRequest,
        timeout: Duration,
    ) -> Result<ProcessRpcWorkerResponse, String>;
}

/// Every storage operation, for a caller that uses them all (the services' wiring and
/// the contract tests); each user depends on the part it needs.
pub trait ProcessStore:
    ProcessApi
    + TaskSource
    + Transitions
    + InstanceRegistry
    + DefinitionRegistry
    + crate::BatchStore
    + crate::ScheduleStore
    + crate::FlowLimitStore
    + DatabaseTime
    + crate::DatabaseProbe
{
}
impl<
        S: ProcessApi
            + TaskSource
            + Transitions
            + InstanceRegistry
            + DefinitionRegistry
            + crate::BatchStore
            + crate::ScheduleStore
            + crate::FlowLimitStore
            + DatabaseTime
            + crate::DatabaseProbe
            + ?Sized,
    > ProcessStore for S
{
}

/// The database's clock as this instance reads it: every due time is written by it, as
/// the claims compare due times with the database's own `now()` (see
/// [`crate::DatabaseClock`]).
pub trait DatabaseTime: Send + Sync + 'static {
    fn database_clock(&self) -> &crate::DatabaseClock;
}

/// The process API: what clients ask of processes (the API service).
#[async_trait]
pub trait ProcessApi: Send + Sync + 'static {
    async fn start_process(
        &self,
        request: &ProcessExecutionStartRequest,
    ) -> Result<Uuid, StoreError>;
    async fn describe_process(
        &self,
        request: &ProcessExecutionDescribeRequest,
    ) -> Result<ProcessExecutionDescribeResponse, StoreError>;
    /// [`ProcessApi::describe_process`] without `parkedTasks` (always 0 here): one read,
    /// for wait-for-completion's polls.
    async fn process_outcome(
        &self,
        request: &ProcessExecutionDescribeRequest,
    ) -> Result<ProcessExecutionDescribeResponse, StoreError>;
    /// Stops the current execution; returns the answer for its waiters on completion.
    async fn stop_process(
        &self,
        request: &ProcessExecutionStopRequest,
    ) -> Result<Option<Box<ProcessExecutionWaitForCompletionResponse>>, StoreError>;
    async fn publish_to_local_queue(
        &self,
        request: &PublishToLocalQueueRequest,
    ) -> Result<(), StoreError>;
    async fn list_processes(
        &self,
        request: &ProcessExecutionListRequest,
    ) -> Result<ProcessExecutionListResponse, StoreError>;
    /// A page of the executions `request` matches with its `where` tree, whose column
    /// conditions are over `table` (the caller reads its columns); one statement,
    /// cancelled after `limit`.
    async fn list_matching(
        &self,
        request: &ProcessExecutionListRequest,
        table: Option<&QueryTable>,
        limit: Duration,
    ) -> Result<ProcessExecutionListResponse, StoreError>;
    /// How many executions `request` matches, exactly, in total and per group; one
    /// statement, cancelled after `limit`.
    async fn count_matching(
        &self,
        request: &ProcessExecutionCountRequest,
        table: Option<&QueryTable>,
        limit: Duration,
    ) -> Result<ProcessExecutionCountResponse, StoreError>;
    async fn process_history(
        &self,
        request: &ProcessExecutionHistoryRequest,
    ) -> Result<ProcessExecutionHistoryResponse, StoreError>;

    /// Loads attributes under the requested locks, calls the worker through `worker` and
    /// applies its writes, publishes and new states, all in one transaction.
    async fn rpc(
        &self,
        request: &ProcessExecutionRpcRequest,
        worker: &dyn RpcWorker,
        timeout: Duration,
    ) -> Result<ProcessExecutionRpcResponse, StoreError>;

    /// An execution's local attributes and its whole business row (the web console).
    async fn process_attributes(
        &self,
        request: &ProcessExecutionAttributesRequest,
    ) -> Result<ProcessExecutionAttributesResponse, StoreError>;

    /// The state executions of an execution, as operators look at them.
    async fn process_states(
        &self,
        request: &ProcessExecutionStatesRequest,
    ) -> Result<ProcessExecutionStatesResponse, StoreError>;
    /// Runs waiting retries now, and releases parked tasks.
    async fn retry_now(
        &self,
        request: &ProcessExecutionControlRequest,
    ) -> Result<ProcessExecutionControlResponse, StoreError>;
    /// Applies failing states' failure recovery without their remaining attempts.
    async fn give_up(
        &self,
        request: &ProcessExecutionControlRequest,
    ) -> Result<ProcessExecutionControlResponse, StoreError>;
    async fn pause(
        &self,
        request: &ProcessExecutionControlRequest,
    ) -> Result<ProcessExecutionControlResponse, StoreError>;
    async fn resume(
        &self,
        request: &ProcessExecutionControlRequest,
    ) -> Result<ProcessExecutionControlResponse, StoreError>;
    /// Changes an execution's priority or fairness key, and its waiting tasks'.
    async fn reprioritize(
        &self,
        request: &ProcessExecutionControlRequest,
    ) -> Result<ProcessExecutionControlResponse, StoreError>;
    /// Restarts an execution from a named state: in place when it runs, else as a new
    /// execution of its process id.
    async fn reset(
        &self,
        request: &ProcessExecutionResetRequest,
    ) -> Result<ProcessExecutionResetResponse, StoreError>;

    /// Runs `request`, recording `receipt` in the transaction of its effect; or, when
    /// the receipt's request id has one already, answers from it without doing anything
    /// (`RequestIdConflict` when that request differed). The methods above record no
    /// receipt, whatever `requestId` their request carries.
    async fn apply(
        &self,
        request: crate::receipts::ClientRequest<'_>,
        receipt: Option<&crate::receipts::Receipt>,
    ) -> Result<crate::receipts::RequestAnswer, StoreError>;
    /// Deletes up to `limit` clients' receipts older than `retention` (by the database
    /// clock); how many. Batches' items go with their batch.
    async fn expire_receipts(&self, retention: Duration, limit: i64) -> Result<u64, StoreError>;
    /// Records that a batch skipped or failed on an execution (`receipt` is the item's),
    /// with why; `false` when the item had a receipt already.
    async fn record_batch_item(
        &self,
        receipt: &crate::receipts::Receipt,
        outcome: BatchItemOutcome,
        reason: &str,
    ) -> Result<bool, StoreError>;
}

/// The instance registry: which service instances run, for wake-ups where the database
/// cannot push them (the cluster).
#[async_trait]
pub trait InstanceRegistry: Send + Sync + 'static {
    /// Records that `instance` is alive now (and forgets instances silent for an hour).
    async fn heartbeat_instance(&self, instance: &ServiceInstance) -> Result<(), StoreError>;
    /// Instances of `service` whose last heartbeat is at most `max_age` old.
    async fn live_instances(
        &self,
        service: ServiceKind,
        max_age: Duration,
    ) -> Result<Vec<ServiceInstance>, StoreError>;
    async fn remove_instance(&self, instance_id: &str) -> Result<(), StoreError>;
    /// The secret instances sign their calls to each other with, created with the schema
    /// (`xdb_sys_cluster_secrets`).
    async fn internal_secret(&self) -> Result<String, StoreError>;
}

/// What needs an operator, counted at once for the async service's gauges (each count
/// capped: see [`TaskSource::operator_gauges`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OperatorGauges {
    /// Running executions an operator paused.
    pub paused_executions: i64,
    /// Executions waiting `PENDING` for a running slot of their concurrency key.
    pub pending_executions: i64,
    /// Tasks parked because the database refused their transition, waiting for an
    /// operator's retry-now.
    pub parked_tasks: i64,
    /// State calls (WAIT_UNTIL and EXECUTE tasks, not set aside) at or past an attempt
    /// number: states that keep failing.
    pub states_past_attempts: i64,
}

impl OperatorGauges {
    /// The gauges from their counts in the order [`TaskSource::operator_gauges`] names
    /// them, as each dialect's statement selects them.
    pub(crate) fn from_counts(
        (paused_executions, pending_executions, parked_tasks, states_past_attempts): (
            i64,
            i64,
            i64,
            i64,
        ),
    ) -> Self {
        Self {
            paused_executions,
            pending_executions,
            parked_tasks,
            states_past_attempts,
        }
    }
}

/// The task source: due tasks claimed and leased (the async service's task sources).
#[async_trait]
pub trait TaskSource: Send + Sync + 'static {
    /// Starts pushing wake-ups from the database, if the dialect can; `None` means
    /// consumers rely on polling (and on notifications the services send each other).
    fn listen(&self, _what: crate::Listen) -> Option<crate::Notifications> {
        None
    }

    /// Leases up to `limit` tasks due `ahead` seconds from now (negative: due for at
    /// least that long) to `owner` for `lease`, due timers first, each state task with
    /// its worker call where the claim could read it along (`None` where it did not).
    /// Tasks whose lease ran out are among them at most once a second (per store),
    /// which is how soon a dead instance's tasks are taken over. Of the unleased state
    /// and queue tasks, only those of priority 1 to `lowest_priority` are claimed
    /// (timers and expired leases whatever their priority).
    async fn lease_due(
        &self,
        owner: &str,
        limit: i64,
        lease: Duration,
        ahead: f64,
        lowest_priority: u8,
    ) -> Result<Vec<Claimed>, StoreError>;

    /// Leases up to `limit` due tasks to `owner` for `lease` (see [`Self::lease_due`]).
    async fn claim_due_tasks(
        &self,
        owner: &str,
        limit: i64,
        lease: Duration,
    ) -> Result<Vec<Task>, StoreError> {
        let claimed = self
            .lease_due(owner, limit, lease, 0.0, xdb_protocol::priority::LOWEST)
            .await?;
        Ok(claimed.into_iter().map(|claimed| claimed.task).collect())
    }
    /// [`Self::claim_due_tasks`], and also tasks that come due within `ahead`, for a
    /// caller that holds each until its due time (timers read ahead, so that a claim's
    /// own latency never makes one late); due tasks come first. A state task that comes
    /// with its worker call (its rows, when the state loads no attributes) needs no
    /// [`Transitions::load_state_call`]. Unleased tasks of a priority past
    /// `lowest_priority` wait (see [`Self::lease_due`]).
    async fn claim_tasks_with_calls(
        &self,
        owner: &str,
        limit: i64,
        lease: Duration,
        ahead: Duration,
        lowest_priority: u8,
    ) -> Result<Vec<Claimed>, StoreError> {
        self.lease_due(owner, limit, lease, ahead.as_secs_f64(), lowest_priority)
            .await
    }
    /// [`Self::claim_tasks_with_calls`] for the tasks of `executions` only, read by
    /// their execution instead of searching the queue: for a caller told that every new
    /// task is one of theirs (MySQL's wake-ups name a start's execution). Keyed tasks
    /// are left to the search, which gives a fairness key its turn. The answer says
    /// whether it took every unleased task of theirs due within `ahead`; when not, the
    /// caller searches as well.
    async fn lease_named(
        &self,
        executions: &[uuid::Uuid],
        owner: &str,
        limit: usize,
        lease: Duration,
        ahead: Duration,
        lowest_priority: u8,
    ) -> Result<NamedClaimed, StoreError>;
    /// Due tasks nobody holds a lease on, counted up to `cap` (a metric, not a
    /// scheduling input: the cap bounds what a huge backlog costs to count).
    async fn count_backlog(&self, cap: i64) -> Result<i64, StoreError>;
    /// What needs an operator, in one statement: paused running executions, tasks
    /// parked as refused, and state calls whose attempt is `attempts_threshold` or more;
    /// each counted up to `cap` (a metric, like [`Self::count_backlog`]).
    async fn operator_gauges(
        &self,
        attempts_threshold: i32,
        cap: i64,
    ) -> Result<OperatorGauges, StoreError>;
    /// [`Self::claim_due_tasks`] for tasks due for at least `overdue`: the safety net of
    /// a task source driven by events, for tasks whose event never came.
    async fn claim_overdue_tasks(
        &self,
        owner: &str,
        limit: i64,
        lease: Duration,
        overdue: Duration,
    ) -> Result<Vec<Task>, StoreError> {
        let claimed = self
            .lease_due(
                owner,
                limit,
                lease,
                -overdue.as_secs_f64(),
                xdb_protocol::priority::LOWEST,
            )
            .await?;
        Ok(claimed.into_iter().map(|claimed| claimed.task).collect())
    }
    /// Leases each of tasks `task_ids` to `owner` for `lease` if it is due and nobody
    /// holds it; otherwise says how long to wait (or that it is gone): one answer per id,
    /// in their order, an id named twice claimed once. For task sources that learn of
    /// tasks one by one from possibly stale or repeated events (Pulsar CDC mode), which
    /// claim the tasks of events that came together with one statement.
    async fn claim_tasks(
        &self,
        task_ids: &[i64],
        owner: &str,
        lease: Duration,
    ) -> Result<Vec<crate::TaskClaim>, StoreError>;
    /// How long until the next unleased task is due (by the database clock), if any.
    async fn next_task_due_in(&self) -> Result<Option<Duration>, StoreError>;
    /// Extends the leases `owner` holds on `task_ids` (not empty); returns how many.
    /// Only tasks still being worked on are renewed, so a task whose handling failed is
    /// retried once its lease runs out.
    async fn renew_leases(
        &self,
        owner: &str,
        task_ids: &[i64],
        lease: Duration,
    ) -> Result<u64, StoreError>;
    /// Gives back every lease `owner` holds, for a clean shutdown.
    async fn release_leases(&self, owner: &str) -> Result<u64, StoreError>;
    /// Gives back the leases of every async instance other than `me` whose registration
    /// (see [`InstanceRegistry`]) was last heartbeated more than `timeout` ago by the
    /// database clock, and removes those registrations once they hold no lease. An owner
    /// with no registration keeps its leases: only a registered instance that went
    /// silent counts as dead. Tasks locked at that moment are left for the next call.
    async fn release_dead_leases(
        &self,
        me: &str,
        timeout: Duration,
    ) -> Result<ReleasedLeases, StoreError>;
}

/// What [`TaskSource::release_dead_leases`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReleasedLeases {
    /// The tasks given back: id and execution.
    pub tasks: Vec<(i64, Uuid)>,
    /// The dead instances whose registration was removed.
    pub removed: Vec<String>,
}

/// State transitions: what the async service's handlers read before a worker call and
/// commit after it.
#[async_trait]
pub trait Transitions: Send + Sync + 'static {
    /// Loads what a WAIT_UNTIL/EXECUTE task needs; `None` means the task is stale and
    /// has been deleted.
    async fn load_state_call(
        &self,
        task: &Task,
        owner: &str,
    ) -> Result<Option<StateCall>, StoreError>;
    async fn complete_wait_until(
        &self,
        task: &Task,
        owner: &str,
        call: &StateCall,
        response: &AsyncStateWaitUntilResponse,
    ) -> Result<Applied, StoreError>;
    async fn complete_execute(
        &self,
        task: &Task,
        owner: &str,
        call: &StateCall,
        response: &AsyncStateExecuteResponse,
    ) -> Result<Applied, StoreError>;
    /// A worker call failed: schedules a retry or applies the failure recovery; or, for
    /// an answer that can never succeed, parks the task for an operator.
    async fn state_api_failed(
        &self,
        task: &Task,
        owner: &str,
        call: &StateCall,
        api: StateApi,
        failure: &AttemptFailure,
    ) -> Result<Applied, StoreError>;
    /// The task could not be handled at all (Pulsar mode: its message went to the
    /// dead-letter topic): applies the state's failure recovery, as when its retries
    /// are exhausted, whatever attempts its retry policy has left.
    async fn state_api_given_up(
        &self,
        task: &Task,
        owner: &str,
        call: &StateCall,
        api: StateApi,
        error: &str,
    ) -> Result<Applied, StoreError>;
    async fn fire_timer(&self, task: &Task, owner: &str) -> Result<Applied, StoreError>;
    /// Reads the rows of due timer `task` (not locked, nothing written): `Some`, with the
    /// execute's call (attributes loaded), when the timer is the last command its state
    /// waits for, so its firing starts the execute. `None`: fire it with
    /// [`Transitions::fire_timer`].
    async fn fired_timer_call(&self, task: &Task) -> Result<Option<FiredTimer>, StoreError>;
    /// Commits the firing of `fired` and the worker's answer to its execute as one
    /// transition. `Stale` when its rows moved since they were read: the caller then
    /// fires the timer with [`Transitions::fire_timer`], which settles it afresh.
    async fn complete_fired_execute(
        &self,
        task: &Task,
        owner: &str,
        fired: &FiredTimer,
        response: &AsyncStateExecuteResponse,
    ) -> Result<Applied, StoreError>;
    async fn timeout_process(&self, task: &Task, owner: &str) -> Result<Applied, StoreError>;
    /// Sets claimed `task` aside instead of running it (see [`SetAside`]); `Ok(false)`:
    /// run it after all (its execution resumed meanwhile).
    async fn set_aside(&self, task: &Task, owner: &str, why: &SetAside)
        -> Result<bool, StoreError>;
    /// Gives claimed state task `task` back unleased, due `delay` from now on the
    /// database's clock, at the same attempt, marked as held back by a flow limit (the
    /// operators' views show it `FLOW_LIMITED`); `false`: `owner` no longer holds it.
    async fn hold_back(
        &self,
        task: &Task,
        owner: &str,
        delay: Duration,
    ) -> Result<bool, StoreError>;
    /// Takes a place for claimed `task`'s worker call (of `state_id` of `process_type`)
    /// under the concurrency limits `limits`; `false`: a limit has every place taken.
    /// The place is given back by whatever ends the call: the transition deleting the
    /// task, a retry or takeover unleasing it.
    async fn take_call_slot(
        &self,
        task: &Task,
        owner: &str,
        process_type: &str,
        state_id: &str,
        limits: CallSlotLimits,
    ) -> Result<bool, StoreError>;
    /// Admits executions waiting (`PENDING`) for a slot of their type's
    /// `maxRunningExecutions` where slots are free, oldest first per concurrency key,
    /// and forgets the slots of closed executions; returns how many were admitted.
    async fn admit_pending_executions(&self) -> Result<usize, StoreError>;
    /// Deletes a batch of the running limits' rows of closed executions (which hold no
    /// slot); returns how many.
    async fn forget_closed_run_slots(&self) -> Result<usize, StoreError>;
}

/// The concurrency limits one worker call is under: its type's and its state's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallSlotLimits {
    pub whole: Option<u32>,
    pub state: Option<u32>,
}

/// Why a claimed task is set aside instead of run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetAside {
    /// Its execution is paused: it runs when the execution resumes.
    Paused,
    /// The database refused its transition `refusals` times in a row, the last with
    /// `error`: it waits for an operator's retry-now (recorded as `TASK_PARKED`).
    Refused { error: String, refusals: u32 },
}

/// Whether a claimed task of `process` is to be set aside: its execution is paused.
pub fn is_held_back(process: &ProcessExecution) -> bool {
    crate::operations::held_back(process)
}
