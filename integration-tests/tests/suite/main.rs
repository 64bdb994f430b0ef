//! The XDB end-to-end suite: one binary, one module per area. Every test gets its own
//! database and services, so tests run in parallel.
//!
//! Every test runs on both database servers: a test is an `async fn name(db: Database)`
//! listed in its module's [`both_databases!`], which makes it `<module>::postgres::name`
//! and `<module>::mysql::name` (filter with `cargo test -p xdb-integration-tests mysql::`).

/// Turns each listed `async fn name(db: Database)` of the calling module into two tests,
/// `postgres::name` and `mysql::name`, so the two runs are separate, run in parallel,
/// and a failure names its database. A function left out of the list is dead code, which
/// the lints refuse.
///
/// Attributes before a name go on both tests; `name postgres: #[..]` or
/// `name mysql: #[..]` on one of them (e.g. `#[ignore = "..."]` for a known bug of one
/// dialect).
macro_rules! both_databases {
    ($(
        $(#[$both:meta])*
        $name:ident
        $(postgres: #[$postgres:meta])?
        $(mysql: #[$mysql:meta])?
    ),+ $(,)?) => {
        mod postgres {
            $(
                $(#[$both])*
                $(#[$postgres])?
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(xdb_integration_tests::Database::Postgres).await
                }
            )+
        }

        mod mysql {
            $(
                $(#[$both])*
                $(#[$mysql])?
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(xdb_integration_tests::Database::MySql).await
                }
            )+
        }
    };
}

/// Runs each listed `async fn name(db: Database)` once more in Pulsar CDC mode, as
/// `<module>::pulsar::postgres::name` and `<module>::pulsar::mysql::name`: the same
/// scenario, with the async service fed by Debezium change events through the broker
/// instead of claiming rows itself (see `xdb_integration_tests::pulsar`; needs
/// scripts/ensure-pulsar.sh, which also makes MariaDB readable by Debezium's MySQL
/// connector — see scripts/ensure-cdc-databases.sh).
macro_rules! pulsar_mode_too {
    ($($name:ident),+ $(,)?) => {
        mod pulsar {
            mod postgres {
                $(
                    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                    async fn $name() {
                        xdb_integration_tests::pulsar::with_queue_mode(
                            xdb_config::QueueMode::Pulsar,
                            super::super::$name(xdb_integration_tests::Database::Postgres),
                        )
                        .await
                    }
                )+
            }

            mod mysql {
                $(
                    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                    async fn $name() {
                        xdb_integration_tests::pulsar::with_queue_mode(
                            xdb_config::QueueMode::Pulsar,
                            super::super::$name(xdb_integration_tests::Database::MySql),
                        )
                        .await
                    }
                )+
            }
        }
    };
}

mod bad_input;
mod batch_cli;
mod batches;
mod cli;
mod clock_skew;
mod common;
mod console;
mod contract;
mod database_lost;
mod declared_schedules;
mod definitions;
mod deployments;
mod execution;
mod failure_classes;
mod fairness;
mod flow_limits;
mod flow_limits_cli;
mod injection;
mod internal_calls;
mod lifecycle;
mod limits;
mod liveness_takeover;
mod non_retryable;
mod observability;
mod operate;
mod operate_edges;
mod overload;
mod priorities;
mod pulsar_continuations;
mod pulsar_mode;
mod pulsar_publication;
mod pulsar_restarts;
mod pulsar_retention;
mod pulsar_settings;
mod pulsar_takeover;
mod query;
mod readiness;
mod reprioritize;
mod reset;
mod resilience;
mod roles;
mod rpc;
mod run_limits;
mod schedule_cli;
mod schedules;
mod security;
mod service_api;
mod signup;
mod site_creation;
mod threads;
mod tls;
mod wait_outcomes;
