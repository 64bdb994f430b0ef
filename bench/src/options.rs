//! What a run measures: the scenarios and their sizes.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::cdc::PulsarTarget;
use crate::ceiling::CeilingOptions;

/// A part of the bench that can be chosen with `--scenarios`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub enum Scenario {
    /// Two-state processes one at a time: start-to-completion latency.
    Lone,
    /// Two-state processes at several in-flight levels: throughput, latency, CPU.
    Load,
    /// One-second durable timers started together: lateness.
    Timers,
    /// RPCs on a running process: latency.
    Rpc,
    /// Local-queue publish to execute: latency.
    Queue,
    /// Many waiting processes: async-service memory, and load beside them.
    Waiting,
    /// Start calls as fast as a client can send them, the task table locked for the
    /// first seconds: refusals, their latency, the API service's peak memory.
    Overload,
    /// A million running executions over a business table as large: filtered list and
    /// count against the same SQL directly, a TERMINATE batch against stop calls.
    Fleet,
    /// Lone processes of priority 1 while a backlog of priority 5 drains, beside the
    /// idle "lone" figure.
    Backlog,
    /// The database's commit-rate ceiling (pgbench on PostgreSQL), and XDB's own
    /// statements of a two-state process run without XDB (see `limit`).
    Pgbench,
    /// An hour (`--minutes`) of steady mixed load with a held transaction and async
    /// instances replaced: throughput, latency, memory and table bloat a minute. Runs
    /// alone, not among the others.
    Soak,
}

impl Scenario {
    /// Every scenario, in the order a run performs them.
    pub const ALL: [Scenario; 10] = [
        Scenario::Lone,
        Scenario::Load,
        Scenario::Rpc,
        Scenario::Queue,
        Scenario::Timers,
        Scenario::Waiting,
        Scenario::Overload,
        Scenario::Fleet,
        Scenario::Backlog,
        Scenario::Pgbench,
    ];
}

/// Where the async service gets its work; `--queue` takes a list of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub enum QueueMode {
    /// The database queue: the async service claims task rows.
    Database,
    /// Pulsar CDC: the Pulsar IO Debezium source on the standalone of
    /// scripts/ensure-pulsar.sh captures the bench database, and the async service
    /// consumes its change topics.
    Pulsar,
}

impl QueueMode {
    /// How the report names the mode.
    pub fn label(self) -> &'static str {
        match self {
            QueueMode::Database => "database queue",
            QueueMode::Pulsar => "Pulsar CDC",
        }
    }
}

/// Scenarios a run of `mode` performs, of the `chosen` ones, when the queue modes
/// `modes` (in order) run one after the other on one database: the commit-rate ceiling
/// measures the database alone, with the services stopped, whatever feeds the async
/// service, so it runs once per database, in the first mode's run.
pub fn scenarios_of(
    chosen: &BTreeSet<Scenario>,
    modes: &[QueueMode],
    mode: QueueMode,
) -> BTreeSet<Scenario> {
    let first = modes.first() == Some(&mode);
    chosen
        .iter()
        .copied()
        .filter(|s| first || *s != Scenario::Pgbench)
        .collect()
}

/// What to run.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// PostgreSQL or MySQL server URL (any database on it; the scheme picks the
    /// dialect) where the bench database is created.
    pub admin_url: String,
    /// The scenarios to run.
    pub scenarios: BTreeSet<Scenario>,
    /// Processes of the "lone" scenario.
    pub lone: usize,
    /// Processes of each "load" level.
    pub processes: usize,
    /// The judged in-flight level of "load" (its CPU is measured).
    pub concurrency: usize,
    /// Further in-flight levels of "load".
    pub levels: Vec<usize>,
    /// Unmeasured processes run first, one at a time.
    pub warm_up: usize,
    /// Timers of the "timers" scenario, and their delay.
    pub timers: usize,
    pub timer_delay: Duration,
    /// RPC calls of the "rpc" scenario.
    pub rpc_calls: usize,
    /// Messages (one per waiting process) of the "queue" scenario.
    pub queue_messages: usize,
    /// Processes of the "waiting" scenario, and start calls in flight.
    pub waiting: usize,
    pub waiting_start_concurrency: usize,
    /// The "overload" burst.
    pub overload: crate::scenarios::overload::OverloadOptions,
    /// The "fleet" scenario's sizes.
    pub fleet: crate::scenarios::fleet::FleetOptions,
    /// The "backlog" scenario's sizes.
    pub backlog: crate::scenarios::backlog::BacklogOptions,
    /// The commit-rate ceiling.
    pub ceiling: CeilingOptions,
    /// Pulsar CDC mode: the async service consumes Debezium's change events from this
    /// broker; `None` runs the database queue.
    pub pulsar: Option<PulsarTarget>,
    /// Register the worker's process definitions first, so that every request is
    /// checked against them (off: the services as a worker that never registers sees
    /// them, and services older than definitions).
    pub register_definitions: bool,
}

impl BenchOptions {
    /// The queue mode of this run.
    pub fn queue_mode(&self) -> QueueMode {
        if self.pulsar.is_some() {
            QueueMode::Pulsar
        } else {
            QueueMode::Database
        }
    }

    /// Whether `scenario` runs.
    pub fn runs(&self, scenario: Scenario) -> bool {
        self.scenarios.contains(&scenario)
    }

    /// The in-flight levels of "load", ascending, the judged one included once.
    pub fn load_levels(&self) -> Vec<usize> {
        let mut levels: BTreeSet<usize> = self.levels.iter().copied().filter(|l| *l > 0).collect();
        levels.insert(self.concurrency);
        levels.into_iter().collect()
    }
}

/// Options of a small run of every scenario, for unit tests.
#[cfg(test)]
pub(crate) fn test_options() -> BenchOptions {
    BenchOptions {
        admin_url: String::new(),
        scenarios: Scenario::ALL.into_iter().collect(),
        lone: 1,
        processes: 1,
        concurrency: 64,
        levels: vec![128, 16, 0, 16],
        warm_up: 1,
        timers: 1,
        timer_delay: Duration::from_secs(1),
        rpc_calls: 1,
        queue_messages: 1,
        waiting: 1,
        waiting_start_concurrency: 1,
        overload: crate::scenarios::overload::OverloadOptions {
            starts: 1,
            clients: 1,
            lock: Duration::from_secs(1),
            completion_timeout: Duration::from_secs(1),
        },
        fleet: crate::scenarios::fleet::FleetOptions {
            executions: 1,
            list_requests: 1,
            count_runs: 1,
            unindexed_requests: 1,
            stops: 1,
            stop_clients: 1,
            batch: 1,
            rate_per_second: 1,
        },
        backlog: crate::scenarios::backlog::BacklogOptions {
            processes: 1,
            start_concurrency: 1,
            lone: 1,
        },
        ceiling: CeilingOptions {
            clients: 1,
            duration: Duration::from_secs(1),
            pgbench: "pgbench".into(),
        },
        pulsar: None,
        register_definitions: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_levels_are_sorted_unique_and_hold_the_judged_one() {
        let options = test_options();
        assert_eq!(options.load_levels(), vec![16, 64, 128]);
        let only_judged = BenchOptions {
            levels: Vec::new(),
            ..options.clone()
        };
        assert_eq!(only_judged.load_levels(), vec![64]);
        assert!(options.runs(Scenario::Waiting));
    }

    #[test]
    fn the_ceiling_runs_in_the_first_queue_mode_only() {
        let all: BTreeSet<Scenario> = Scenario::ALL.into_iter().collect();
        let both = [QueueMode::Database, QueueMode::Pulsar];
        assert_eq!(scenarios_of(&all, &both, QueueMode::Database), all);
        let pulsar = scenarios_of(&all, &both, QueueMode::Pulsar);
        assert!(!pulsar.contains(&Scenario::Pgbench));
        assert_eq!(pulsar.len(), all.len() - 1);
        assert_eq!(
            scenarios_of(&all, &[QueueMode::Pulsar], QueueMode::Pulsar),
            all
        );
        assert_eq!(test_options().queue_mode(), QueueMode::Database);
    }
}
