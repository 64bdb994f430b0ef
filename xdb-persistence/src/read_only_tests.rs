//! A server that turned read-only under the store (a primary demoted by a failover, a
//! replica a proxy still points at) is the server's state, not the statement's: its
//! refusal is transient on both dialects, never a reason to park work.

use crate::mysql::MySqlStore;
use crate::postgres::PostgresStore;
use crate::sql::SqlConn;
use crate::tables::{Dialect, Lane};
use crate::{FailureClass, StoreError};

const WRITE: &str = "DELETE FROM xdb_sys_service_instances WHERE instance_id = 'nobody'";

async fn refused_write<D: Dialect>(store: &D, read_only: &str) -> StoreError {
    let mut session = store.session(Lane::Main).await.unwrap();
    session.execute(read_only, &[]).await.unwrap();
    let error = session.execute(WRITE, &[]).await.unwrap_err();
    // The connection goes back to the pool writable, as a failover would leave it.
    session
        .execute(&read_only.replace("ONLY", "WRITE"), &[])
        .await
        .unwrap();
    error
}

#[tokio::test]
async fn postgres_read_only_refusal_is_transient() {
    let db = xdb_test_util::TestDatabase::create_postgres().await;
    let store = PostgresStore::connect(db.url(), 1).await.unwrap();
    let error = refused_write(
        &store,
        "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY",
    )
    .await;
    assert!(error.to_string().contains("25006"), "{error}");
    assert_eq!(error.class(), FailureClass::Transient, "{error:?}");
}

#[tokio::test]
async fn mariadb_read_only_refusal_is_transient() {
    let db = xdb_test_util::TestDatabase::create_mysql().await;
    let store = MySqlStore::connect(db.url(), 1).await.unwrap();
    let error = refused_write(&store, "SET SESSION TRANSACTION READ ONLY").await;
    assert!(error.to_string().contains("1792"), "{error}");
    assert_eq!(error.class(), FailureClass::Transient, "{error:?}");
}
