//! Room kept for higher priorities on one instance (database queue).
//!
//! A claim takes higher priorities first, but once claimed, a task's steps share the
//! machine, the database and the worker with every other call in flight: beside a
//! backlog at `async.max_in_flight` calls, a priority-1 process took 25 to 30 times its
//! idle latency (BENCHMARKS.md). So while tasks of two priorities or more run on this
//! instance, or ran within [`HOLD`], tasks of priorities below the highest have at most
//! `async.lower_priority_max_in_flight` calls in flight here: the claim takes no more of
//! them, and the chains already running end as they do. The hold bridges the moment
//! between one urgent process and the next, which would otherwise let the backlog back
//! in at full width each time. With one priority only (every start at the default,
//! say) nothing changes: one claim, as wide as the free slots.

use std::time::{Duration, Instant};

use xdb_protocol::priority::{HIGHEST, LOWEST};

/// How long after its last task ended a priority still keeps lower ones narrow.
pub(crate) const HOLD: Duration = Duration::from_millis(500);

const LEVELS: usize = (LOWEST - HIGHEST + 1) as usize;

/// The calls in flight by priority, and when each priority last ran.
#[derive(Debug)]
pub(crate) struct PriorityRoom {
    lower_max_in_flight: usize,
    running: [usize; LEVELS],
    last_ended: [Option<Instant>; LEVELS],
}

/// One claim to make: up to `limit` tasks of priority 1 to `lowest_priority`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ClaimWithin {
    pub limit: usize,
    pub lowest_priority: u8,
}

impl PriorityRoom {
    /// Lower priorities get at most `lower_max_in_flight` calls while a higher one runs.
    pub fn new(lower_max_in_flight: usize) -> PriorityRoom {
        PriorityRoom {
            lower_max_in_flight,
            running: [0; LEVELS],
            last_ended: [None; LEVELS],
        }
    }

    /// A task of `priority` was claimed and runs.
    pub fn started(&mut self, priority: u8) {
        self.running[level(priority)] += 1;
    }

    /// A task of `priority` ended at `now`. True when lower priorities were held back
    /// (the claim loop should look again: there may be room now).
    pub fn ended(&mut self, priority: u8, now: Instant) -> bool {
        let at = level(priority);
        self.running[at] = self.running[at].saturating_sub(1);
        self.last_ended[at] = Some(now);
        self.guarded(now).is_some()
    }

    /// The claims to make now with `free` call slots: all of them for every priority,
    /// or, while a higher priority runs, first its own and those above it, then what
    /// room lower priorities have left.
    pub fn claims(&self, free: usize, now: Instant) -> [Option<ClaimWithin>; 2] {
        let Some(guarded) = self.guarded(now) else {
            return [Some(ClaimWithin::everything(free)), None];
        };
        let lower_running: usize = self.running[level(guarded) + 1..].iter().sum();
        let room = self.lower_max_in_flight.saturating_sub(lower_running);
        let urgent = ClaimWithin {
            limit: free,
            lowest_priority: guarded,
        };
        let lower = Some(ClaimWithin::everything(room.min(free))).filter(|c| c.limit > 0);
        [Some(urgent), lower]
    }

    /// While lower priorities are held back: how soon a priority with nothing running
    /// ends its hold, when the claim loop should look again (the room may lift).
    pub fn lifts_in(&self, now: Instant) -> Option<Duration> {
        self.guarded(now)?;
        (0..LEVELS)
            .filter(|&at| self.running[at] == 0)
            .filter_map(|at| self.last_ended[at])
            .map(|ended| (ended + HOLD).saturating_duration_since(now))
            .filter(|left| !left.is_zero())
            .min()
    }

    /// The highest priority that runs or ran within [`HOLD`], when a lower one does too.
    fn guarded(&self, now: Instant) -> Option<u8> {
        let active = |at: &usize| {
            self.running[*at] > 0
                || self.last_ended[*at].is_some_and(|ended| now.duration_since(ended) < HOLD)
        };
        let highest = (0..LEVELS).find(active)?;
        (highest + 1..LEVELS)
            .any(|at| active(&at))
            .then_some(HIGHEST + highest as u8)
    }
}

impl ClaimWithin {
    fn everything(limit: usize) -> ClaimWithin {
        ClaimWithin {
            limit,
            lowest_priority: LOWEST,
        }
    }
}

/// A priority's index; one out of range (an old row) counts as the lowest.
fn level(priority: u8) -> usize {
    usize::from(priority.clamp(HIGHEST, LOWEST) - HIGHEST)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(limit: usize, lowest_priority: u8) -> Option<ClaimWithin> {
        Some(ClaimWithin {
            limit,
            lowest_priority,
        })
    }

    #[test]
    fn with_one_priority_running_every_slot_is_claimed_for_all() {
        let now = Instant::now();
        let mut room = PriorityRoom::new(4);
        assert_eq!(room.claims(256, now), [claim(256, 5), None]);
        for _ in 0..100 {
            room.started(3);
        }
        assert_eq!(room.claims(156, now), [claim(156, 5), None]);
        assert_eq!(room.lifts_in(now), None);
        for _ in 0..100 {
            assert!(!room.ended(3, now), "nothing was held back");
        }
        assert_eq!(room.claims(256, now), [claim(256, 5), None]);
    }

    #[test]
    fn a_higher_priority_running_narrows_the_lower_ones_to_their_room() {
        let now = Instant::now();
        let mut room = PriorityRoom::new(4);
        for _ in 0..200 {
            room.started(5);
        }
        room.started(1);
        // 200 lower calls run: no room; the claim takes priority 1 only.
        assert_eq!(room.claims(55, now), [claim(55, 1), None]);
        for _ in 0..198 {
            assert!(room.ended(5, now), "held back: the loop should look again");
        }
        // Two lower calls left: room for two more, of any priority.
        assert_eq!(room.claims(253, now), [claim(253, 1), claim(2, 5)]);
        // A priority-3 call counts among the lower ones.
        room.started(3);
        assert_eq!(room.claims(252, now), [claim(252, 1), claim(1, 5)]);
    }

    #[test]
    fn the_hold_outlasts_the_last_higher_task_then_lifts() {
        let start = Instant::now();
        let mut room = PriorityRoom::new(4);
        room.started(2);
        room.started(4);
        assert_eq!(room.lifts_in(start), None, "priority 2 still runs");
        assert!(room.ended(2, start));
        let soon = start + HOLD / 2;
        assert_eq!(room.claims(255, soon), [claim(255, 2), claim(3, 5)]);
        assert_eq!(room.lifts_in(soon), Some(HOLD / 2));
        let later = start + HOLD;
        assert_eq!(room.claims(255, later), [claim(255, 5), None]);
        assert_eq!(room.lifts_in(later), None);
        assert!(!room.ended(4, later), "nothing was held back");
        // Lower tasks that ended recently keep the room while a higher one runs.
        room.started(1);
        assert_eq!(room.claims(255, later), [claim(255, 1), claim(4, 5)]);
        assert_eq!(room.lifts_in(later), Some(HOLD));
    }

    #[test]
    fn a_room_as_wide_as_the_slots_changes_nothing_and_bad_priorities_count_as_lowest() {
        let now = Instant::now();
        let mut room = PriorityRoom::new(256);
        room.started(1);
        room.started(9);
        room.started(0);
        // 0 counts as priority 1, 9 as 5: one lower call of 256 allowed.
        assert_eq!(room.claims(253, now), [claim(253, 1), claim(253, 5)]);
    }
}
