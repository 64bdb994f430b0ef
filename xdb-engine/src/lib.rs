//! The XDB state machine, free of IO.
//!
//! Each operation in [`decide`] takes the rows it needs (already loaded and locked by the
//! persistence layer) and an event — a worker's answer, a fired timer, a published
//! message — and returns a [`plan::TransitionPlan`]: the rows to write and the tasks that
//! follow. The persistence layer applies a plan in one transaction; unit tests assert on
//! plans. Nothing here reads a clock or a database: time comes in as an argument.

pub mod decide;
pub mod model;
pub mod plan;
pub mod retry;
pub mod schedule;
pub mod validation;

pub use model::*;
pub use plan::*;
