//! A pooled connection holding a transaction whose BEGIN travels with its first
//! statement (see `tables::with_begin`), rolled back if dropped uncommitted.
//!
//! `tokio_postgres::Transaction` waits for BEGIN's answer before anything else is sent:
//! a round trip, and a wake-up of the server process, per transaction. Here BEGIN is
//! written, and the first statement right behind it, before either answer is read
//! (tokio-postgres writes a request when its future is first polled, and the server
//! answers in order).

use deadpool_postgres::{Client, Object, Pool};

use crate::StoreError;

/// An open transaction on a pooled connection. Dropped without [`Tx::commit`], it is
/// rolled back before the connection goes back to the pool (or the connection is
/// closed, if that fails).
pub(crate) struct Tx {
    connection: Option<Object>,
    finished: bool,
}

impl Tx {
    /// Takes a connection from `pool`; nothing is sent until its first statement, with
    /// BEGIN (see `tables::with_begin`).
    pub async fn on(pool: &Pool) -> Result<Self, StoreError> {
        Ok(Self {
            connection: Some(pool.get().await?),
            finished: false,
        })
    }

    /// A connection for statements outside a transaction block: nothing to roll back.
    pub async fn outside(pool: &Pool) -> Result<Self, StoreError> {
        Ok(Self {
            connection: Some(pool.get().await?),
            finished: true,
        })
    }

    /// The connection, for the transaction's statements.
    pub fn client(&self) -> &Client {
        self.connection.as_ref().expect("held until dropped")
    }

    /// Records that the transaction's COMMIT went out with its last statements and
    /// succeeded (see `crate::tables::Finish::WithWrites`).
    pub fn committed(mut self) {
        self.finished = true;
    }

    /// Closes the connection instead of handing it back to the pool.
    pub fn close(mut self) {
        self.finished = true;
        if let Some(connection) = self.connection.take() {
            drop(Object::take(connection));
        }
    }

    /// Commits; an error leaves the outcome to the server (a failed transaction is
    /// rolled back).
    pub async fn commit(mut self) -> Result<(), StoreError> {
        let result = self.client().batch_execute("COMMIT").await;
        // Committed or not, the transaction is over: the connection is clean.
        self.finished = result.is_ok();
        Ok(result?)
    }
}

impl Drop for Tx {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let Some(connection) = self.connection.take() else {
            return;
        };
        // Roll back before the connection is reused. Outside a runtime (never the case
        // in the services) the connection is closed instead.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    if connection.batch_execute("ROLLBACK").await.is_err() {
                        drop(Object::take(connection));
                    }
                });
            }
            Err(_) => drop(Object::take(connection)),
        }
    }
}
