//! The async service's Prometheus metrics: every name, label and bucket in one place.
//! Each service instance has its own registry, served on its `/metrics`.

use chrono::{DateTime, Utc};
use prometheus::{
    Encoder, Gauge, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    Opts, Registry, TextEncoder,
};
use xdb_engine::{Task, TaskType};
use xdb_persistence::OperatorGauges;

/// Worker-call latency buckets, in seconds: a few milliseconds to the longest timeouts.
const WORKER_CALL_BUCKETS: [f64; 12] = [
    0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 60.0,
];
/// Timer-lateness buckets, in seconds: claim delay from ideal to badly overloaded.
const LATENESS_BUCKETS: [f64; 10] = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 60.0];
/// Tasks per gathered claim statement: one (a lone event) up to the statement's most, 64.
const CLAIM_BATCH_BUCKETS: [f64; 7] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];

/// Outcomes of handling a task (label `outcome` of [`AsyncMetrics::tasks_completed`]).
pub(crate) mod outcome {
    /// The task's transition committed (including a recorded worker failure).
    pub const OK: &str = "ok";
    /// The task no longer applied (its state moved on) and was dropped.
    pub const STALE: &str = "stale";
    /// The database refused the transition; handled again after a pause or once the
    /// lease expires.
    pub const DATABASE_ERROR: &str = "database_error";
    /// Any other failure; the task runs again once its lease expires.
    pub const ERROR: &str = "error";
}

/// The instance's metrics.
pub(crate) struct AsyncMetrics {
    registry: Registry,
    /// `xdb_async_tasks_claimed_total{task_type}`.
    pub tasks_claimed: IntCounterVec,
    /// `xdb_async_continuations_total{task_type}`: of those, the ones leased by this
    /// instance's own transitions.
    pub continuations: IntCounterVec,
    /// `xdb_async_tasks_completed_total{task_type, outcome}`.
    pub tasks_completed: IntCounterVec,
    /// `xdb_async_task_retries_total{task_type}`: claims of a task's second or later attempt.
    pub task_retries: IntCounterVec,
    /// `xdb_async_worker_call_duration_seconds{process_type, state_id, api}`.
    pub worker_call_seconds: HistogramVec,
    /// `xdb_async_worker_call_errors_total{process_type, state_id, api}`.
    pub worker_call_errors: IntCounterVec,
    /// `xdb_async_timer_lateness_seconds`: how long after its due time a timer was claimed.
    pub timer_lateness_seconds: Histogram,
    /// `xdb_async_queue_backlog`: due tasks no instance holds, sampled at each scrape.
    pub queue_backlog: IntGauge,
    /// `xdb_async_leases_held`: tasks this instance is working on.
    pub leases_held: IntGauge,
    /// `xdb_async_tasks_parked_total`: tasks set aside for an operator (see
    /// `scheduling::on_failure`).
    pub tasks_parked: IntCounter,
    /// `xdb_async_pulsar_consumers_lost_total{consumer}`: Pulsar consumers the client
    /// gave up on, each subscribed again by the instance itself.
    pub pulsar_resubscriptions: IntCounterVec,
    /// `xdb_async_pulsar_claim_batch_tasks`: tasks each gathered claim statement of
    /// Pulsar mode claimed by id.
    pub pulsar_claim_batch_tasks: Histogram,
    /// `xdb_async_paused_executions`: running executions an operator paused, sampled at
    /// each scrape.
    pub paused_executions: IntGauge,
    /// `xdb_async_pending_executions`: executions waiting `PENDING` for a running slot
    /// of their concurrency key (`maxRunningExecutions`), sampled at each scrape.
    pub pending_executions: IntGauge,
    /// `xdb_async_parked_tasks`: tasks parked as refused, waiting for an operator's
    /// retry-now, sampled at each scrape.
    pub parked_tasks: IntGauge,
    /// `xdb_async_states_past_attempts`: state calls at or past
    /// `async.attempts_alert_threshold` attempts, sampled at each scrape.
    pub states_past_attempts: IntGauge,
    /// `xdb_clock_offset_seconds`: how far this machine's clock is ahead of the
    /// database's, as the store last measured it (set from `clock` at each scrape).
    clock_offset_seconds: Gauge,
    clock: std::sync::OnceLock<xdb_persistence::DatabaseClock>,
}

impl AsyncMetrics {
    pub(crate) fn new() -> Self {
        let registry = Registry::new();
        let worker_labels = ["process_type", "state_id", "api"];
        let metrics = Self {
            tasks_claimed: IntCounterVec::new(
                Opts::new(
                    "xdb_async_tasks_claimed_total",
                    "Tasks taken to work on (claimed, or leased as a continuation), by type.",
                ),
                &["task_type"],
            )
            .expect("valid metric"),
            continuations: IntCounterVec::new(
                Opts::new(
                    "xdb_async_continuations_total",
                    "Tasks run at once by the instance whose transition created them \
                     (continuations: claimed by no one, and in Pulsar mode carried by no \
                     change event), by type.",
                ),
                &["task_type"],
            )
            .expect("valid metric"),
            tasks_completed: IntCounterVec::new(
                Opts::new(
                    "xdb_async_tasks_completed_total",
                    "Task handlings finished, by type and outcome.",
                ),
                &["task_type", "outcome"],
            )
            .expect("valid metric"),
            task_retries: IntCounterVec::new(
                Opts::new(
                    "xdb_async_task_retries_total",
                    "Claims of a retry attempt (attempt 2 or later), by type.",
                ),
                &["task_type"],
            )
            .expect("valid metric"),
            worker_call_seconds: HistogramVec::new(
                HistogramOpts::new(
                    "xdb_async_worker_call_duration_seconds",
                    "Latency of worker state-API calls, by state.",
                )
                .buckets(WORKER_CALL_BUCKETS.to_vec()),
                &worker_labels,
            )
            .expect("valid metric"),
            worker_call_errors: IntCounterVec::new(
                Opts::new(
                    "xdb_async_worker_call_errors_total",
                    "Worker state-API calls that failed (unreachable, timeout, error status, \
                     invalid body), by state.",
                ),
                &worker_labels,
            )
            .expect("valid metric"),
            timer_lateness_seconds: Histogram::with_opts(
                HistogramOpts::new(
                    "xdb_async_timer_lateness_seconds",
                    "Delay between a timer's due time and its claim.",
                )
                .buckets(LATENESS_BUCKETS.to_vec()),
            )
            .expect("valid metric"),
            queue_backlog: IntGauge::new(
                "xdb_async_queue_backlog",
                "Due tasks not leased by any instance (sampled at scrape, capped).",
            )
            .expect("valid metric"),
            leases_held: IntGauge::new(
                "xdb_async_leases_held",
                "Tasks this instance holds a lease on and is working on.",
            )
            .expect("valid metric"),
            tasks_parked: IntCounter::new(
                "xdb_async_tasks_parked_total",
                "Tasks parked until an operator's retry-now or give-up: a failure that would \
                 come back the same, or a transient one past the source's limit.",
            )
            .expect("valid metric"),
            pulsar_resubscriptions: IntCounterVec::new(
                Opts::new(
                    "xdb_async_pulsar_consumers_lost_total",
                    "Pulsar consumers whose stream ended (the client gave up on the broker), \
                     each then subscribed again by the instance, by consumer.",
                ),
                &["consumer"],
            )
            .expect("valid metric"),
            pulsar_claim_batch_tasks: Histogram::with_opts(
                HistogramOpts::new(
                    "xdb_async_pulsar_claim_batch_tasks",
                    "Tasks claimed by id with one statement in Pulsar mode (the claims of \
                     change events and timer messages that came while earlier statements \
                     ran go together).",
                )
                .buckets(CLAIM_BATCH_BUCKETS.to_vec()),
            )
            .expect("valid metric"),
            paused_executions: IntGauge::new(
                "xdb_async_paused_executions",
                "Running executions an operator paused (sampled at scrape, capped).",
            )
            .expect("valid metric"),
            pending_executions: IntGauge::new(
                "xdb_async_pending_executions",
                "Executions waiting PENDING for a running slot of their concurrency key \
                 (maxRunningExecutions; sampled at scrape, capped).",
            )
            .expect("valid metric"),
            parked_tasks: IntGauge::new(
                "xdb_async_parked_tasks",
                "Tasks parked because the database refused their transition, waiting for \
                 an operator's retry-now (sampled at scrape, capped).",
            )
            .expect("valid metric"),
            states_past_attempts: IntGauge::new(
                "xdb_async_states_past_attempts",
                "State calls (WAIT_UNTIL, EXECUTE) at attempt async.attempts_alert_threshold \
                 or later: states that keep failing (sampled at scrape, capped).",
            )
            .expect("valid metric"),
            clock_offset_seconds: clock_offset_gauge(),
            clock: std::sync::OnceLock::new(),
            registry,
        };
        metrics
            .registry
            .register(Box::new(metrics.clock_offset_seconds.clone()))
            .expect("metric names are unique");
        let collectors: [Box<dyn prometheus::core::Collector>; 16] = [
            Box::new(metrics.tasks_claimed.clone()),
            Box::new(metrics.continuations.clone()),
            Box::new(metrics.tasks_completed.clone()),
            Box::new(metrics.task_retries.clone()),
            Box::new(metrics.worker_call_seconds.clone()),
            Box::new(metrics.worker_call_errors.clone()),
            Box::new(metrics.timer_lateness_seconds.clone()),
            Box::new(metrics.queue_backlog.clone()),
            Box::new(metrics.leases_held.clone()),
            Box::new(metrics.tasks_parked.clone()),
            Box::new(metrics.pulsar_resubscriptions.clone()),
            Box::new(metrics.pulsar_claim_batch_tasks.clone()),
            Box::new(metrics.paused_executions.clone()),
            Box::new(metrics.pending_executions.clone()),
            Box::new(metrics.parked_tasks.clone()),
            Box::new(metrics.states_past_attempts.clone()),
        ];
        for collector in collectors {
            metrics
                .registry
                .register(collector)
                .expect("metric names are unique");
        }
        metrics
    }

    /// Records a claim: the count, a retry, and a timer's lateness as of `now`.
    pub(crate) fn claimed(&self, task: &Task, now: DateTime<Utc>) {
        let task_type = task.task_type.as_str();
        self.tasks_claimed.with_label_values(&[task_type]).inc();
        if task.attempt > 1 {
            self.task_retries.with_label_values(&[task_type]).inc();
        }
        if task.task_type == TaskType::Timer {
            self.timer_lateness_seconds
                .observe(lateness_seconds(task.fire_at, now));
        }
    }

    /// Records a continuation: a claim ([`Self::claimed`]) that no one had to make.
    pub(crate) fn continued(&self, task: &Task, now: DateTime<Utc>) {
        self.claimed(task, now);
        self.continuations
            .with_label_values(&[task.task_type.as_str()])
            .inc();
    }

    /// Sets the gauges of what needs an operator from one sample.
    pub(crate) fn set_operator_gauges(&self, gauges: &OperatorGauges) {
        self.paused_executions.set(gauges.paused_executions);
        self.pending_executions.set(gauges.pending_executions);
        self.parked_tasks.set(gauges.parked_tasks);
        self.states_past_attempts.set(gauges.states_past_attempts);
    }

    /// Reports `clock`'s offset as `xdb_clock_offset_seconds`.
    pub(crate) fn with_database_clock(self, clock: xdb_persistence::DatabaseClock) -> Self {
        let _ = self.clock.set(clock);
        self
    }

    /// The Prometheus text exposition of every metric.
    pub(crate) fn encode(&self) -> String {
        if let Some(clock) = self.clock.get() {
            self.clock_offset_seconds.set(clock.offset_seconds());
        }
        let mut text = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut text)
            .expect("encoding into memory cannot fail");
        String::from_utf8(text).expect("the text format is UTF-8")
    }
}

/// `xdb_clock_offset_seconds`, the same in both services.
fn clock_offset_gauge() -> Gauge {
    Gauge::new(
        "xdb_clock_offset_seconds",
        "How far this instance's clock is ahead of the database's (negative: behind), as \
         last measured. XDB goes by the database's clock; beyond a second, fix NTP.",
    )
    .expect("valid metric")
}

/// Seconds from `due` to `claimed`; 0 for a task claimed on time (the database clock may
/// run slightly ahead of ours).
fn lateness_seconds(due: DateTime<Utc>, claimed: DateTime<Utc>) -> f64 {
    ((claimed - due).num_microseconds().unwrap_or(i64::MAX) as f64 / 1e6).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(task_type: TaskType, attempt: i32, fire_at: DateTime<Utc>) -> Task {
        Task {
            id: 1,
            task_type,
            fire_at,
            process_execution_id: uuid::Uuid::nil(),
            state: None,
            timer_index: None,
            attempt,
            first_attempt_at: None,
            traceparent: None,
        }
    }

    #[test]
    fn a_claim_counts_its_type_retries_and_timer_lateness() {
        let metrics = AsyncMetrics::new();
        let now = Utc::now();
        metrics.claimed(&task(TaskType::Execute, 1, now), now);
        metrics.claimed(&task(TaskType::Execute, 3, now), now);
        let due = now - chrono::Duration::milliseconds(300);
        metrics.claimed(&task(TaskType::Timer, 1, due), now);
        assert_eq!(
            metrics.tasks_claimed.with_label_values(&["EXECUTE"]).get(),
            2
        );
        assert_eq!(
            metrics.task_retries.with_label_values(&["EXECUTE"]).get(),
            1
        );
        assert_eq!(metrics.timer_lateness_seconds.get_sample_count(), 1);
        assert!((metrics.timer_lateness_seconds.get_sample_sum() - 0.3).abs() < 1e-9);
        let text = metrics.encode();
        assert!(text.contains("xdb_async_tasks_claimed_total{task_type=\"EXECUTE\"} 2"));
        metrics.continued(&task(TaskType::WaitUntil, 1, now), now);
        let text = metrics.encode();
        assert!(text.contains("xdb_async_tasks_claimed_total{task_type=\"WAIT_UNTIL\"} 1"));
        assert!(text.contains("xdb_async_continuations_total{task_type=\"WAIT_UNTIL\"} 1"));
        assert!(!text.contains("xdb_async_continuations_total{task_type=\"EXECUTE\"}"));
    }

    #[test]
    fn operator_gauges_are_exposed_as_sampled() {
        let metrics = AsyncMetrics::new();
        let text = metrics.encode();
        for name in [
            "xdb_async_paused_executions 0",
            "xdb_async_pending_executions 0",
            "xdb_async_parked_tasks 0",
            "xdb_async_states_past_attempts 0",
        ] {
            assert!(text.contains(name), "{name}:\n{text}");
        }
        metrics.set_operator_gauges(&OperatorGauges {
            paused_executions: 2,
            pending_executions: 4,
            parked_tasks: 1,
            states_past_attempts: 7,
        });
        let text = metrics.encode();
        for name in [
            "xdb_async_paused_executions 2",
            "xdb_async_pending_executions 4",
            "xdb_async_parked_tasks 1",
            "xdb_async_states_past_attempts 7",
        ] {
            assert!(text.contains(name), "{name}:\n{text}");
        }
    }

    #[test]
    fn lateness_is_never_negative() {
        let now = Utc::now();
        assert_eq!(
            lateness_seconds(now + chrono::Duration::seconds(1), now),
            0.0
        );
    }
}
