//! Network partitions: a [`TcpProxy`] between a service and the database, or between
//! the async service and the worker, blackholes (connections stay open, nothing moves,
//! no RST), resets or heals the path while work is under way, on PostgreSQL and
//! MariaDB:
//!
//! - [`async_cut`]: an async instance cut off from the database mid-transition loses
//!   its leases to another instance, applies nothing stale once healed (completions
//!   are fenced by lease owner) and claims work again without a restart;
//! - [`api_cut`]: an API instance cut off mid-RPC holding the process's row lock:
//!   other calls on the process wait only until the database ends the orphaned session
//!   (`xdb-persistence/src/session_limits.rs`), and the RPC's caller gets an error;
//! - [`worker_cut`]: the path to the worker blackholed mid-call: calls time out per the
//!   state's timeout, are retried, and complete once healed, each effect once.
//!
//! Each fault prints one `partition-report` line (see [`Report`]). The API cut waits
//! for the database to end the RPC's idle transaction (15 s) and runs beside the other two.

mod api_cut;
mod async_cut;
mod worker_cut;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use xdb_integration_tests::processes::counted_site;
use xdb_integration_tests::{eventually, Arg, Database, XdbTestEnv};
use xdb_samples::site_services::{ExternalServices, Operation};

/// What one fault did, printed as one line in the same format for every fault, so runs
/// compare at a glance.
pub struct Report {
    pub db: Database,
    pub fault: &'static str,
    /// Times the fault was injected.
    pub injected: usize,
    /// Processes with work in flight on the cut path when it was cut.
    pub affected: usize,
    /// Processes that did not complete (or, for an RPC, calls that got no answer).
    pub lost: usize,
    /// Transitions or business writes applied more than once.
    pub duplicated: usize,
    /// Per affected process: from `recovery_from` until it made progress again.
    pub recovery: Vec<Duration>,
    /// The instant recovery is measured from: `heal`, or `cut` for recovery that does
    /// not wait for the path to heal (another instance takes over).
    pub recovery_from: &'static str,
    /// From the heal until the service that was cut off did work again.
    pub resumed_after_heal: Option<Duration>,
}

impl Report {
    pub fn print(&self) {
        let mut sorted = self.recovery.clone();
        sorted.sort();
        let pct = |p: f64| -> String {
            if sorted.is_empty() {
                return "-".into();
            }
            let index = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
            format!("{:.2}s", sorted[index].as_secs_f64())
        };
        println!(
            "partition-report db={:?} fault={} injected={} affected={} lost={} duplicated={} \
             recovery_p50={} recovery_p99={} recovery_from={} resumed_after_heal={}",
            self.db,
            self.fault,
            self.injected,
            self.affected,
            self.lost,
            self.duplicated,
            pct(0.50),
            pct(0.99),
            self.recovery_from,
            self.resumed_after_heal
                .map_or("-".into(), |d| format!("{:.2}s", d.as_secs_f64())),
        );
    }
}

/// Every state of a counted-site creation ran its execute once; the history agrees.
const EXECUTES_PER_SITE: i64 = counted_site::STATE_EXECUTIONS.len() as i64;

/// Checks every counted-site creation whose site id starts with `prefix`: completed,
/// each step's business write once, each external effect once, each execute recorded
/// once in the history. Returns (lost, duplicated) and panics on neither.
pub async fn check_sites(
    env: &XdbTestEnv,
    services: &ExternalServices,
    prefix: &str,
) -> (usize, usize) {
    let rows: Vec<_> = env
        .counted_site_rows()
        .await
        .into_iter()
        .filter(|r| r.site_id.starts_with(prefix))
        .collect();
    let mut lost = 0;
    let mut duplicated = 0;
    let expected_effects = BTreeMap::from([
        (Operation::CreateFileSystem, 1),
        (Operation::CreateDatabase, 1),
        (Operation::Bootstrap, 1),
    ]);
    for row in &rows {
        if row.status != "created" {
            lost += 1;
        }
        let effects = services.report(&row.site_id).map(|r| r.effects);
        if row.counters.iter().any(|&c| c > 1)
            || effects.as_ref().is_some_and(|e| e.values().any(|&n| n > 1))
        {
            duplicated += 1;
        } else if row.counters != [1; 5] || effects.as_ref() != Some(&expected_effects) {
            lost += 1;
        }
    }
    let executes = env
        .query(
            "SELECT p.process_id, count(*) FROM xdb_sys_history_events h \
             JOIN xdb_sys_process_executions p ON p.id = h.process_execution_id \
             WHERE h.event_type = 'EXECUTE_COMPLETED' AND p.process_id LIKE $1 \
             GROUP BY p.process_id",
            &[Arg::from(format!("{}%", counted_site::process_id(prefix)))],
        )
        .await;
    assert_eq!(executes.len(), rows.len(), "a history per site");
    for row in &executes {
        assert_eq!(
            row.i64(1),
            EXECUTES_PER_SITE,
            "executes recorded for {}",
            row.text(0)
        );
    }
    assert_eq!((lost, duplicated), (0, 0), "sites {prefix}*: {rows:?}");
    (lost, duplicated)
}

/// The highest history event id now (0 when there is none).
pub async fn last_event(env: &XdbTestEnv) -> i64 {
    env.query(
        "SELECT COALESCE(max(id), 0) FROM xdb_sys_history_events",
        &[],
    )
    .await[0]
        .i64(0)
}

/// Watches `executions` (ids) from `since` (now) until each records a transition after
/// history event `after`; each one's time to do so.
pub async fn time_to_progress(
    env: &XdbTestEnv,
    executions: &BTreeSet<String>,
    after: i64,
    since: Instant,
    limit: Duration,
) -> Vec<Duration> {
    let mut waiting = executions.clone();
    let mut times = Vec::new();
    let deadline = Instant::now() + limit;
    while !waiting.is_empty() {
        assert!(
            Instant::now() < deadline,
            "{} executions made no progress within {limit:?}: {waiting:?}",
            waiting.len()
        );
        let progressed = env
            .query(
                "SELECT DISTINCT process_execution_id FROM xdb_sys_history_events \
                 WHERE id > $1 AND event_type IN \
                 ('WAIT_UNTIL_COMPLETED', 'EXECUTE_COMPLETED', 'STATE_API_FAILED')",
                &[Arg::Int(after)],
            )
            .await;
        let elapsed = since.elapsed();
        for row in progressed {
            if waiting.remove(&row.uuid(0).to_string()) {
                times.push(elapsed);
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    times
}

/// Waits until no execution whose process id starts with `prefix` is running.
pub async fn all_closed(env: &XdbTestEnv, prefix: &str, limit: Duration) {
    eventually("every process to close", limit, || async {
        env.count(
            "SELECT count(*) FROM xdb_sys_process_executions \
             WHERE status = 'RUNNING' AND process_id LIKE $1",
            &[Arg::from(format!("{prefix}%"))],
        )
        .await
            == 0
    })
    .await;
}

async fn partitions(db: Database) {
    let _serial = crate::ONE_AT_A_TIME.lock().await;
    // The API cut mostly waits on the database's timeout: it runs beside the others.
    let (api, (async_reports, worker)) = tokio::join!(api_cut::run(db), async {
        let async_reports = async_cut::run(db).await;
        (async_reports, worker_cut::run(db).await)
    });
    for report in async_reports.iter().chain([&worker, &api]) {
        report.print();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_partitions_lose_and_duplicate_nothing() {
    partitions(Database::Postgres).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_partitions_lose_and_duplicate_nothing() {
    partitions(Database::MySql).await
}
