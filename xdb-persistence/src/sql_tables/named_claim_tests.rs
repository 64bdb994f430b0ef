use chrono::{TimeDelta, Utc};
use xdb_protocol::priority::LOWEST;

use super::*;

const LEASE: Duration = Duration::from_secs(30);

// Generic: MySQL's claim, and PostgreSQL's too (no override).
on_both_databases!(
    store => store;
    the_named_executions_tasks_are_claimed_and_what_is_left_is_told,
    a_claim_within_its_limit_says_it_left_some,
);

/// An unleased task of `execution`, due `due_in` from now, of `priority`, keyed by
/// `key` ('' for none); its id.
async fn insert<D: TaskQueue>(
    store: &D,
    execution: Uuid,
    task_type: &str,
    due_in: TimeDelta,
    priority: i32,
    key: &str,
) -> i64 {
    let mut session = store.session(Lane::Main).await.unwrap();
    let sql = "INSERT INTO xdb_sys_tasks (task_type, fire_at, process_execution_id, \
               state_id, state_execution_number, timer_index, priority, fairness_key) \
               VALUES (?, ?, ?, 'A', 1, ?, ?, ?)";
    let timer_index = (task_type == "TIMER").then_some(0);
    let params = [
        task_type.into(),
        (Utc::now() + due_in).into(),
        execution.into(),
        timer_index.into(),
        priority.into(),
        key.into(),
    ];
    session.insert_numbered(sql, &params, 1).await.unwrap()[0]
}

async fn owner_of<D: TaskQueue>(store: &D, id: i64) -> Option<String> {
    let mut session = store.session(Lane::Main).await.unwrap();
    let sql = "SELECT lease_owner FROM xdb_sys_tasks WHERE id = ?";
    let rows = session.query(sql, &[id.into()]).await.unwrap();
    let owner = <D::Session as SqlConn>::columns(&rows[0], 0)
        .optional_text()
        .unwrap();
    owner
}

async fn claim<D: TaskQueue>(
    store: &D,
    executions: &[Uuid],
    limit: usize,
    lowest_priority: u8,
) -> (Vec<i64>, bool) {
    let ahead = Duration::from_secs(1);
    let named = claim_named(
        store,
        executions,
        "me",
        limit,
        LEASE,
        ahead,
        lowest_priority,
    )
    .await
    .unwrap();
    let ids = named.claimed.iter().map(|(task, _)| task.id).collect();
    (ids, named.complete)
}

/// A start's task is claimed by its execution, a timer of it due within the read-ahead
/// too (held until due, as the search's are); a task far off is none of the claim's
/// business. A task of a priority the claim leaves, a keyed one, or one another claim
/// took first makes the answer incomplete: the caller searches. Other executions' tasks
/// are left alone.
async fn the_named_executions_tasks_are_claimed_and_what_is_left_is_told<D: TaskQueue>(store: D) {
    let [started, urgent_only, keyed, other] = [(); 4].map(|()| Uuid::now_v7());
    let due = TimeDelta::seconds(-1);
    let first = insert(&store, started, "EXECUTE", due, 3, "").await;
    let soon = insert(
        &store,
        started,
        "TIMER",
        TimeDelta::milliseconds(300),
        3,
        "",
    )
    .await;
    let later = insert(
        &store,
        started,
        "PROCESS_TIMEOUT",
        TimeDelta::hours(1),
        3,
        "",
    )
    .await;
    let low = insert(&store, urgent_only, "EXECUTE", due, 5, "").await;
    let turn = insert(&store, keyed, "EXECUTE", due, 3, "k").await;
    let untouched = insert(&store, other, "EXECUTE", due, 3, "").await;

    let (claimed, complete) = claim(&store, &[started], 8, LOWEST).await;
    assert_eq!(
        claimed,
        [soon, first],
        "timers first, as every claim orders them"
    );
    assert!(complete);
    for id in [first, soon] {
        assert_eq!(owner_of(&store, id).await.as_deref(), Some("me"));
    }
    assert_eq!(owner_of(&store, later).await, None);

    let (claimed, complete) = claim(&store, &[started], 8, LOWEST).await;
    assert_eq!(
        (claimed, complete),
        (vec![], true),
        "taken already: nothing left"
    );

    let (claimed, complete) = claim(&store, &[urgent_only], 8, 3).await;
    assert_eq!((claimed, complete), (vec![], false), "priority 5 is left");
    assert_eq!(owner_of(&store, low).await, None);

    let (claimed, complete) = claim(&store, &[keyed], 8, LOWEST).await;
    assert_eq!((claimed, complete), (vec![], false), "a key's turn is left");
    assert_eq!(owner_of(&store, turn).await, None);

    let (claimed, complete) = claim(&store, &[urgent_only, keyed], 8, LOWEST).await;
    assert_eq!((claimed, complete), (vec![low], false));
    assert_eq!(owner_of(&store, untouched).await, None, "not named");
    let (claimed, complete) = claim(&store, &[], 8, LOWEST).await;
    assert_eq!((claimed, complete), (vec![], true));
}

/// Past its limit the claim leaves tasks, and says so.
async fn a_claim_within_its_limit_says_it_left_some<D: TaskQueue>(store: D) {
    let execution = Uuid::now_v7();
    let due = TimeDelta::seconds(-1);
    let a = insert(&store, execution, "EXECUTE", due, 3, "").await;
    let b = insert(&store, execution, "WAIT_UNTIL", due, 3, "").await;
    let (first, complete) = claim(&store, &[execution], 1, LOWEST).await;
    assert_eq!(first.len(), 1);
    assert!(!complete);
    let (second, complete) = claim(&store, &[execution], 1, LOWEST).await;
    assert!(complete);
    let mut both = [first, second].concat();
    both.sort_unstable();
    assert_eq!(both, [a, b]);
}
