//! `Dialect::read_bounded` on PostgreSQL: a statement past its limit is cancelled on
//! the server and its connection closed, never handed to the next user; one within it
//! answers and leaves its connection in the pool as it found it.

use std::time::{Duration, Instant};

use super::tables::PgRows;
use crate::columns::ColumnReader;
use crate::postgres::PostgresStore;
use crate::sql::{Param, SqlConn};
use crate::tables::{Dialect, Lane};
use crate::StoreError;

const LIMIT: Duration = Duration::from_millis(100);

/// One connection, so that what a read leaves behind is what the next statement finds.
async fn store() -> (xdb_test_util::TestDatabase, PostgresStore) {
    let db = xdb_test_util::TestDatabase::create_postgres().await;
    let store = PostgresStore::connect(db.url(), 1).await.unwrap();
    (db, store)
}

async fn bigint(store: &PostgresStore, sql: &str) -> i64 {
    let rows = store
        .read_bounded(Lane::Main, sql, &[], LIMIT * 50)
        .await
        .unwrap();
    let value = <PgRows as SqlConn>::columns(&rows[0], 0).bigint().unwrap();
    value
}

/// Whether a server process runs `pid`, read on a connection of the test's own.
async fn server_process_exists(db: &xdb_test_util::TestDatabase, pid: i64) -> bool {
    let (client, connection) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let row = client
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE pid = $1",
            &[&(pid as i32)],
        )
        .await
        .unwrap();
    row.get::<_, i64>(0) > 0
}

#[tokio::test]
async fn a_statement_past_its_limit_is_cancelled_and_its_connection_closed() {
    let (db, store) = store().await;
    for attempt in ["first", "second"] {
        let pid = bigint(&store, "SELECT CAST(pg_backend_pid() AS BIGINT)").await;
        let began = Instant::now();
        let read = store
            .read_bounded(
                Lane::Main,
                "SELECT pg_sleep(?)",
                &[Param::Double(Some(30.0))],
                LIMIT,
            )
            .await;
        assert!(
            matches!(read, Err(StoreError::TimedOut(_))),
            "{attempt}: {read:?}"
        );
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "{attempt}: answered after {:?}",
            began.elapsed()
        );
        // Cancelled and closed: the server process ends, long before the sleep would.
        let deadline = Instant::now() + Duration::from_secs(10);
        while server_process_exists(&db, pid).await {
            assert!(
                Instant::now() < deadline,
                "{attempt}: server process {pid} still runs"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The pool's next connection is a new one, and answers.
        let next = bigint(&store, "SELECT CAST(pg_backend_pid() AS BIGINT)").await;
        assert_ne!(next, pid, "{attempt}: the cancelled connection was reused");
    }
}

#[tokio::test]
async fn a_read_within_its_limit_answers_and_keeps_its_connection() {
    let (_db, store) = store().await;
    let pid = bigint(&store, "SELECT CAST(pg_backend_pid() AS BIGINT)").await;
    for _ in 0..2 {
        let rows = store
            .read_bounded(
                Lane::Main,
                "SELECT CAST(? AS BIGINT) + 1",
                &[Param::BigInt(Some(41))],
                LIMIT * 50,
            )
            .await
            .unwrap();
        let answer = <PgRows as SqlConn>::columns(&rows[0], 0).bigint().unwrap();
        assert_eq!(answer, 42);
    }
    let again = bigint(&store, "SELECT CAST(pg_backend_pid() AS BIGINT)").await;
    assert_eq!(again, pid, "the connection went back to the pool");
    // Nothing was set on the session for the reads.
    let unset = bigint(
        &store,
        "SELECT CAST(CASE WHEN current_setting('statement_timeout') = '0' THEN 1 ELSE 0 END \
         AS BIGINT)",
    )
    .await;
    assert_eq!(unset, 1, "statement_timeout was set");
}

/// A service that died mid-read cannot cancel it: the query lane's sessions end the
/// statement themselves, just past the store's longest limit. Shown here by a read
/// whose own limit is far longer than the store's backstop.
#[tokio::test]
async fn the_query_lane_ends_a_statement_past_the_longest_limit_on_the_server() {
    let db = xdb_test_util::TestDatabase::create_postgres().await;
    let store = PostgresStore::connect_with(
        db.url(),
        crate::StoreOptions {
            pool_size: 1,
            longest_query: Duration::from_millis(200),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let began = Instant::now();
    let read = store
        .read_bounded(
            Lane::Query,
            "SELECT pg_sleep(?)",
            &[Param::Double(Some(30.0))],
            Duration::from_secs(60),
        )
        .await;
    assert!(matches!(read, Err(StoreError::TimedOut(_))), "{read:?}");
    let waited = began.elapsed();
    assert!(
        waited >= Duration::from_millis(200) && waited < Duration::from_secs(20),
        "the server ended the statement after {waited:?}"
    );
    // The main lane's sessions carry no such limit: transitions are never cut.
    let main = bigint(
        &store,
        "SELECT CAST(CASE WHEN current_setting('statement_timeout') = '0' THEN 1 ELSE 0 END \
         AS BIGINT)",
    )
    .await;
    assert_eq!(main, 1, "the main lane has a statement_timeout");
}
