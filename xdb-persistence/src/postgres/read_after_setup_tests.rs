//! `Dialect::read_after_setup` on PostgreSQL: BEGIN with its setting, the statement and
//! ROLLBACK written together must keep that order on the wire, whether the statement
//! is new to the connection (parsed first) or kept prepared.

use super::tables::PgRows;
use crate::columns::ColumnReader;
use crate::postgres::PostgresStore;
use crate::sql::{Param, SqlConn};
use crate::tables::{Dialect, Lane};
use crate::StoreError;

const LIMIT: &str = "SET LOCAL statement_timeout = 100";

/// One connection, so that what the read leaves behind is what the next statement
/// finds.
async fn store() -> (xdb_test_util::TestDatabase, PostgresStore) {
    let db = xdb_test_util::TestDatabase::create_postgres().await;
    let store = PostgresStore::connect(db.url(), 1).await.unwrap();
    (db, store)
}

async fn setting_now(store: &PostgresStore) -> String {
    let mut session = store.session(Lane::Main).await.unwrap();
    let rows = session
        .query("SELECT current_setting('statement_timeout')", &[])
        .await
        .unwrap();
    let setting = <PgRows as SqlConn>::columns(&rows[0], 0).text().unwrap();
    setting
}

#[tokio::test]
async fn the_setting_bounds_the_statement_new_or_kept_and_ends_with_it() {
    let (_db, store) = store().await;
    // The first time the statement is new to the connection, the second time kept.
    for attempt in ["new", "kept"] {
        let read = store
            .read_after_setup(
                Lane::Main,
                LIMIT,
                "SELECT pg_sleep(?)",
                &[Param::Double(Some(3.0))],
            )
            .await;
        assert!(
            matches!(read, Err(StoreError::TimedOut(_))),
            "{attempt}: {read:?}"
        );
        assert_eq!(
            setting_now(&store).await,
            "0",
            "{attempt}: the setting ended"
        );
    }
}

#[tokio::test]
async fn a_read_within_the_setting_answers_and_leaves_the_connection_clean() {
    let (_db, store) = store().await;
    // The setting is back to the server's after each: the transaction ended with it.
    for _ in 0..2 {
        let rows = store
            .read_after_setup(
                Lane::Main,
                LIMIT,
                "SELECT CAST(? AS BIGINT) + 1",
                &[Param::BigInt(Some(41))],
            )
            .await
            .unwrap();
        let answer = <PgRows as SqlConn>::columns(&rows[0], 0).bigint().unwrap();
        assert_eq!(answer, 42);
        assert_eq!(setting_now(&store).await, "0");
    }
}
