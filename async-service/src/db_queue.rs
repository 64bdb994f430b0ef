//! The database-queue task source: claims due tasks with leases and runs them.
//!
//! Woken by LISTEN/NOTIFY, by its own tasks creating tasks, and at the next task's due
//! time; it polls at `poll_interval` as the fallback (and to pick up expired leases).
//! A wake-up that names the executions whose tasks are new (MySQL's, for starts) is
//! served by claiming their tasks alone, without searching the queue; the searches keep
//! their schedule, so one due meanwhile is searched for when it would have been.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{watch, Notify, Semaphore};
use tokio::task::JoinSet;
use xdb_cluster::PeerNotifier;
use xdb_persistence::{Notification, Notifications};

use uuid::Uuid;
use xdb_engine::Task;
use xdb_persistence::{
    Applied, Claimed as ClaimedTask, NamedClaimed, SetAside, StateCall, StoreError,
};

use crate::clock::Clock;
use crate::handlers::{handle_task, HandlerContext};
use crate::leases::{LeaseHold, LeasedTasks};
use crate::priority_room::PriorityRoom;
use crate::scheduling::{self, AfterRefusal, ClaimSchedule, Claimed, OnFailure};

pub(crate) struct DbQueue {
    pub context: Arc<HandlerContext>,
    pub notifications: Option<Notifications>,
    /// Told about closed executions, for their waiting clients (MySQL).
    pub api_peers: PeerNotifier,
    pub max_in_flight: usize,
    /// Calls of lower priorities in flight while a higher one runs (see
    /// [`PriorityRoom`]).
    pub lower_priority_max_in_flight: usize,
    /// The tasks whose leases are renewed.
    pub leased: Arc<LeasedTasks>,
    pub lease: Duration,
    pub poll_interval: Duration,
    /// What due times are compared with.
    pub clock: Arc<dyn Clock>,
    /// Refusals in a row after which a task is parked (0: never).
    pub park_after_refusals: u32,
}

impl DbQueue {
    /// Runs until `shutdown` turns true, then waits for in-flight tasks.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let wake = Arc::new(Notify::new());
        let named = Arc::new(NamedWakes::default());
        if let Some(notifications) = &self.notifications {
            let mut receiver = notifications.subscribe();
            let wake = wake.clone();
            let named = named.clone();
            tokio::spawn(async move {
                loop {
                    match receiver.recv().await {
                        // New tasks, or notifications that may have been missed. A closed
                        // process creates no work: waking for it would cost a claim and a
                        // next-due lookup per completed process.
                        Ok(Notification::Tasks | Notification::Reconnected)
                        | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                            wake.notify_one()
                        }
                        Ok(Notification::TasksOf(executions)) => {
                            if !named.add(&executions) {
                                wake.notify_one()
                            }
                        }
                        Ok(Notification::ProcessClosed { .. } | Notification::Batches) => {}
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                    }
                }
            });
        }
        let permits = Arc::new(Semaphore::new(self.max_in_flight));
        let room = Arc::new(Mutex::new(PriorityRoom::new(
            self.lower_priority_max_in_flight,
        )));
        let schedule = ClaimSchedule::new(self.poll_interval);
        let mut running = JoinSet::new();
        // Whether the next claim searches the queue, or takes named executions' tasks.
        let mut search = true;
        let mut next_search_at = tokio::time::Instant::now();
        while !*shutdown.borrow() {
            while running.try_join_next().is_some() {}
            let free = permits.available_permits().min(256);
            let mut claimed = Vec::new();
            if !search && free > 0 {
                let executions = named.take();
                match self.claim_named(&room, free, &executions, &schedule).await {
                    Some(named) if named.complete => claimed = named.claimed,
                    other => {
                        claimed = other.map(|named| named.claimed).unwrap_or_default();
                        search = true;
                    }
                }
            }
            let (limit, searched) = if search {
                // What was named so far is committed: the search finds it.
                named.take();
                let free = free - claimed.len();
                let (found, limit) = self.claim(&room, free, &schedule).await;
                let searched = found.len();
                claimed.extend(found);
                (limit, searched)
            } else {
                (0, 0)
            };
            let now = self.clock.now();
            // Renewed from now on, also while they wait for a permit.
            let held: Vec<_> = claimed
                .into_iter()
                .map(|claimed| {
                    let ClaimedTask {
                        task,
                        call,
                        priority,
                    } = claimed;
                    let hold = self.leased.hold(task.id);
                    let when = schedule.on_claimed(task.fire_at, now);
                    // Read-ahead tasks count as claimed when they come due.
                    if when == Claimed::RunNow {
                        self.context.metrics.claimed(&task, now);
                    }
                    (task, call, priority, hold, when)
                })
                .collect();
            let chains = Chains {
                context: self.context.clone(),
                wake: wake.clone(),
                api_peers: self.api_peers.clone(),
                leased: self.leased.clone(),
                stopping: shutdown.clone(),
                clock: self.clock.clone(),
                park_after_refusals: self.park_after_refusals,
            };
            for (task, call, priority, hold, when) in held {
                let chains = chains.clone();
                let room = room.clone();
                if let Claimed::HoldFor(wait) = when {
                    // Read ahead: held (its lease renewed) until due, then run like any
                    // other, without taking a permit while it waits.
                    let permits = permits.clone();
                    let mut stopping = shutdown.clone();
                    running.spawn(async move {
                        tokio::select! {
                            _ = tokio::time::sleep(wait) => {}
                            // Left leased: shutdown releases every lease.
                            _ = stopping.wait_for(|stop| *stop) => return,
                        }
                        chains.context.metrics.claimed(&task, chains.clock.now());
                        let permit = permits.acquire_owned().await.expect("never closed");
                        // Read again when due: the rows read at the claim may be out of
                        // date by now (its execution paused, say).
                        drop(call);
                        let place = RoomPlace::take(&room, priority, &chains.wake);
                        chains.run(task, None, hold).await;
                        drop((place, permit));
                    });
                    continue;
                }
                let permit = permits.clone().acquire_owned().await.expect("never closed");
                // Counted before the next claim looks at the room.
                let place = RoomPlace::take(&room, priority, &wake);
                running.spawn(async move {
                    chains.run(task, call, hold).await;
                    drop((place, permit));
                });
            }
            if search {
                if ClaimSchedule::claim_again_at_once(searched, limit, permits.available_permits())
                {
                    continue;
                }
                let next_due_in = if schedule.needs_next_due() {
                    self.context.tasks.next_task_due_in().await.unwrap_or(None)
                } else {
                    None
                };
                let lifts_in = lock(&room).lifts_in(Instant::now());
                let sleep_for = schedule
                    .sleep_before_next_claim(next_due_in)
                    .min(lifts_in.unwrap_or(Duration::MAX));
                next_search_at = tokio::time::Instant::now() + sleep_for;
            }
            // A claim of named tasks keeps the searches' schedule: the last search read
            // ahead only until the next one was due.
            search = true;
            tokio::select! {
                _ = wake.notified() => {}
                _ = named.notify.notified() => search = false,
                _ = tokio::time::sleep_until(next_search_at) => {}
                _ = shutdown.changed() => {}
                Some(_) = running.join_next(), if permits.available_permits() == 0 => {}
            }
        }
        while running.join_next().await.is_some() {}
    }
}

impl DbQueue {
    /// Claims for `free` call slots, as the room for higher priorities allows; with the
    /// number of tasks asked for.
    async fn claim(
        &self,
        room: &Mutex<PriorityRoom>,
        free: usize,
        schedule: &ClaimSchedule,
    ) -> (Vec<ClaimedTask>, usize) {
        let mut claimed = Vec::new();
        let mut asked = 0;
        if free == 0 {
            return (claimed, asked);
        }
        let claims = lock(room).claims(free, Instant::now());
        for within in claims.into_iter().flatten() {
            let limit = within.limit.min(free - claimed.len());
            if limit == 0 {
                continue;
            }
            asked += limit;
            match self
                .context
                .tasks
                .claim_tasks_with_calls(
                    &self.context.owner,
                    limit as i64,
                    self.lease,
                    schedule.read_ahead(),
                    within.lowest_priority,
                )
                .await
            {
                Ok(tasks) => claimed.extend(tasks),
                Err(error) => {
                    tracing::warn!(%error, "claiming tasks failed; retrying");
                    break;
                }
            }
        }
        (claimed, asked)
    }

    /// Claims the tasks of `executions` for `free` call slots, within the room the
    /// highest priorities leave; `None` when the claim failed (the caller searches).
    async fn claim_named(
        &self,
        room: &Mutex<PriorityRoom>,
        free: usize,
        executions: &[Uuid],
        schedule: &ClaimSchedule,
    ) -> Option<NamedClaimed> {
        let [within, _] = lock(room).claims(free, Instant::now());
        let within = within?;
        let claimed = self
            .context
            .tasks
            .lease_named(
                executions,
                &self.context.owner,
                within.limit.min(free),
                self.lease,
                schedule.read_ahead(),
                within.lowest_priority,
            )
            .await;
        claimed
            .inspect_err(|error| tracing::warn!(%error, "claiming named tasks failed; searching"))
            .ok()
    }
}

/// Most executions wake-ups name before the claim loop takes them; past it, a wake-up
/// makes the loop search instead.
const MAX_NAMED: usize = 1024;

/// The executions wake-ups named since the claim loop last took them.
#[derive(Default)]
struct NamedWakes {
    executions: Mutex<Vec<Uuid>>,
    notify: Notify,
}

impl NamedWakes {
    /// Adds `executions` and wakes the loop; false when there is no room for them.
    fn add(&self, executions: &[Uuid]) -> bool {
        let mut named = self.executions.lock().unwrap_or_else(|p| p.into_inner());
        if named.len() + executions.len() > MAX_NAMED {
            return false;
        }
        named.extend_from_slice(executions);
        drop(named);
        self.notify.notify_one();
        true
    }

    fn take(&self) -> Vec<Uuid> {
        let mut named = self.executions.lock().unwrap_or_else(|p| p.into_inner());
        let mut executions = std::mem::take(&mut *named);
        executions.sort_unstable();
        executions.dedup();
        executions
    }
}

/// A chain's place in the [`PriorityRoom`] under its execution's priority (none when
/// the claim did not read it), given back when the chain ends, also by a panic; the
/// claim loop is woken then when lower priorities were held back.
struct RoomPlace(Option<(Arc<Mutex<PriorityRoom>>, u8, Arc<Notify>)>);

impl RoomPlace {
    fn take(room: &Arc<Mutex<PriorityRoom>>, priority: Option<u8>, wake: &Arc<Notify>) -> Self {
        RoomPlace(priority.map(|priority| {
            lock(room).started(priority);
            (room.clone(), priority, wake.clone())
        }))
    }
}

impl Drop for RoomPlace {
    fn drop(&mut self) {
        if let Some((room, priority, wake)) = &self.0 {
            if lock(room).ended(*priority, Instant::now()) {
                wake.notify_one();
            }
        }
    }
}

/// The room, also after a panic while it was held (each change is one count).
fn lock(room: &Mutex<PriorityRoom>) -> std::sync::MutexGuard<'_, PriorityRoom> {
    room.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What running a chain of states needs, shared by every chain of one claim loop.
#[derive(Clone)]
struct Chains {
    context: Arc<HandlerContext>,
    wake: Arc<Notify>,
    /// Told about closed executions, for their waiting clients (MySQL).
    api_peers: PeerNotifier,
    leased: Arc<LeasedTasks>,
    stopping: watch::Receiver<bool>,
    clock: Arc<dyn Clock>,
    park_after_refusals: u32,
}

impl Chains {
    /// Runs `task` (from `call`, when the claim read it) and the chain of states after
    /// it, one transition after the other, on the continuations its transitions lease
    /// to this instance.
    async fn run(&self, task: Task, call: Option<StateCall>, hold: LeaseHold) {
        let mut next = Some((task, call, hold));
        while let Some((task, preloaded, hold)) = next.take() {
            let handled = handle_or_park(&self.context, &task, preloaded, self.park_after_refusals);
            match handled.await {
                Ok(applied) => {
                    if applied.closed_process {
                        self.api_peers.process_closed(
                            task.process_execution_id.to_string(),
                            applied.closed_outcome,
                        );
                    }
                    if applied.created_tasks {
                        self.wake.notify_one();
                    }
                    // Once draining, a continuation is left leased: shutdown releases
                    // every lease, for another instance to take.
                    if let Some(continuation) = applied.continuation {
                        if !*self.stopping.borrow() {
                            let now = self.clock.now();
                            self.context.metrics.continued(&continuation, now);
                            let hold = self.leased.hold(continuation.id);
                            let call = applied.continuation_call.map(|call| *call);
                            next = Some((continuation, call, hold));
                        }
                    }
                }
                Err(error) => {
                    tracing::warn!(task = task.id, %error, "task failed; its lease will expire and it will run again")
                }
            }
            drop(hold);
        }
    }
}

/// Handles `task` until the database takes its transition, as the failure policy of
/// both sources says ([`scheduling::on_failure`]): a transient failure is handled again,
/// pausing longer after each, and the task parked after `park_after` in a row; a
/// failure that would come back the same parks it at once. Either is recorded in its
/// history with the error. A lost connection counts too: parking needs the database,
/// so while it is away the task stays leased and its lease runs out if the renewals
/// fail too.
async fn handle_or_park(
    context: &HandlerContext,
    task: &Task,
    mut preloaded: Option<StateCall>,
    park_after: u32,
) -> Result<Applied, StoreError> {
    let mut failures: u32 = 0;
    loop {
        let error = match handle_task(context, task, preloaded.take()).await {
            Ok(applied) => return Ok(applied),
            Err(error) => error,
        };
        failures += 1;
        let park = match scheduling::on_failure(error.class()) {
            OnFailure::Drop => return Ok(Applied::default()),
            OnFailure::SetAsideNow => true,
            OnFailure::RetryLater => match scheduling::after_refusal(failures, park_after) {
                AfterRefusal::RetryAfter(pause) => {
                    tracing::debug!(task = task.id, %error, failures, "the database refused the transition; retrying");
                    tokio::time::sleep(pause).await;
                    false
                }
                AfterRefusal::Park => true,
            },
        };
        if park {
            let why = SetAside::Refused {
                error: scheduling::set_aside_reason(&error, failures),
                refusals: failures,
            };
            context.store.set_aside(task, &context.owner, &why).await?;
            context.metrics.tasks_parked.inc();
            tracing::warn!(task = task.id, %error, failures, "task parked until retry-now or give-up");
            return Ok(Applied::default());
        }
    }
}

/// Handles `task`, again after a short pause when the database refused its transition:
/// the usual cause is a deadlock with a concurrent transaction, which a retry resolves
/// well before the lease would run out. The worker may be called again (worker calls are
/// at-least-once); the transition still applies once. `preloaded` is used for the first
/// try only: a retry loads the call again, as the rows may have moved on meanwhile.
pub(crate) async fn handle_with_retries(
    context: &HandlerContext,
    task: &Task,
    mut preloaded: Option<StateCall>,
) -> Result<Applied, StoreError> {
    let mut refusals = 0;
    loop {
        match handle_task(context, task, preloaded.take()).await {
            // Only a refusal for now (a deadlock, a lost connection) is worth trying
            // again; any other error would come back the same.
            Err(error) if error.is_retryable() => {
                refusals += 1;
                match scheduling::database_retry_pause(refusals) {
                    Some(pause) => {
                        tracing::debug!(task = task.id, %error, "the database refused the transition; retrying");
                        tokio::time::sleep(pause).await;
                    }
                    None => return Err(error),
                }
            }
            other => return other,
        }
    }
}

#[cfg(test)]
#[path = "db_queue_tests.rs"]
mod tests;
