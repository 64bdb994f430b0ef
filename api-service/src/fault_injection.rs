//! Test hooks (feature `fault-injection`, enabled by the integration tests' own API
//! instances only): hold a request's answer after its commit, so a test can kill the
//! service exactly there and show that a client sending the request again with its
//! request id gets the committed answer.

/// `XDB_FAULT_HOLD_AFTER_COMMIT=<operation>` (`start`, `stop`, …): a request of that
/// operation prints [`HELD_LINE`] on stderr once committed and never answers.
pub const HOLD_AFTER_COMMIT: &str = "XDB_FAULT_HOLD_AFTER_COMMIT";
/// What a held request prints, followed by its operation.
pub const HELD_LINE: &str = "xdb-fault: holding the answer after the commit of";

/// Holds the answer forever when [`HOLD_AFTER_COMMIT`] names `operation`.
pub(crate) async fn after_commit(operation: &str) {
    if std::env::var(HOLD_AFTER_COMMIT).is_ok_and(|held| held == operation) {
        eprintln!("{HELD_LINE} {operation}");
        std::future::pending::<()>().await;
    }
}
