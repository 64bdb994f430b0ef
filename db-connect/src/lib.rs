//! Connections to the user's database as its [`DatabaseUrl`] says, TLS included.
//!
//! Every XDB component that opens a database connection (the store's pools and
//! PostgreSQL's LISTEN connection, the schema installer, the bench, the test harness,
//! the Pulsar capture) builds it here, from the one parsed URL: [`PostgresTarget`] is a
//! tokio-postgres config with its rustls connector, [`MySqlTarget`] mysql_async options
//! with their `SslOpts`. This crate never reads a URL's text itself (`xdb-config` parsed
//! it) and runs no statement.
//!
//! One crypto provider serves the whole workspace: ring (`rustls`' `ring` feature; the
//! Pulsar client and reqwest use it too), passed explicitly where a config is built.

mod client_config;
mod mysql;
mod postgres;
mod verifier;

use std::fmt;

pub use mysql::MySqlTarget;
pub use postgres::{PostgresConnection, PostgresTarget, PostgresTls};
pub use xdb_config::{DatabaseTls, DatabaseUrl};

/// Why a connection could not be made or set up; the message names the TLS setting
/// when TLS is the reason, holds the driver's causes (tokio-postgres' own message
/// does not), and never the URL's password.
#[derive(Debug)]
pub struct ConnectError {
    message: String,
}

impl ConnectError {
    pub(crate) fn settings(message: String) -> Self {
        Self { message }
    }
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConnectError {}

/// `error` and its causes, as one line.
pub(crate) fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// The problems of the files `url`'s TLS parameters name, as one error.
fn check_files(url: &DatabaseUrl) -> Result<(), ConnectError> {
    let problems = xdb_config::database_problems(url);
    match problems.is_empty() {
        true => Ok(()),
        false => Err(ConnectError::settings(problems.join("; "))),
    }
}
