use std::fmt::Display;

use thiserror::Error;
use xdb_engine::decide::DecideError;

/// Errors of the persistence layer, classified where the driver's errors are converted
/// (see each dialect's `error.rs`), and mapped to API errors by the services.
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
    /// An RPC's worker answered, but the execution had closed meanwhile: the answer was
    /// discarded. Distinct from a closed execution found before the call (`NotRunning`),
    /// because the worker did run.
    #[error("{0}")]
    ClosedDuringRpc(String),
    /// The database refused the transaction for now: a deadlock, a serialization
    /// failure, a lock wait that timed out. Nothing was written; the same work may
    /// succeed when tried again.
    #[error("the database refused the transaction for now: {0}")]
    Conflict(String),
    /// The connection failed or could not be made: a statement in flight may or may not
    /// have been committed.
    #[error("database connection lost: {0}")]
    ConnectionLost(String),
    /// No pooled connection became free within the store's pool wait
    /// ([`crate::StoreOptions::pool_wait`]): nothing was sent, so nothing was written.
    #[error("no database connection became free in time: {0}")]
    Overloaded(String),
    /// An operator's control does not apply to the execution as it is now.
    #[error("{0}")]
    NotApplicable(String),
    /// A statement ran past the time limit it was given (a filtered list or count) and
    /// the database cancelled it: nothing was written.
    #[error("the query ran longer than its time limit: {0}")]
    TimedOut(String),
    /// The request's `requestId` was used for another request (see [`crate::receipts`]).
    #[error("{0}")]
    RequestIdConflict(String),
    /// Any other database error: trying again as is would fail again.
    #[error("database error: {0}")]
    Database(String),
}

/// How a failed task handling is judged, the same by both task sources (the database
/// queue and the Pulsar consumer): one class for each [`StoreError`], decided where the
/// driver's error was converted (each dialect's `error.rs`). The table in
/// `docs/reliability.md` ("How failures are judged") says what each mode does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureClass {
    /// The database or the path to it failed for now (a lost connection, a deadlock, a
    /// serialization failure, a lock wait or time limit, no free connection): handled
    /// again after a pause, no attempt consumed; set aside for an operator only after
    /// the source's limit of refusals in a row.
    Transient,
    /// The user's part refused (the business table, the worker, a decision the engine
    /// rejects): the handlers record it as a failed attempt of the state, under its
    /// retry policy. One that reaches a task source is set aside at once.
    Users,
    /// Trying again as it is would fail the same way (a row not found, a statement the
    /// database rejects, a request that no longer applies): set aside at once, with the
    /// reason, for an operator's retry-now or give-up.
    Permanent,
    /// The work was done (or is being done) elsewhere: nothing to do.
    Stale,
}

impl StoreError {
    /// This error's class (see [`FailureClass`]).
    pub fn class(&self) -> FailureClass {
        match self {
            StoreError::Conflict(_)
            | StoreError::ConnectionLost(_)
            | StoreError::Overloaded(_)
            | StoreError::TimedOut(_) => FailureClass::Transient,
            StoreError::AppDatabase(_) | StoreError::Worker(_) | StoreError::Decide(_) => {
                FailureClass::Users
            }
            StoreError::NotFound(_)
            | StoreError::Database(_)
            | StoreError::ClosedDuringRpc(_)
            | StoreError::NotApplicable(_)
            | StoreError::RequestIdConflict(_) => FailureClass::Permanent,
            StoreError::Stale(_) => FailureClass::Stale,
        }
    }

    /// Whether trying the same work again may succeed. A connection lost mid-commit
    /// counts: every transition checks the rows it read, so one applied already is found
    /// stale the second time, never applied twice.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            StoreError::Conflict(_) | StoreError::ConnectionLost(_) | StoreError::Overloaded(_)
        )
    }

    /// Whether the database (not the request, the rows or the user's table) failed.
    pub fn is_database(&self) -> bool {
        matches!(
            self,
            StoreError::Conflict(_)
                | StoreError::ConnectionLost(_)
                | StoreError::Overloaded(_)
                | StoreError::Database(_)
        )
    }

    /// The same error again, for each of several callers it failed together (the
    /// engine's decision errors are never among them: they come before any statement).
    pub(crate) fn for_another_caller(&self) -> StoreError {
        match self {
            StoreError::NotFound(m) => StoreError::NotFound(m.clone()),
            StoreError::Decide(error) => StoreError::Database(error.to_string()),
            StoreError::Stale(m) => StoreError::Stale(m.clone()),
            StoreError::AppDatabase(m) => StoreError::AppDatabase(m.clone()),
            StoreError::Worker(m) => StoreError::Worker(m.clone()),
            StoreError::TimedOut(m) => StoreError::TimedOut(m.clone()),
            StoreError::ClosedDuringRpc(m) => StoreError::ClosedDuringRpc(m.clone()),
            StoreError::NotApplicable(m) => StoreError::NotApplicable(m.clone()),
            StoreError::Conflict(m) => StoreError::Conflict(m.clone()),
            StoreError::ConnectionLost(m) => StoreError::ConnectionLost(m.clone()),
            StoreError::Overloaded(m) => StoreError::Overloaded(m.clone()),
            StoreError::RequestIdConflict(m) => StoreError::RequestIdConflict(m.clone()),
            StoreError::Database(m) => StoreError::Database(m.clone()),
        }
    }
}

/// A database URL the store cannot use. The error never echoes the URL: it may carry a
/// password.
pub(crate) fn invalid_database_url(error: impl Display) -> StoreError {
    StoreError::Database(format!("invalid database URL: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_has_the_class_its_retry_would_deserve() {
        let m = || String::from("m");
        let cases = [
            (StoreError::Conflict(m()), FailureClass::Transient),
            (StoreError::ConnectionLost(m()), FailureClass::Transient),
            (StoreError::Overloaded(m()), FailureClass::Transient),
            (StoreError::TimedOut(m()), FailureClass::Transient),
            (StoreError::AppDatabase(m()), FailureClass::Users),
            (StoreError::Worker(m()), FailureClass::Users),
            (
                StoreError::Decide(DecideError::NotRunning),
                FailureClass::Users,
            ),
            (StoreError::NotFound(m()), FailureClass::Permanent),
            (StoreError::Database(m()), FailureClass::Permanent),
            (StoreError::NotApplicable(m()), FailureClass::Permanent),
            (StoreError::RequestIdConflict(m()), FailureClass::Permanent),
            (StoreError::ClosedDuringRpc(m()), FailureClass::Permanent),
            (StoreError::Stale(m()), FailureClass::Stale),
        ];
        for (error, class) in cases {
            assert_eq!(error.class(), class, "{error:?}");
            // Only a transient error is worth the same transaction again.
            if error.is_retryable() {
                assert_eq!(class, FailureClass::Transient, "{error:?}");
            }
        }
    }
}
