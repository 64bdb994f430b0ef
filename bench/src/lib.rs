//! The XDB benchmark harness behind the `xdb-bench` binary.
//!
//! It creates a throw-away database, runs the release builds of `xdb-api-service` and
//! `xdb-async-service` as child processes, hosts the bench's worker in-process with the
//! SDK, and measures: start-to-completion latency of a lone two-state process, throughput
//! at several in-flight levels, timer lateness, RPC and local-queue latency, memory with
//! many waiting processes, CPU per process, and the database's commit-rate ceiling. See
//! [`run`] and [`options::Scenario`]. [`peers`] runs XDB beside Restate, DBOS and
//! Temporal on the same workloads.

pub mod cdc;
pub mod ceiling;
pub mod cpu;
pub mod database;
pub mod limit;
pub mod options;
pub mod peers;
pub mod profile;
pub mod report;
pub mod rss;
pub mod scenarios;
pub mod services;
pub mod soak;
pub mod stats;
pub mod worker;

mod run;

pub use options::{BenchOptions, QueueMode, Scenario};
pub use run::run;
