//! The database queue's claim loop against small fakes of its task source and of the
//! transitions it runs, on tokio's paused time and an injected wall clock: what the loop
//! does with what a claim returns (hold a task read ahead, run a due one), that it
//! claims no more than it has permits for, and that shutdown waits for tasks in flight.
//! The scheduling decisions themselves are `scheduling`'s, tested there.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, TimeZone, Utc};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use uuid::Uuid;
use xdb_cluster::PeerNotifier;
use xdb_engine::decide::StateApi;
use xdb_engine::{Task, TaskType};
use xdb_persistence::{
    Applied, FiredTimer, Notification, Notifications, SetAside, StateCall, StoreError, Transitions,
};
use xdb_protocol::{AsyncStateExecuteResponse, AsyncStateWaitUntilResponse};

use super::DbQueue;
use crate::clock::ManualClock;
use crate::fake_task_source::ScriptedTaskSource;
use crate::handlers::HandlerContext;
use crate::leases::LeasedTasks;
use crate::metric_definitions::AsyncMetrics;

/// The poll interval of every loop here: tasks due within it are read ahead.
const POLL: Duration = Duration::from_millis(500);

/// The injected clock's reading when each test starts: far from this machine's, so a
/// loop that read the machine's clock instead would hold every task here.
fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2100, 1, 1, 12, 0, 0).unwrap()
}

/// A process-timeout task (its handling is one transition, no worker call) due at
/// `fire_at`.
fn timeout_task(id: i64, fire_at: DateTime<Utc>) -> Task {
    Task {
        id,
        task_type: TaskType::ProcessTimeout,
        fire_at,
        process_execution_id: Uuid::from_u128(id as u128),
        state: None,
        timer_index: None,
        attempt: 1,
        first_attempt_at: None,
        traceparent: None,
    }
}

/// Transitions that record when each process timeout ran; the one of `held_task`
/// waits until `open` turns true.
struct RecordedTimeouts {
    ran: Mutex<Vec<(i64, Instant)>>,
    held_task: Option<i64>,
    open: watch::Receiver<bool>,
}

impl RecordedTimeouts {
    /// Every timeout runs at once, or, with `held_task`, that one waits for the sender
    /// returned to send true.
    fn new(held_task: Option<i64>) -> (Arc<Self>, watch::Sender<bool>) {
        let (open, opened) = watch::channel(false);
        let timeouts = Self {
            ran: Mutex::default(),
            held_task,
            open: opened,
        };
        (Arc::new(timeouts), open)
    }

    /// The tasks that ran, with how long after `start` each began.
    fn ran_since(&self, start: Instant) -> Vec<(i64, Duration)> {
        let ran = self.ran.lock().unwrap();
        ran.iter().map(|(id, at)| (*id, *at - start)).collect()
    }
}

#[async_trait]
impl Transitions for RecordedTimeouts {
    async fn timeout_process(&self, task: &Task, _owner: &str) -> Result<Applied, StoreError> {
        self.ran.lock().unwrap().push((task.id, Instant::now()));
        if self.held_task == Some(task.id) {
            let mut open = self.open.clone();
            open.wait_for(|open| *open)
                .await
                .expect("the test keeps the sender");
        }
        Ok(Applied::default())
    }
    async fn load_state_call(&self, _: &Task, _: &str) -> Result<Option<StateCall>, StoreError> {
        unreachable!("only process timeouts are claimed here")
    }
    async fn complete_wait_until(
        &self,
        _: &Task,
        _: &str,
        _: &StateCall,
        _: &AsyncStateWaitUntilResponse,
    ) -> Result<Applied, StoreError> {
        unreachable!("only process timeouts are claimed here")
    }
    async fn complete_execute(
        &self,
        _: &Task,
        _: &str,
        _: &StateCall,
        _: &AsyncStateExecuteResponse,
    ) -> Result<Applied, StoreError> {
        unreachable!("only process timeouts are claimed here")
    }
    async fn state_api_failed(
        &self,
        _: &Task,
        _: &str,
        _: &StateCall,
        _: StateApi,
        _: &xdb_engine::decide::AttemptFailure,
    ) -> Result<Applied, StoreError> {
        unreachable!("only process timeouts are claimed here")
    }
    async fn state_api_given_up(
        &self,
        _: &Task,
        _: &str,
        _: &StateCall,
        _: StateApi,
        _: &str,
    ) -> Result<Applied, StoreError> {
        unreachable!("only process timeouts are claimed here")
    }
    async fn fire_timer(&self, _: &Task, _: &str) -> Result<Applied, StoreError> {
        unreachable!("only process timeouts are claimed here")
    }
    async fn fired_timer_call(&self, _: &Task) -> Result<Option<FiredTimer>, StoreError> {
        unreachable!("only process timeouts are claimed here")
    }
    async fn complete_fired_execute(
        &self,
        _: &Task,
        _: &str,
        _: &FiredTimer,
        _: &AsyncStateExecuteResponse,
    ) -> Result<Applied, StoreError> {
        unreachable!("only process timeouts are claimed here")
    }
    async fn set_aside(&self, _: &Task, _: &str, _: &SetAside) -> Result<bool, StoreError> {
        unreachable!("nothing is refused here")
    }
    async fn hold_back(&self, _: &Task, _: &str, _: Duration) -> Result<bool, StoreError> {
        unreachable!("nothing is limited here")
    }
    async fn take_call_slot(
        &self,
        _: &Task,
        _: &str,
        _: &str,
        _: &str,
        _: xdb_persistence::CallSlotLimits,
    ) -> Result<bool, StoreError> {
        unreachable!("nothing is limited here")
    }
    async fn admit_pending_executions(&self) -> Result<usize, StoreError> {
        unreachable!("the claim loop admits nothing")
    }
    async fn forget_closed_run_slots(&self) -> Result<usize, StoreError> {
        unreachable!("the claim loop forgets nothing")
    }
}

/// A claim loop over `tasks` and `transitions`, its wall clock standing at `now`, with
/// `max_in_flight` permits; and what stops it.
fn start_loop(
    tasks: Arc<ScriptedTaskSource>,
    transitions: Arc<RecordedTimeouts>,
    now: DateTime<Utc>,
    max_in_flight: usize,
) -> (JoinHandle<()>, watch::Sender<bool>) {
    start_woken_loop(tasks, transitions, now, max_in_flight, None)
}

/// [`start_loop`], woken by what `notifications` carries.
fn start_woken_loop(
    tasks: Arc<ScriptedTaskSource>,
    transitions: Arc<RecordedTimeouts>,
    now: DateTime<Utc>,
    max_in_flight: usize,
    notifications: Option<Notifications>,
) -> (JoinHandle<()>, watch::Sender<bool>) {
    let context = HandlerContext {
        store: transitions,
        tasks,
        workers: xdb_worker_client::WorkerClient::new(1024),
        owner: "me".into(),
        default_api_timeout_seconds: 10,
        limits: xdb_protocol::Limits::default(),
        metrics: Arc::new(AsyncMetrics::new()),
        flow: Default::default(),
    };
    let queue = DbQueue {
        context: Arc::new(context),
        notifications,
        api_peers: PeerNotifier::disabled(),
        max_in_flight,
        lower_priority_max_in_flight: max_in_flight,
        leased: Arc::new(LeasedTasks::default()),
        lease: Duration::from_secs(30),
        poll_interval: POLL,
        clock: Arc::new(ManualClock::at(now)),
        park_after_refusals: 0,
    };
    let (stop, stopped) = watch::channel(false);
    (tokio::spawn(queue.run(stopped)), stop)
}

/// Stops the loop and waits for it, within (paused) time enough for anything it runs.
async fn stop_loop(run: JoinHandle<()>, stop: watch::Sender<bool>) {
    stop.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(5), run)
        .await
        .expect("the loop stops")
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_task_read_ahead_is_held_until_the_clock_says_it_is_due() {
    let ahead = chrono::Duration::milliseconds(300);
    let tasks = Arc::new(ScriptedTaskSource::with([vec![
        timeout_task(1, t0() + ahead),
        timeout_task(2, t0() - chrono::Duration::seconds(1)),
    ]]));
    let (transitions, _open) = RecordedTimeouts::new(None);
    let start = Instant::now();
    let (run, stop) = start_loop(tasks, transitions.clone(), t0(), 8);

    tokio::time::sleep(Duration::from_millis(299)).await;
    assert_eq!(transitions.ran_since(start), [(2, Duration::ZERO)]);
    tokio::time::sleep(Duration::from_millis(2)).await;
    assert_eq!(
        transitions.ran_since(start),
        [(2, Duration::ZERO), (1, Duration::from_millis(300))],
        "the task due 300 ms after the claim ran then, not before"
    );
    stop_loop(run, stop).await;
}

#[tokio::test(start_paused = true)]
async fn a_clock_past_a_tasks_due_time_runs_it_at_once() {
    let tasks = Arc::new(ScriptedTaskSource::with([vec![timeout_task(1, t0())]]));
    let (transitions, _open) = RecordedTimeouts::new(None);
    let start = Instant::now();
    // The database's clock reads later than the time the task was read ahead for.
    let now = t0() + chrono::Duration::milliseconds(1);
    let (run, stop) = start_loop(tasks, transitions.clone(), now, 8);

    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(transitions.ran_since(start), [(1, Duration::ZERO)]);
    stop_loop(run, stop).await;
}

#[tokio::test(start_paused = true)]
async fn nothing_is_claimed_while_every_permit_is_taken() {
    let due = t0() - chrono::Duration::seconds(1);
    let tasks = Arc::new(ScriptedTaskSource::with([
        vec![timeout_task(1, due)],
        vec![timeout_task(2, due)],
    ]));
    let (transitions, open) = RecordedTimeouts::new(Some(1));
    let start = Instant::now();
    let (run, stop) = start_loop(tasks.clone(), transitions.clone(), t0(), 1);

    // Task 1 holds the only permit for several poll intervals: no claim meanwhile.
    tokio::time::sleep(POLL * 4).await;
    assert_eq!(tasks.claim_limits(), [1]);
    assert_eq!(transitions.ran_since(start), [(1, Duration::ZERO)]);

    // Its permit back, the loop claims at once and runs task 2.
    open.send(true).unwrap();
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(&tasks.claim_limits()[..2], [1, 1]);
    assert_eq!(
        transitions.ran_since(start),
        [(1, Duration::ZERO), (2, POLL * 4)]
    );
    stop_loop(run, stop).await;
}

#[tokio::test(start_paused = true)]
async fn shutdown_waits_for_the_tasks_in_flight() {
    let tasks = Arc::new(ScriptedTaskSource::with([vec![timeout_task(1, t0())]]));
    let (transitions, open) = RecordedTimeouts::new(Some(1));
    let (run, stop) = start_loop(tasks.clone(), transitions.clone(), t0(), 8);
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(transitions.ran_since(Instant::now()).len(), 1);

    stop.send(true).unwrap();
    tokio::time::sleep(POLL * 4).await;
    assert!(!run.is_finished(), "the loop waits for task 1");
    let claims = tasks.claim_limits().len();

    open.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(5), run)
        .await
        .expect("the loop stops once task 1 is done")
        .unwrap();
    assert_eq!(
        tasks.claim_limits().len(),
        claims,
        "nothing claimed after shutdown"
    );
}

/// A wake-up naming a start's execution is served by claiming that execution's tasks,
/// without a search; the searches keep their schedule (one a poll interval here).
#[tokio::test(start_paused = true)]
async fn named_new_tasks_are_claimed_without_a_search() {
    let task = timeout_task(7, t0() - chrono::Duration::seconds(1));
    let execution = task.process_execution_id;
    let tasks = Arc::new(ScriptedTaskSource::default().answering_named([(vec![task], true)]));
    let (transitions, _open) = RecordedTimeouts::new(None);
    let notifications = Notifications::new();
    let start = Instant::now();
    let (run, stop) = start_woken_loop(
        tasks.clone(),
        transitions.clone(),
        t0(),
        8,
        Some(notifications.clone()),
    );
    let step = Duration::from_millis(100);
    tokio::time::sleep(step).await;
    assert_eq!(tasks.claim_limits(), [8], "the first search");

    notifications.publish(Notification::TasksOf(Arc::from([execution])));
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(tasks.named_claims(), [vec![execution]]);
    assert_eq!(transitions.ran_since(start), [(7, step)]);
    assert_eq!(tasks.claim_limits(), [8], "no search");

    tokio::time::sleep_until(start + POLL - Duration::from_millis(1)).await;
    assert_eq!(tasks.claim_limits(), [8]);
    tokio::time::sleep(Duration::from_millis(2)).await;
    assert_eq!(
        tasks.claim_limits(),
        [8, 8],
        "the next search when the first scheduled it, not a poll after the named claim"
    );
    stop_loop(run, stop).await;
}

/// A named claim that left some of the execution's tasks is followed by a search, for
/// the free permits left.
#[tokio::test(start_paused = true)]
async fn an_incomplete_named_claim_searches_after_it() {
    let due = t0() - chrono::Duration::seconds(1);
    let named = timeout_task(1, due);
    let execution = named.process_execution_id;
    let tasks = Arc::new(
        ScriptedTaskSource::with([vec![], vec![timeout_task(2, due)]])
            .answering_named([(vec![named], false)]),
    );
    let (transitions, _open) = RecordedTimeouts::new(None);
    let notifications = Notifications::new();
    let start = Instant::now();
    let (run, stop) = start_woken_loop(
        tasks.clone(),
        transitions.clone(),
        t0(),
        8,
        Some(notifications.clone()),
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    notifications.publish(Notification::TasksOf(Arc::from([execution])));
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(tasks.named_claims(), [vec![execution]]);
    assert_eq!(
        tasks.claim_limits(),
        [8, 7],
        "searched for the 7 permits left"
    );
    let ran: Vec<i64> = transitions
        .ran_since(start)
        .iter()
        .map(|(id, _)| *id)
        .collect();
    assert_eq!(ran, [1, 2]);
    stop_loop(run, stop).await;
}

/// An unnamed wake-up searches, as it always did.
#[tokio::test(start_paused = true)]
async fn an_unnamed_wake_up_searches() {
    let tasks = Arc::new(ScriptedTaskSource::default());
    let (transitions, _open) = RecordedTimeouts::new(None);
    let notifications = Notifications::new();
    let (run, stop) = start_woken_loop(
        tasks.clone(),
        transitions,
        t0(),
        8,
        Some(notifications.clone()),
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    notifications.publish(Notification::Tasks);
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(tasks.claim_limits(), [8, 8]);
    assert!(tasks.named_claims().is_empty());
    stop_loop(run, stop).await;
}
