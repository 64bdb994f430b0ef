//! PostgreSQL: a tokio-postgres config from the URL without XDB's TLS parameters, and a
//! rustls connector doing what they ask (tokio-postgres-rustls: a maintained connector
//! that also gives SCRAM the server certificate's hash for channel binding).
//!
//! tokio-postgres itself decides whether TLS is used (`sslmode` `disable`, `prefer`:
//! TLS when the server offers it, `require`); the connector decides what is checked.

use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::{Client, Config, Socket};
use tokio_postgres_rustls::MakeRustlsConnect;
use xdb_config::{DatabaseTls, DatabaseUrl, Dialect, TlsUse};

use crate::client_config::client_config;
use crate::{with_causes, ConnectError};

/// The connector every PostgreSQL connection of XDB uses.
pub type PostgresTls = MakeRustlsConnect;

/// A connection's driving half, over TLS or not.
pub type PostgresConnection =
    tokio_postgres::Connection<Socket, <PostgresTls as MakeTlsConnect<Socket>>::Stream>;

/// A PostgreSQL server to connect to, as a URL names it.
#[derive(Clone)]
pub struct PostgresTarget {
    config: Config,
    tls: PostgresTls,
    settings: DatabaseTls,
}

impl PostgresTarget {
    /// The target `url` names; an error when it is not a PostgreSQL URL, the driver
    /// refuses one of its options, or a certificate or key file it names is unusable.
    pub fn new(url: &DatabaseUrl) -> Result<Self, ConnectError> {
        if url.dialect() != Dialect::Postgres {
            return Err(ConnectError::settings(format!(
                "{} is not a PostgreSQL URL",
                url.redacted()
            )));
        }
        let config: Config = url.driver_url().parse().map_err(|error| {
            ConnectError::settings(format!("invalid database URL: {}", with_causes(&error)))
        })?;
        crate::check_files(url)?;
        Ok(Self {
            config,
            tls: MakeRustlsConnect::new(client_config(url.tls())?),
            settings: url.tls().clone(),
        })
    }

    /// The driver's config, for options XDB sets beside the URL's.
    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn config_mut(&mut self) -> &mut Config {
        &mut self.config
    }

    /// The TLS connector, for pools (deadpool-postgres) and `Config::connect`.
    pub fn tls(&self) -> PostgresTls {
        self.tls.clone()
    }

    /// One connection; its driving half must be polled (spawned) for the client to work.
    pub async fn connect(&self) -> Result<(Client, PostgresConnection), ConnectError> {
        self.config
            .connect(self.tls.clone())
            .await
            .map_err(|error| ConnectError::settings(self.explain(&error)))
    }

    /// One connection, driven by a spawned task that ends when the client is dropped.
    pub async fn connect_spawned(&self) -> Result<Client, ConnectError> {
        let (client, connection) = self.connect().await?;
        tokio::spawn(async move {
            // The server's errors reach the client's calls; a closed socket ends here.
            let _ = connection.await;
        });
        Ok(client)
    }

    /// The driver's error with its causes, and the TLS setting named where TLS is why
    /// it failed (a refused certificate names it already: see `verifier.rs`).
    pub fn explain(&self, error: &tokio_postgres::Error) -> String {
        let text = with_causes(error);
        // tokio-postgres's words for a server that answered "no TLS here".
        if self.settings.use_tls == TlsUse::Require && text.contains("server does not support TLS")
        {
            return format!(
                "{}: the server does not offer TLS, and this mode allows no plaintext \
                 connection (the server needs ssl = on) ({text})",
                self.settings.mode_setting()
            );
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use tokio_postgres::config::SslMode;

    use super::*;

    fn target(url: &str) -> Result<PostgresTarget, ConnectError> {
        PostgresTarget::new(&DatabaseUrl::parse(url).unwrap())
    }

    #[test]
    fn tokio_postgres_decides_only_whether_tls_is_used() {
        for (query, mode) in [
            ("", SslMode::Prefer),
            ("?sslmode=disable", SslMode::Disable),
            ("?sslmode=require", SslMode::Require),
            ("?sslrootcert=system", SslMode::Require),
        ] {
            let target = target(&format!("postgres://u@h/db{query}")).unwrap();
            assert_eq!(target.config().get_ssl_mode(), mode, "{query}");
        }
    }

    #[test]
    fn unusable_files_and_other_dialects_are_refused() {
        let error = target("postgres://u@h/db?sslmode=verify-ca&sslrootcert=/nowhere/ca.pem")
            .err()
            .unwrap()
            .to_string();
        assert!(
            error.starts_with("sslrootcert: cannot read /nowhere/ca.pem"),
            "{error}"
        );
        let error = target("mysql://u:s3cret@h/db").err().unwrap().to_string();
        assert!(error.contains("not a PostgreSQL URL") && !error.contains("s3cret"));
    }
}
