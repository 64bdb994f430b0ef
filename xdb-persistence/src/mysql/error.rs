//! mysql_async errors as [`StoreError`]s.

use crate::StoreError;

impl From<mysql_async::Error> for StoreError {
    fn from(error: mysql_async::Error) -> Self {
        StoreError::Database(describe_mysql_error(&error))
    }
}

/// The server's message with its error code and SQLSTATE, or the client error.
pub(crate) fn describe_mysql_error(error: &mysql_async::Error) -> String {
    match error {
        mysql_async::Error::Server(server) => {
            format!("{} ({}/{})", server.message, server.code, server.state)
        }
        other => other.to_string(),
    }
}
