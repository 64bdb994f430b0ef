//! How a claim shares one priority between fairness keys: weighted round robin, each
//! key in turn taking up to its weight of tasks, the turns going on from one claim to
//! the next. Pure: the claim reads the keys and their tasks, this decides which to take.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use xdb_engine::Task;

/// The key every task without one shares: a key of its own in the rotation, of weight 1.
pub(crate) const KEYLESS: &str = "";

/// The due tasks of one fairness key, oldest first, and its weight.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KeyTasks {
    pub key: String,
    pub weight: u32,
    pub tasks: Vec<Task>,
}

/// Where one instance's rotation stands: the key whose turn was last, at which priority,
/// and how many tasks its turn may still take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Turn {
    pub priority: u8,
    pub key: String,
    pub left: u32,
}

/// Where the rotation starts in a claim of `priority`, after the last `turn`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Start {
    /// With the first key (the keyless one, then keys in the database's order).
    First,
    /// With `key` itself, whose turn may still take `left`.
    Within { key: String, left: u32 },
    /// With the first key after `key`.
    After(String),
}

impl Start {
    /// Where a claim of `priority` starts after `turn`.
    pub fn after(turn: Option<&Turn>, priority: u8) -> Self {
        match turn {
            Some(turn) if turn.priority == priority && turn.left > 0 => Self::Within {
                key: turn.key.clone(),
                left: turn.left,
            },
            Some(turn) if turn.priority == priority => Self::After(turn.key.clone()),
            _ => Self::First,
        }
    }

    /// The key the database's scan of keys starts from, and whether that key itself is
    /// in (the keyless key is read apart, so a scan from it never includes it).
    pub fn scan_from(&self) -> (&str, bool) {
        match self {
            Self::First => (KEYLESS, false),
            Self::Within { key, .. } => (key, true),
            Self::After(key) => (key, false),
        }
    }
}

/// Takes up to `limit` tasks from `keys`, given in rotation order (the first is where
/// the rotation starts), a turn at a time: each key takes up to its weight (the first up
/// to `first_left` when its turn was begun by an earlier claim), then the next, round
/// and round, until `limit` or no task is left. Answers the tasks in the order taken and
/// where the rotation stands after them.
pub(crate) fn take_turns(
    mut keys: Vec<KeyTasks>,
    first_left: Option<u32>,
    limit: usize,
    priority: u8,
) -> (Vec<Task>, Option<Turn>) {
    keys.retain(|key| !key.tasks.is_empty());
    for key in &mut keys {
        // Taken from the front, oldest first.
        key.tasks.reverse();
    }
    let mut taken = Vec::new();
    let mut last = None;
    let mut at = 0;
    let mut credit = first_left.unwrap_or_else(|| keys.first().map_or(1, |k| k.weight.max(1)));
    while taken.len() < limit && keys.iter().any(|key| !key.tasks.is_empty()) {
        let key = &mut keys[at];
        let mut took = 0;
        while took < credit && taken.len() < limit {
            let Some(task) = key.tasks.pop() else { break };
            taken.push(task);
            took += 1;
        }
        if took > 0 {
            last = Some(Turn {
                priority,
                key: key.key.clone(),
                left: if key.tasks.is_empty() && taken.len() < limit {
                    0
                } else {
                    credit - took
                },
            });
        }
        at = (at + 1) % keys.len();
        credit = keys[at].weight.max(1);
    }
    (taken, last)
}

/// One instance's claims' shared state about fairness keys.
#[derive(Debug, Default)]
pub(crate) struct FairTurns {
    turn: Mutex<Option<Turn>>,
    /// Whether the last claim saw keyed tasks waiting: PostgreSQL's one-statement claim
    /// reads keyless tasks only, so while keyed ones wait its claims take the fair path.
    keyed_waiting: AtomicBool,
}

impl FairTurns {
    /// Where the rotation stands.
    pub fn turn(&self) -> Option<Turn> {
        self.turn.lock().expect("never poisoned").clone()
    }

    /// Records where the rotation stands after a claim that took tasks.
    pub fn set_turn(&self, turn: Turn) {
        *self.turn.lock().expect("never poisoned") = Some(turn);
    }

    /// Whether the last claim saw keyed tasks waiting.
    pub fn keyed_waiting(&self) -> bool {
        self.keyed_waiting.load(Ordering::Relaxed)
    }

    /// Records whether the last claim saw keyed tasks waiting.
    pub fn set_keyed_waiting(&self, waiting: bool) {
        self.keyed_waiting.store(waiting, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xdb_engine::TaskType;

    fn tasks(key: &str, weight: u32, ids: std::ops::Range<i64>) -> KeyTasks {
        KeyTasks {
            key: key.to_string(),
            weight,
            tasks: ids
                .map(|id| Task {
                    id,
                    task_type: TaskType::Execute,
                    fire_at: chrono::Utc::now(),
                    process_execution_id: uuid::Uuid::nil(),
                    state: None,
                    timer_index: None,
                    attempt: 1,
                    first_attempt_at: None,
                    traceparent: None,
                })
                .collect(),
        }
    }

    fn ids(tasks: &[Task]) -> Vec<i64> {
        tasks.iter().map(|task| task.id).collect()
    }

    #[test]
    fn keys_of_equal_weight_take_turns_one_task_each() {
        let keys = vec![tasks("a", 1, 0..50), tasks("b", 1, 100..103)];
        let (taken, turn) = take_turns(keys, None, 8, 3);
        assert_eq!(ids(&taken), vec![0, 100, 1, 101, 2, 102, 3, 4]);
        let turn = turn.unwrap();
        assert_eq!((turn.key.as_str(), turn.left), ("a", 0));
    }

    #[test]
    fn a_weight_is_the_tasks_a_key_takes_in_its_turn() {
        let keys = vec![tasks("a", 3, 0..50), tasks("b", 1, 100..150)];
        let (taken, turn) = take_turns(keys, None, 6, 3);
        assert_eq!(ids(&taken), vec![0, 1, 2, 100, 3, 4]);
        // a's second turn took 2 of its 3: the next claim goes on with it.
        assert_eq!(
            turn,
            Some(Turn {
                priority: 3,
                key: "a".into(),
                left: 1
            })
        );
    }

    #[test]
    fn a_turn_begun_by_an_earlier_claim_takes_what_it_has_left() {
        let keys = vec![tasks("a", 3, 0..50), tasks("b", 1, 100..150)];
        let (taken, _) = take_turns(keys, Some(1), 3, 3);
        assert_eq!(ids(&taken), vec![0, 100, 1]);
    }

    #[test]
    fn claims_of_one_task_go_round_the_keys() {
        let mut turn: Option<Turn> = None;
        let mut order = Vec::new();
        let mut queues = [
            tasks("", 1, 0..10),
            tasks("a", 2, 10..20),
            tasks("b", 1, 20..30),
        ];
        for _ in 0..8 {
            // What the database would answer: keys in order from where the turn starts.
            let start = Start::after(turn.as_ref(), 3);
            let at = match &start {
                Start::First => 0,
                Start::Within { key, .. } => queues.iter().position(|q| &q.key == key).unwrap(),
                Start::After(key) => {
                    (queues.iter().position(|q| &q.key == key).unwrap() + 1) % queues.len()
                }
            };
            let mut keys: Vec<KeyTasks> = queues[at..].to_vec();
            keys.extend_from_slice(&queues[..at]);
            let first_left = match start {
                Start::Within { left, .. } => Some(left),
                _ => None,
            };
            let (taken, next) = take_turns(keys, first_left, 1, 3);
            let id = taken[0].id;
            for queue in &mut queues {
                queue.tasks.retain(|task| task.id != id);
            }
            order.push(id);
            turn = next;
        }
        assert_eq!(order, vec![0, 10, 11, 20, 1, 12, 13, 21]);
    }

    #[test]
    fn nothing_to_take_leaves_no_turn() {
        let (taken, turn) = take_turns(vec![tasks("a", 1, 0..0)], None, 4, 3);
        assert!(taken.is_empty());
        assert_eq!(turn, None);
        assert_eq!(Start::after(None, 3).scan_from(), (KEYLESS, false));
    }
}
