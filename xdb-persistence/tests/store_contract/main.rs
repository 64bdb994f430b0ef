//! The `ProcessStore` contract, run against both dialects through the trait: every
//! scenario is one `async fn(Dialect)` and [`both!`] turns it into a PostgreSQL and a
//! MariaDB/MySQL test. One binary keeps link time low.

/// Declares a `postgres` and a `mysql` test for each named scenario of the module.
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
        mod mysql {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(xdb_test_util::Dialect::MySql).await
                }
            )*
        }
    };
}

mod common;

mod attributes;
mod claim_one;
mod continuation;
mod fired_timer;
mod flow;
mod queue;
mod service;
