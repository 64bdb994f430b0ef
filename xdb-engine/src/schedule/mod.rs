//! Schedules' decisions, free of IO: when a spec fires, which missed firings still run
//! after downtime, and what a firing does while an earlier one runs. The async service
//! loads the rows, asks these functions with the database's clock, and writes what they
//! say in one transaction.

pub mod catch_up;
pub mod overlap;
pub mod spec;

pub use catch_up::{due_firings, DueFirings};
pub use overlap::{decide_overlap, OverlapDecision};
pub use spec::CompiledSpec;
