//! The XDB benchmark harness behind the `xdb-bench` binary.
//!
//! It creates a throw-away database, runs the release builds of `xdb-api-service` and
//! `xdb-async-service` as child processes, hosts a two-state worker in-process, and
//! measures start-to-completion latency (one process at a time), throughput (many in
//! flight) and the services' peak memory. See [`run`].

pub mod cdc;
pub mod cpu;
pub mod database;
pub mod profile;
pub mod report;
pub mod rss;
pub mod scenarios;
pub mod services;
pub mod stats;
pub mod worker;

mod run;

pub use run::{run, BenchOptions};
