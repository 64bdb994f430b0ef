use chrono::TimeDelta;
use uuid::Uuid;
use xdb_protocol::priority::LOWEST;

use super::*;
use crate::sql::SqlKind;

const LEASE: Duration = Duration::from_secs(30);

// The generic forms are MySQL's own, and called directly on PostgreSQL, whose store
// overrides them.
on_both_databases!(
    store => store;
    due_timers_are_claimed_ahead_of_a_backlog_and_leased_from_the_database_clock,
    a_run_out_lease_is_claimed_again_ahead_of_a_timer_read_ahead,
    a_claim_takes_the_tasks_past_those_another_claim_holds,
    a_claim_by_id_takes_a_due_free_task_once_and_says_why_not_otherwise,
    a_claim_by_ids_answers_every_id_from_one_transaction,
    dead_instances_lose_their_leases_then_their_registrations,
    the_store_s_own_release_of_dead_leases_does_the_same,
);

/// A task row due `due_in` from now (by this host's clock, the database's too), leased
/// to `lease` until `lease_in` from now when given; its id and execution id.
async fn insert_task<D: TaskQueue>(
    store: &D,
    task_type: &str,
    due_in: TimeDelta,
    lease: Option<(&str, TimeDelta)>,
) -> (i64, Uuid) {
    let now = Utc::now();
    let execution = Uuid::new_v4();
    let mut session = store.session(Lane::Main).await.unwrap();
    let sql = "INSERT INTO xdb_sys_tasks (task_type, fire_at, process_execution_id, \
               state_id, state_execution_number, timer_index, lease_owner, lease_expires_at) \
               VALUES (?, ?, ?, 'A', 1, ?, ?, ?)";
    let timer_index = (task_type == "TIMER").then_some(0);
    let params = [
        task_type.into(),
        (now + due_in).into(),
        execution.into(),
        timer_index.into(),
        Param::Text(lease.map(|(owner, _)| owner)),
        Param::Time(lease.map(|(_, lease_in)| now + lease_in)),
    ];
    let ids = session.insert_numbered(sql, &params, 1).await.unwrap();
    (ids[0], execution)
}

/// A task's lease owner, lease end and first attempt's time.
type Lease = (Option<String>, Option<DateTime<Utc>>, Option<DateTime<Utc>>);

async fn lease_of<D: TaskQueue>(store: &D, id: i64) -> Lease {
    let mut session = store.session(Lane::Main).await.unwrap();
    let sql = "SELECT lease_owner, lease_expires_at, first_attempt_at \
               FROM xdb_sys_tasks WHERE id = ?";
    let rows = session.query(sql, &[id.into()]).await.unwrap();
    let mut columns = <D::Session as SqlConn>::columns(&rows[0], 0);
    (
        columns.optional_text().unwrap(),
        columns.optional_time().unwrap(),
        columns.optional_time().unwrap(),
    )
}

/// `task` leased to `owner` for [`LEASE`] from its first attempt, as the claim said.
async fn assert_claimed<D: TaskQueue>(store: &D, task: &Task, owner: &str) {
    let first = task
        .first_attempt_at
        .expect("a claim sets the first attempt");
    let expires = first + TimeDelta::from_std(LEASE).unwrap();
    assert_eq!(
        lease_of(store, task.id).await,
        (Some(owner.to_string()), Some(expires), Some(first)),
        "{task:?}"
    );
}

fn ids(claimed: &[ClaimedRows]) -> Vec<i64> {
    claimed.iter().map(|(task, _)| task.id).collect()
}

/// A timer that just came due is claimed before a backlog of older tasks; tasks due
/// later, and tasks leased to someone else, are not claimed at all.
async fn due_timers_are_claimed_ahead_of_a_backlog_and_leased_from_the_database_clock<
    D: TaskQueue,
>(
    store: D,
) {
    let mut backlog = Vec::new();
    for age in [60, 50, 40] {
        backlog.push(
            insert_task(&store, "EXECUTE", TimeDelta::seconds(-age), None)
                .await
                .0,
        );
    }
    let (timer, _) = insert_task(&store, "TIMER", TimeDelta::seconds(-1), None).await;
    let (later, _) = insert_task(&store, "TIMER", TimeDelta::hours(1), None).await;
    let (theirs, _) = insert_task(
        &store,
        "EXECUTE",
        TimeDelta::seconds(-70),
        Some(("other", TimeDelta::seconds(30))),
    )
    .await;

    let first = claim_due(&store, "me", 2, LEASE, 0.5, LOWEST)
        .await
        .unwrap();
    assert_eq!(ids(&first), vec![timer, backlog[0]]);
    assert!(first.iter().all(|(_, rows)| rows.is_none()));
    for (task, _) in &first {
        assert_claimed(&store, task, "me").await;
    }

    let rest = claim_due(&store, "me", 10, LEASE, 0.5, LOWEST)
        .await
        .unwrap();
    assert_eq!(ids(&rest), vec![backlog[1], backlog[2]]);
    for (task, _) in &rest {
        assert_claimed(&store, task, "me").await;
    }
    assert_eq!(lease_of(&store, later).await, (None, None, None));
    assert_eq!(lease_of(&store, theirs).await.0.as_deref(), Some("other"));
    assert!(claim_due(&store, "me", 10, LEASE, 0.5, LOWEST)
        .await
        .unwrap()
        .is_empty());
}

/// Another instance's claim holds the first tasks due (it has not committed yet): a
/// claim skips them and takes those after, rather than nothing.
async fn a_claim_takes_the_tasks_past_those_another_claim_holds<D: TaskQueue>(store: D) {
    let mut due = Vec::new();
    for age in [40, 30, 20, 10] {
        due.push(
            insert_task(&store, "EXECUTE", TimeDelta::seconds(-age), None)
                .await
                .0,
        );
    }
    let mut theirs = store.begin(Lane::Main).await.unwrap();
    // One by one by the key: MariaDB scans a table this small for an `IN` list, and
    // then holds every row.
    for &id in &due[..2] {
        let held = theirs
            .query(
                "SELECT id FROM xdb_sys_tasks WHERE id = ? FOR UPDATE",
                &[id.into()],
            )
            .await
            .unwrap();
        assert_eq!(held.len(), 1);
    }

    let claimed = claim_due(&store, "me", 2, LEASE, 0.5, LOWEST)
        .await
        .unwrap();
    assert_eq!(ids(&claimed), due[2..].to_vec());
    theirs.commit().await.unwrap();
    for id in &due[..2] {
        assert_eq!(lease_of(&store, *id).await, (None, None, None));
    }
}

/// A task whose lease ran out (its instance died) is due now, so it goes ahead of a
/// timer read ahead of its due time; the timer comes with the next claim.
async fn a_run_out_lease_is_claimed_again_ahead_of_a_timer_read_ahead<D: TaskQueue>(store: D) {
    let (timer, _) = insert_task(&store, "TIMER", TimeDelta::seconds(30), None).await;
    let (orphan, _) = insert_task(
        &store,
        "EXECUTE",
        TimeDelta::seconds(-60),
        Some(("dead", TimeDelta::seconds(-5))),
    )
    .await;

    let first = claim_due(&store, "me", 1, LEASE, 60.0, LOWEST)
        .await
        .unwrap();
    assert_eq!(ids(&first), vec![orphan]);
    assert_claimed(&store, &first[0].0, "me").await;

    let ahead = claim_due(&store, "me", 1, LEASE, 60.0, LOWEST)
        .await
        .unwrap();
    assert_eq!(ids(&ahead), vec![timer]);
    let (task, _) = &ahead[0];
    assert!(task.fire_at > task.first_attempt_at.unwrap(), "{task:?}");
    assert_claimed(&store, task, "me").await;
    // Not within the look-ahead: nothing.
    insert_task(&store, "TIMER", TimeDelta::hours(1), None).await;
    assert!(claim_due(&store, "me", 1, LEASE, 60.0, LOWEST)
        .await
        .unwrap()
        .is_empty());
}

async fn a_claim_by_id_takes_a_due_free_task_once_and_says_why_not_otherwise<D: TaskQueue>(
    store: D,
) {
    let (due, _) = insert_task(&store, "EXECUTE", TimeDelta::seconds(-1), None).await;
    let (later, _) = insert_task(&store, "TIMER", TimeDelta::hours(1), None).await;
    assert_eq!(
        claim_one(&store, due + 1000, "a", LEASE).await,
        TaskClaim::Gone
    );
    match claim_one(&store, later, "a", LEASE).await {
        TaskClaim::NotDue(wait) => assert!(
            wait > Duration::from_secs(3500) && wait <= Duration::from_secs(3600),
            "{wait:?}"
        ),
        other => panic!("due in an hour: {other:?}"),
    }
    assert_eq!(lease_of(&store, later).await, (None, None, None));

    // Locked by a transaction that is completing or claiming it: looked at again soon.
    let mut holder = store.begin(Lane::Main).await.unwrap();
    holder
        .query(
            "SELECT id FROM xdb_sys_tasks WHERE id = ? FOR UPDATE",
            &[due.into()],
        )
        .await
        .unwrap();
    match claim_one(&store, due, "a", LEASE).await {
        TaskClaim::Leased(wait) => assert!(wait < Duration::from_secs(1), "{wait:?}"),
        other => panic!("locked: {other:?}"),
    }
    holder.commit().await.unwrap();

    let TaskClaim::Claimed(task) = claim_one(&store, due, "a", LEASE).await else {
        panic!("a due, unleased task is claimed");
    };
    assert_eq!(task.id, due);
    assert_claimed(&store, &task, "a").await;
    match claim_one(&store, due, "b", LEASE).await {
        TaskClaim::Leased(left) => {
            assert!(left > Duration::from_secs(25) && left <= LEASE, "{left:?}")
        }
        other => panic!("leased to a: {other:?}"),
    }
}

/// [`claim_by_ids`] of one task.
async fn claim_one<D: TaskQueue>(store: &D, id: i64, owner: &str, lease: Duration) -> TaskClaim {
    let mut answers = claim_by_ids(store, &[id], owner, lease).await.unwrap();
    assert_eq!(answers.len(), 1, "{answers:?}");
    answers.remove(0)
}

async fn a_claim_by_ids_answers_every_id_from_one_transaction<D: TaskQueue>(store: D) {
    let (first, _) = insert_task(&store, "EXECUTE", TimeDelta::seconds(-1), None).await;
    let (second, _) = insert_task(&store, "WAIT_UNTIL", TimeDelta::seconds(-2), None).await;
    let (later, _) = insert_task(&store, "TIMER", TimeDelta::hours(1), None).await;
    let (locked, _) = insert_task(&store, "EXECUTE", TimeDelta::seconds(-1), None).await;
    let taken = Some(("b", TimeDelta::seconds(20)));
    let (held, _) = insert_task(&store, "EXECUTE", TimeDelta::seconds(-1), taken).await;
    let gone = held + 1000;
    let mut holder = store.begin(Lane::Main).await.unwrap();
    holder
        .query(
            "SELECT id FROM xdb_sys_tasks WHERE id = ? FOR UPDATE",
            &[locked.into()],
        )
        .await
        .unwrap();

    let named = [later, first, gone, locked, second, first, held];
    let answers = claim_by_ids(&store, &named, "a", LEASE).await.unwrap();
    holder.commit().await.unwrap();

    assert_eq!(answers.len(), named.len(), "{answers:?}");
    assert!(
        matches!(answers[0], TaskClaim::NotDue(wait) if wait > Duration::from_secs(3500)),
        "{answers:?}"
    );
    let TaskClaim::Claimed(task) = &answers[1] else {
        panic!("the first due task is claimed: {answers:?}");
    };
    assert_eq!(task.id, first);
    assert_claimed(&store, task, "a").await;
    assert_eq!(answers[2], TaskClaim::Gone);
    assert!(
        matches!(answers[3], TaskClaim::Leased(wait) if wait < Duration::from_secs(1)),
        "a locked task is looked at again soon: {answers:?}"
    );
    let TaskClaim::Claimed(task) = &answers[4] else {
        panic!("the second due task is claimed: {answers:?}");
    };
    assert_eq!(task.id, second);
    assert_claimed(&store, task, "a").await;
    assert_eq!(
        answers[5],
        TaskClaim::Leased(LEASE),
        "a task named twice is claimed once"
    );
    assert!(
        matches!(answers[6], TaskClaim::Leased(left) if left > Duration::from_secs(15)),
        "leased to b: {answers:?}"
    );
    assert_eq!(lease_of(&store, later).await, (None, None, None));
    assert_eq!(lease_of(&store, locked).await, (None, None, None));
    assert_eq!(lease_of(&store, held).await.0.as_deref(), Some("b"));
    assert!(claim_by_ids(&store, &[], "a", LEASE)
        .await
        .unwrap()
        .is_empty());
}

/// Registers `instance` of `service` with its heartbeat `age` ago and its stated
/// liveness timeout.
async fn register<D: TaskQueue>(
    store: &D,
    instance: &str,
    service: &str,
    age: TimeDelta,
    timeout_ms: Option<i32>,
) {
    let mut session = store.session(Lane::Main).await.unwrap();
    let sql = "INSERT INTO xdb_sys_service_instances \
               (instance_id, service, notify_url, heartbeat_at, liveness_timeout_ms) \
               VALUES (?, ?, 'http://127.0.0.1:9', ?, ?)";
    let params = [
        instance.into(),
        service.into(),
        (Utc::now() - age).into(),
        timeout_ms.into(),
    ];
    session.execute(sql, &params).await.unwrap();
}

async fn registered<D: TaskQueue>(store: &D) -> Vec<String> {
    let mut session = store.session(Lane::Main).await.unwrap();
    let sql = "SELECT instance_id FROM xdb_sys_service_instances ORDER BY instance_id";
    let rows = session.query(sql, &[]).await.unwrap();
    rows.iter()
        .map(|row| <D::Session as SqlConn>::columns(row, 0).text().unwrap())
        .collect()
}

/// Which release of dead leases a test calls: the generic form, or the store's own
/// (PostgreSQL's one statement; the generic form on MySQL).
#[derive(Clone, Copy)]
enum Release {
    Generic,
    StoresOwn,
}

impl Release {
    async fn call<D: TaskQueue>(
        self,
        store: &D,
        me: &str,
        timeout: Duration,
    ) -> Result<ReleasedLeases, StoreError> {
        match self {
            Release::Generic => release_dead(store, me, timeout).await,
            Release::StoresOwn => store.release_dead(me, timeout).await,
        }
    }
}

/// Only async instances other than the caller, silent for longer than both the timeout
/// asked and the one they stated, are judged dead; a task of theirs locked right now is
/// skipped, and their registration stays until they hold no lease.
async fn dead_instances_lose_their_leases_then_their_registrations<D: TaskQueue>(store: D) {
    dead_instances_are_released(store, Release::Generic).await;
}

async fn the_store_s_own_release_of_dead_leases_does_the_same<D: TaskQueue>(store: D) {
    dead_instances_are_released(store, Release::StoresOwn).await;
}

async fn dead_instances_are_released<D: TaskQueue>(store: D, release: Release) {
    let minute = TimeDelta::minutes(1);
    register(&store, "alive", "ASYNC", TimeDelta::zero(), Some(1000)).await;
    register(&store, "api", "API", minute, Some(1000)).await;
    register(&store, "dead", "ASYNC", minute, Some(1000)).await;
    register(&store, "me", "ASYNC", minute, Some(1000)).await;
    register(&store, "slow", "ASYNC", minute, Some(3_600_000)).await;
    register(&store, "unjudged", "ASYNC", minute, None).await;
    let past = TimeDelta::seconds(-1);
    let mut held = Vec::new();
    for owner in ["alive", "api", "me", "slow", "unjudged"] {
        let lease = Some((owner, TimeDelta::seconds(30)));
        held.push(insert_task(&store, "EXECUTE", past, lease).await.0);
    }
    let lease = Some(("dead", TimeDelta::seconds(30)));
    let freed = insert_task(&store, "EXECUTE", past, lease).await;
    let locked = insert_task(&store, "TIMER", past, lease).await;

    // Silent for a minute, less than the timeout asked: nobody is dead.
    let none = release
        .call(&store, "me", Duration::from_secs(3600))
        .await
        .unwrap();
    assert_eq!(none, ReleasedLeases::default());

    let mut holder = store.begin(Lane::Main).await.unwrap();
    holder
        .query(
            "SELECT id FROM xdb_sys_tasks WHERE id = ? FOR UPDATE",
            &[locked.0.into()],
        )
        .await
        .unwrap();
    let first = release
        .call(&store, "me", Duration::from_secs(1))
        .await
        .unwrap();
    assert_eq!(first.tasks, vec![freed]);
    assert!(first.removed.is_empty(), "{first:?}");
    assert_eq!(lease_of(&store, freed.0).await, (None, None, None));
    holder.commit().await.unwrap();

    let second = release
        .call(&store, "me", Duration::from_secs(1))
        .await
        .unwrap();
    assert_eq!(second.tasks, vec![locked]);
    // PostgreSQL's one statement reads the leases as they were before it freed them, so
    // it removes the registration in the round after the last release.
    let removed = match (release, <D::Tx as SqlConn>::KIND) {
        (Release::StoresOwn, SqlKind::Postgres) => {
            assert!(second.removed.is_empty(), "{second:?}");
            let third = release
                .call(&store, "me", Duration::from_secs(1))
                .await
                .unwrap();
            assert!(third.tasks.is_empty(), "{third:?}");
            third.removed
        }
        _ => second.removed,
    };
    assert_eq!(removed, vec!["dead".to_string()]);
    assert_eq!(
        registered(&store).await,
        ["alive", "api", "me", "slow", "unjudged"]
    );
    for (id, owner) in held
        .into_iter()
        .zip(["alive", "api", "me", "slow", "unjudged"])
    {
        assert_eq!(lease_of(&store, id).await.0.as_deref(), Some(owner));
    }
}

/// With a few dozen tasks in flight, MariaDB scanned the whole task table for the claim
/// and for the batched transitions' DELETE by ids (and a locking scan waits on every row
/// in flight); each reads through an index now, the claim's locked read by ids too. The
/// claim's UPDATE by ids names the key too; on this table MariaDB takes a range for it
/// even without.
#[tokio::test]
async fn on_mysql_the_task_statements_read_through_an_index_on_a_small_table() {
    use crate::sql_tables::task_rows::{delete_tasks_by_ids, tasks_by_ids};

    let (_db, store) = mysql_store().await;
    let mut session = crate::tables::Dialect::session(&store, Lane::Main)
        .await
        .unwrap();
    let mut ids = Vec::new();
    for n in 0..40 {
        // A third of them in flight, leased.
        let lease = (n % 3 == 0).then_some(("other", TimeDelta::seconds(30)));
        let kind = if n % 5 == 0 { "TIMER" } else { "EXECUTE" };
        ids.push(
            insert_task(&store, kind, TimeDelta::seconds(-1), lease)
                .await
                .0,
        );
    }
    // A batch's tasks: a good share of the table.
    let batch = &ids[..16];
    let listed = || vec!["?"; batch.len()].join(", ");
    let by_id = || batch.iter().map(|&id| Param::from(id));
    let due = due_params(1_000_000, 64, LOWEST);
    let statements = [
        (due_tasks(SqlKind::MySql, false).to_string(), due.clone()),
        (due_tasks(SqlKind::MySql, true).to_string(), due),
        (
            still_claimable(SqlKind::MySql, &listed()),
            std::iter::once(1_000_000i64.into())
                .chain(by_id())
                .collect(),
        ),
        (
            format!(
                "{} WHERE lease_owner = ? AND id IN ({})",
                delete_tasks_by_ids(SqlKind::MySql),
                listed()
            ),
            std::iter::once("other".into()).chain(by_id()).collect(),
        ),
        (
            format!(
                "UPDATE {} SET attempt = attempt + 1 WHERE id IN ({})",
                tasks_by_ids(SqlKind::MySql),
                listed()
            ),
            by_id().collect::<Vec<_>>(),
        ),
    ];
    for (sql, params) in statements {
        let plan = session
            .query(&format!("EXPLAIN {sql}"), &params)
            .await
            .unwrap();
        assert!(!plan.is_empty(), "{sql}");
        for row in &plan {
            // EXPLAIN's columns: id, select_type, table, type, …
            let access = access_type(&session, row);
            assert_ne!(access.as_deref(), Some("ALL"), "a whole-table scan: {sql}");
        }
    }
}

/// A MariaDB store on a test database of its own (dropped with the database handle).
async fn mysql_store() -> (xdb_test_util::TestDatabase, crate::mysql::MySqlStore) {
    let db = xdb_test_util::TestDatabase::create_mysql().await;
    let store = crate::mysql::MySqlStore::connect(db.url(), 4)
        .await
        .unwrap();
    (db, store)
}

/// A session of `store` that gives up a row-lock wait after a second: a statement of it
/// fails where another transaction holds the row.
async fn impatient_session(
    store: &crate::mysql::MySqlStore,
) -> <crate::mysql::MySqlStore as crate::tables::Dialect>::Session {
    let mut session = crate::tables::Dialect::session(store, Lane::Main)
        .await
        .unwrap();
    session
        .execute("SET SESSION innodb_lock_wait_timeout = 1", &[])
        .await
        .unwrap();
    session
}

/// The access type (`type`, the fourth column) of an EXPLAIN row.
fn access_type<C: SqlConn>(_: &C, row: &C::Row) -> Option<String> {
    C::columns(row, 3).optional_text().unwrap()
}

/// A locking range scan on MariaDB also locks the row just past its range until the
/// transaction ends, READ COMMITTED notwithstanding: for the claim's scans, the oldest
/// task in flight, which its transition then waited on the claim to delete. The claim
/// reads unlocked and locks the tasks it takes by their key: a task in flight can be
/// deleted meanwhile.
#[tokio::test]
async fn on_mysql_a_claim_locks_no_task_in_flight() {
    let (_db, store) = mysql_store().await;
    let leased = Some(("other", TimeDelta::seconds(30)));
    let (oldest_in_flight, _) =
        insert_task(&store, "EXECUTE", TimeDelta::seconds(-10), leased).await;
    let (in_flight, _) = insert_task(&store, "EXECUTE", TimeDelta::seconds(-5), leased).await;
    let mut free = Vec::new();
    for kind in ["EXECUTE", "TIMER", "EXECUTE"] {
        free.push(
            insert_task(&store, kind, TimeDelta::seconds(-1), None)
                .await
                .0,
        );
    }
    let mut other = impatient_session(&store).await;
    let delete = "DELETE FROM xdb_sys_tasks WHERE id = ?";
    let look = DueLook {
        limit: 64,
        ahead: 1_000_000,
        lowest_priority: LOWEST,
        expired: true,
        turns: &Default::default(),
    };

    // The premise: the locking scans hold the oldest task in flight.
    let mut tx = crate::tables::Dialect::begin(&store, Lane::Timekeeping)
        .await
        .unwrap();
    let (scanned, _) = look.read(&mut tx, true).await.unwrap().unwrap();
    assert_eq!(sorted(&scanned), free);
    let waited = other.execute(delete, &[oldest_in_flight.into()]).await;
    assert!(
        waited.is_err(),
        "the locking scans no longer hold the row past their range on this server: the \
         premise of this test, and the reason the claim locks by key, are gone"
    );
    tx.commit().await.unwrap();

    let mut tx = crate::tables::Dialect::begin(&store, Lane::Timekeeping)
        .await
        .unwrap();
    let (candidates, _) = look.read(&mut tx, false).await.unwrap().unwrap();
    let held = look.lock(&mut tx, &candidates).await.unwrap();
    assert_eq!(sorted(&held), free);
    for id in [oldest_in_flight, in_flight] {
        let deleted = other.execute(delete, &[id.into()]).await.unwrap();
        assert_eq!(deleted, 1, "task {id} in flight");
    }
    // The tasks claimed stay locked until the claim commits.
    let waited = other.execute(delete, &[free[0].into()]).await;
    assert!(waited.is_err(), "a claimed task was not locked");
    tx.commit().await.unwrap();
}

fn sorted(tasks: &[Task]) -> Vec<i64> {
    let mut ids: Vec<i64> = tasks.iter().map(|task| task.id).collect();
    ids.sort();
    ids
}

/// A renewal's locked read finds its tasks by key: found by their owner (the index
/// MariaDB picks for `id IN (…) AND lease_owner = ?`), it held every task of the
/// instance until the renewal committed, and a transition deleting one it did not renew
/// waited for it.
#[tokio::test]
async fn on_mysql_a_renewal_locks_only_the_tasks_it_renews() {
    use crate::sql_tables::task_queue::renew;

    let (_db, store) = mysql_store().await;
    let mine = Some(("me", TimeDelta::seconds(30)));
    let mut tasks = Vec::new();
    for _ in 0..4 {
        tasks.push(
            insert_task(&store, "EXECUTE", TimeDelta::seconds(-1), mine)
                .await
                .0,
        );
    }
    let mut other = impatient_session(&store).await;
    let delete = "DELETE FROM xdb_sys_tasks WHERE id = ?";

    let mut tx = crate::tables::Dialect::begin(&store, Lane::Main)
        .await
        .unwrap();
    let renewed = renew(&mut tx, "me", &tasks[..2], 30_000_000).await.unwrap();
    assert_eq!(renewed, 2);
    for &id in &tasks[2..] {
        let deleted = other.execute(delete, &[id.into()]).await;
        assert_eq!(deleted.ok(), Some(1), "task {id}, not renewed, was locked");
    }
    // The tasks renewed stay locked until the renewal commits.
    let waited = other.execute(delete, &[tasks[0].into()]).await;
    assert!(waited.is_err(), "a renewed task was not locked");
    tx.commit().await.unwrap();
    assert_eq!(lease_of(&store, tasks[1]).await.0.as_deref(), Some("me"));
}
