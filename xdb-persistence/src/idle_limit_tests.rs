//! `Transaction::limit_idle` on both dialects: the limit holds inside the transaction,
//! and the connection goes back to the pool with its own limit (PostgreSQL's ends with
//! the transaction; MariaDB's is per session and is set back).

use std::time::Duration;

use crate::columns::ColumnReader;
use crate::mysql::MySqlStore;
use crate::postgres::PostgresStore;
use crate::sql::SqlConn;
use crate::tables::{Dialect, Lane, Transaction};

const SETTING: &str = "SELECT CAST(current_setting('idle_in_transaction_session_timeout') AS TEXT)";
const MARIADB_SETTING: &str = "SELECT CAST(@@idle_transaction_timeout AS CHAR)";

/// The setting as `sql` reads it, inside `tx`.
async fn read<C: SqlConn>(conn: &mut C, sql: &str) -> String {
    let rows = conn.query(sql, &[]).await.unwrap();
    let text = C::columns(&rows[0], 0).text().unwrap();
    text
}

async fn limit_then_restore<D: Dialect>(store: &D, setting: &str, limited: &str, own: &str) {
    for end in ["commit", "rollback"] {
        let mut tx = store.begin(Lane::Main).await.unwrap();
        tx.limit_idle(Some(Duration::from_millis(2500)))
            .await
            .unwrap();
        assert_eq!(read(&mut tx, setting).await, limited, "{end}: inside");
        tx.limit_idle(None).await.unwrap();
        if end == "commit" {
            tx.commit().await.unwrap();
        } else {
            drop(tx);
        }
        // One connection: the session read next is the transaction's.
        let mut session = store.session(Lane::Main).await.unwrap();
        assert_eq!(read(&mut session, setting).await, own, "{end}: after");
    }
}

#[tokio::test]
async fn postgres_limit_ends_with_the_transaction() {
    let db = xdb_test_util::TestDatabase::create_postgres().await;
    let store = PostgresStore::connect(db.url(), 1).await.unwrap();
    limit_then_restore(&store, SETTING, "2500ms", "70s").await;
}

#[tokio::test]
async fn mariadb_limit_is_set_back_to_the_sessions_own() {
    let db = xdb_test_util::TestDatabase::create_mysql().await;
    let store = MySqlStore::connect(db.url(), 1).await.unwrap();
    // Whole seconds, rounded up.
    limit_then_restore(&store, MARIADB_SETTING, "3", "70").await;
}
