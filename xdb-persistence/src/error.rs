use thiserror::Error;
use xdb_engine::decide::DecideError;

/// Errors of the persistence layer, mapped to API errors by the services.
#[derive(Debug, Error)]
pub enum StoreError {
    #[error("{0}")]
    NotFound(String),
    #[error(transparent)]
    Decide(#[from] DecideError),
    /// The task's lease passed to another instance, or its rows changed meanwhile: the
    /// work was (or will be) done elsewhere. Nothing was written.
    #[error("the task was taken over or is stale: {0}")]
    Stale(String),
    /// The user's table refused a global-attribute read or write.
    #[error("global attribute table error: {0}")]
    AppDatabase(String),
    /// The worker failed, timed out or answered garbage during a synchronous call (RPC).
    #[error("worker error: {0}")]
    Worker(String),
    #[error("database error: {0}")]
    Database(String),
}

impl From<tokio_postgres::Error> for StoreError {
    fn from(error: tokio_postgres::Error) -> Self {
        StoreError::Database(describe_pg_error(&error))
    }
}

impl From<deadpool_postgres::PoolError> for StoreError {
    fn from(error: deadpool_postgres::PoolError) -> Self {
        StoreError::Database(format!("connection pool: {error}"))
    }
}

/// The server's message, which `Display` of tokio-postgres errors leaves out.
pub(crate) fn describe_pg_error(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => error.to_string(),
    }
}
