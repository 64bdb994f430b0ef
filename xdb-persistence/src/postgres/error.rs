//! tokio-postgres errors as [`StoreError`]s, classified by SQLSTATE and by the table and
//! column the server names, never by the words of its message.

use tokio_postgres::error::SqlState;

use crate::StoreError;

impl From<tokio_postgres::Error> for StoreError {
    fn from(error: tokio_postgres::Error) -> Self {
        classify(&error)
    }
}

impl From<deadpool_postgres::PoolError> for StoreError {
    fn from(error: deadpool_postgres::PoolError) -> Self {
        match error {
            deadpool_postgres::PoolError::Backend(error) => classify(&error),
            deadpool_postgres::PoolError::Timeout(deadpool_postgres::TimeoutType::Wait) => {
                StoreError::Overloaded("every pooled connection stayed busy".into())
            }
            other => StoreError::ConnectionLost(format!("connection pool: {other}")),
        }
    }
}

fn classify(error: &tokio_postgres::Error) -> StoreError {
    let message = describe_pg_error(error);
    let Some(db) = error.as_db_error() else {
        let io = std::error::Error::source(error).is_some_and(|s| s.is::<std::io::Error>());
        return if error.is_closed() || io {
            StoreError::ConnectionLost(message)
        } else {
            StoreError::Database(message)
        };
    };
    let code = db.code();
    if [
        SqlState::T_R_SERIALIZATION_FAILURE,
        SqlState::T_R_DEADLOCK_DETECTED,
        SqlState::LOCK_NOT_AVAILABLE,
    ]
    .contains(code)
        // Insufficient resources (too many connections, out of memory, disk full):
        // the server's state, not the statement's.
        || code.code().starts_with("53")
    {
        StoreError::Conflict(message)
    } else if code.code().starts_with("08")
        || [
            SqlState::ADMIN_SHUTDOWN,
            SqlState::CRASH_SHUTDOWN,
            SqlState::CANNOT_CONNECT_NOW,
            // The server ended a session that idled in its transaction (see
            // `session_limits`): a client the network cut off, not a refused statement.
            SqlState::IDLE_IN_TRANSACTION_SESSION_TIMEOUT,
            SqlState::IDLE_SESSION_TIMEOUT,
            // A primary demoted by a failover, or a standby the address now reaches:
            // the server's role, which the next connection may not share.
            SqlState::READ_ONLY_SQL_TRANSACTION,
        ]
        .contains(code)
    {
        StoreError::ConnectionLost(message)
    } else if *code == SqlState::QUERY_CANCELED {
        // `statement_timeout`, which only the query statements set (see `operations::query`).
        StoreError::TimedOut(message)
    } else if *code == SqlState::DIVISION_BY_ZERO && db.where_().is_none() {
        // A pipeline's write found other rows than it asserts (see `pipeline`): the
        // store's statements divide by nothing else. A division in a function the
        // statement ran (a trigger on the user's table) names it in its context, and
        // is that function's error.
        StoreError::Stale("rows changed since they were read".into())
    } else if *code == SqlState::NOT_NULL_VIOLATION
        && db.table() == Some("xdb_sys_async_state_executions")
        && db.column() == Some("version")
    {
        // The state update's refusal of a moved version (see `apply_plan`).
        StoreError::Stale("a state execution changed meanwhile".into())
    } else {
        StoreError::Database(message)
    }
}

/// The server's message, which `Display` of tokio-postgres errors leaves out.
pub(crate) fn describe_pg_error(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => error.to_string(),
    }
}
