//! Harness of the XDB end-to-end suite (`tests/suite`).
//!
//! - [`XdbTestEnv`]: a fresh PostgreSQL or MariaDB/MySQL database ([`Database`]) with
//!   the XDB schema and the sample tables, the API service on a free port,
//!   async-service instances (in-process, or as OS processes that tests may SIGKILL),
//!   workers, and an [`xdb_sdk::Client`].
//! - Row readers (`env.process_row`, `env.state_rows`, `env.tasks`, `env.user_row`, ...)
//!   for asserting on what was committed, the same on both dialects ([`sql`]).
//! - [`processes`]: small SDK processes for scenarios the samples do not cover.
//! - [`metrics`]: reading samples out of a `/metrics` scrape.
//! - [`worker_faults`]: a layer over a worker's router that delays, fails or holds
//!   state calls and records them.
//! - [`tls`]: a CA of the test's own, PostgreSQL and MariaDB servers that take TLS
//!   connections only, and HTTPS workers.
//! - [`tcp_proxy`]: a TCP proxy that blackholes, resets or heals the path between a
//!   service and the database or a worker (network partitions).
//!
//! Tests need real PostgreSQL and MariaDB/MySQL servers (see `xdb_test_util`) and fail
//! loudly without them.

pub mod chaos;
pub mod db_server;
pub mod env;
pub mod metrics;
pub mod processes;
pub mod pulsar;
pub mod rows;
pub mod skewed;
pub mod sql;
pub mod tcp_proxy;
pub mod tls;
pub mod worker_faults;

use std::future::Future;
use std::time::Duration;

pub use env::{serve_api, AsyncProcess, Database, EnvOptions, XdbTestEnv};
pub use sql::Arg;

/// The line `xdb-test-async-instance` prints on stdout once its service runs.
pub const READY_LINE: &str = "xdb-test-async-instance ready";
/// What `xdb-test-api-instance` prints on stdout, with its address, once it listens.
pub const API_READY_LINE: &str = "xdb-test-api-instance ready";

/// Logs to the test output when `RUST_LOG` is set; once per test binary.
pub fn init_tracing() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
    }
}

/// Waits until `condition` holds, polling every 25 ms; panics naming `what` after `timeout`.
pub async fn eventually<F, Fut>(what: &str, timeout: Duration, condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    if let Err(error) =
        xdb_test_util::wait_until(timeout, Duration::from_millis(25), condition).await
    {
        panic!("waiting for {what}: {error}");
    }
}
