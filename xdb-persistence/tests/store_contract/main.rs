//! The `ProcessStore` contract, run against both dialects through the trait: every
//! scenario is one `async fn(Dialect)` and [`both!`] turns it into a PostgreSQL and a
//! MariaDB/MySQL test, and on each a test of the generic operations alone (without the
//! dialect's faster form of transitions, which takes the usual path everywhere else).
//! One binary keeps link time low.

/// Declares a `postgres`, `postgres_generic`, `mysql` and `mysql_generic` test for each
/// named scenario of the module.
macro_rules! both {
    ($($name:ident),* $(,)?) => {
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(xdb_test_util::Dialect::Postgres).await
                }
            )*
        }
        mod postgres_generic {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    crate::common::GENERIC_OPERATIONS_ONLY
                        .scope(true, super::$name(xdb_test_util::Dialect::Postgres))
                        .await
                }
            )*
        }
        mod mysql {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(xdb_test_util::Dialect::MySql).await
                }
            )*
        }
        mod mysql_generic {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    crate::common::GENERIC_OPERATIONS_ONLY
                        .scope(true, super::$name(xdb_test_util::Dialect::MySql))
                        .await
                }
            )*
        }
    };
}

mod common;

mod attributes;
mod claim_one;
mod continuation;
mod fairness;
mod fired_timer;
mod first_starts;
mod flow;
mod priorities;
mod query_types;
mod queue;
mod reprioritize;
mod run_limits;
mod service;
