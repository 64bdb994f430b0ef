//! mysql_async errors as [`StoreError`]s, classified by the server's error code.

use crate::StoreError;

/// ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT.
const CONFLICT_CODES: [u16; 2] = [1213, 1205];
/// ER_SERVER_SHUTDOWN, ER_CON_COUNT_ERROR; CR_SERVER_GONE_ERROR, CR_SERVER_LOST;
/// ER_OPTION_PREVENTS_STATEMENT (`--read-only`) and
/// ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION: a primary demoted by a failover, or a
/// replica the address now reaches, which the next connection may not be.
const CONNECTION_CODES: [u16; 6] = [1053, 1040, 2006, 2013, 1290, 1792];
/// MariaDB's ER_STATEMENT_TIMEOUT (`max_statement_time`), MySQL's ER_QUERY_TIMEOUT
/// (`MAX_EXECUTION_TIME`).
const TIMEOUT_CODES: [u16; 2] = [1969, 3024];

impl From<mysql_async::Error> for StoreError {
    fn from(error: mysql_async::Error) -> Self {
        let message = describe_mysql_error(&error);
        match &error {
            mysql_async::Error::Server(server) if CONFLICT_CODES.contains(&server.code) => {
                StoreError::Conflict(message)
            }
            mysql_async::Error::Server(server) if CONNECTION_CODES.contains(&server.code) => {
                StoreError::ConnectionLost(message)
            }
            mysql_async::Error::Server(server) if TIMEOUT_CODES.contains(&server.code) => {
                StoreError::TimedOut(message)
            }
            mysql_async::Error::Server(_) | mysql_async::Error::Url(_) => {
                StoreError::Database(message)
            }
            mysql_async::Error::Io(_) | mysql_async::Error::Driver(_) => {
                StoreError::ConnectionLost(message)
            }
            mysql_async::Error::Other(_) => StoreError::Database(message),
        }
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
