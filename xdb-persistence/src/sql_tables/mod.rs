//! The per-table traits of [`crate::tables`] written once over [`crate::sql::SqlConn`]:
//! each dialect supplies its connection and, where its SQL differs, the text.

/// Runs each named test body (an `async fn` taking a store) on both databases, each on
/// a database of its own, with the store `$store` as `$setup` makes it: for the generic
/// forms that PostgreSQL overrides, which its tests still run there.
#[cfg(test)]
macro_rules! on_both_databases {
    ($store:ident => $setup:expr; $($name:ident),* $(,)?) => {
        mod on_mysql {
            $(
                #[tokio::test]
                async fn $name() {
                    let db = xdb_test_util::TestDatabase::create_mysql().await;
                    let $store = crate::mysql::MySqlStore::connect(db.url(), 4).await.unwrap();
                    super::$name($setup).await;
                }
            )*
        }
        mod on_postgres {
            $(
                #[tokio::test]
                async fn $name() {
                    let db = xdb_test_util::TestDatabase::create_postgres().await;
                    let $store = crate::postgres::PostgresStore::connect(db.url(), 4)
                        .await
                        .unwrap();
                    super::$name($setup).await;
                }
            )*
        }
    };
}

mod attribute_rows;
mod batch_rows;
pub(crate) mod business_rows;
pub(crate) mod call_slots;
mod change_pages;
mod definitions;
mod deployments;
mod fair_shares;
pub(crate) mod first_start_batch;
pub(crate) mod flow_limit_rows;
mod history_rows;
pub(crate) mod in_list;
mod lease_sql;
pub(crate) mod leases;
mod named_claim;
mod operator_rows;
pub(crate) mod plan_rows;
pub(crate) mod process_rows;
mod queue_rows;
mod receipt_rows;
mod schedule_changes;
mod schedule_rows;
mod service_instances;
mod state_rows;
#[cfg(test)]
mod steps_tests;
pub(crate) mod task_queue;
pub(crate) mod task_rows;
pub(crate) mod transition_batch;
