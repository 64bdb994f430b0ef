//! What a due firing does while the schedule's previous firing still runs.

use xdb_protocol::ScheduleOverlapPolicy;

/// The fate of one due firing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverlapDecision {
    /// Start its execution now.
    Start,
    /// Record it as skipped; start nothing.
    Skip,
    /// Keep it until the running execution closes, then start it.
    Buffer,
    /// Terminate the running execution, then start this one.
    TerminatePreviousThenStart,
}

/// Decides under `policy`, given whether the previous firing's execution still runs and
/// whether another firing is already buffered behind it. A schedule whose previous
/// firing has closed always starts: the policies only differ on overlap.
pub fn decide_overlap(
    policy: ScheduleOverlapPolicy,
    previous_running: bool,
    another_buffered: bool,
) -> OverlapDecision {
    use OverlapDecision::*;
    use ScheduleOverlapPolicy as P;
    if !previous_running {
        return Start;
    }
    match policy {
        P::Skip => Skip,
        P::BufferOne if another_buffered => Skip,
        P::BufferOne => Buffer,
        P::AllowAll => Start,
        P::TerminatePrevious => TerminatePreviousThenStart,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use OverlapDecision::*;
    use ScheduleOverlapPolicy as P;

    #[test]
    fn nothing_running_means_every_policy_starts() {
        for policy in P::ALL {
            assert_eq!(decide_overlap(policy, false, false), Start, "{policy:?}");
            assert_eq!(decide_overlap(policy, false, true), Start, "{policy:?}");
        }
    }

    #[test]
    fn each_policy_on_overlap() {
        assert_eq!(decide_overlap(P::Skip, true, false), Skip);
        assert_eq!(decide_overlap(P::BufferOne, true, false), Buffer);
        assert_eq!(
            decide_overlap(P::BufferOne, true, true),
            Skip,
            "one at most"
        );
        assert_eq!(decide_overlap(P::AllowAll, true, true), Start);
        assert_eq!(
            decide_overlap(P::TerminatePrevious, true, false),
            TerminatePreviousThenStart
        );
    }
}
