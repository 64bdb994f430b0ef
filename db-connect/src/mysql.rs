//! MySQL/MariaDB: mysql_async options from the URL without XDB's TLS parameters, with
//! the `SslOpts` they ask for (mysql_async's rustls backend on ring).
//!
//! mysql_async has no `PREFERRED`: with `SslOpts` it requires TLS, without it never
//! uses TLS. [`MySqlTarget::first_connection`] makes `PREFERRED` (the default, as for
//! the MySQL client) by trying TLS and, when the server offers none, plaintext; the
//! options that worked serve every later connection, so a pool decides once.
//!
//! A known gap: mysql_async 0.37.1 checks the host name even when told not to (its
//! test for rustls' name error no longer matches rustls 0.23's wording, upstream issue
//! blackbeam/mysql_async#404), so `VERIFY_CA` checks the name as `VERIFY_IDENTITY` does.

use std::future::Future;

use mysql_async::{ClientIdentity, Conn, DriverError, IoError, Opts, OptsBuilder, SslOpts};
use xdb_config::{DatabaseTls, DatabaseUrl, Dialect, ServerCheck, TlsUse, TrustedRoots};

use crate::{with_causes, ConnectError};

/// A MySQL server to connect to, as a URL names it.
#[derive(Clone, Debug)]
pub struct MySqlTarget {
    /// The options to try first: with TLS unless the mode is `DISABLED`.
    opts: Opts,
    /// `PREFERRED` only: the options for a server that offers no TLS.
    plaintext: Option<Opts>,
    settings: DatabaseTls,
}

impl MySqlTarget {
    /// The target `url` names; an error when it is not a MySQL URL, the driver refuses
    /// one of its options, or a certificate or key file it names is unusable.
    pub fn new(url: &DatabaseUrl) -> Result<Self, ConnectError> {
        if url.dialect() != Dialect::MySql {
            return Err(ConnectError::settings(format!(
                "{} is not a MySQL URL",
                url.redacted()
            )));
        }
        let plain = Opts::from_url(&url.driver_url()).map_err(|error| {
            ConnectError::settings(format!("invalid database URL: {}", with_causes(&error)))
        })?;
        crate::check_files(url)?;
        let tls = url.tls();
        let (opts, plaintext) = match tls.use_tls {
            TlsUse::Disable => (plain, None),
            TlsUse::Prefer => (with_tls(plain.clone(), tls), Some(plain)),
            TlsUse::Require => (with_tls(plain, tls), None),
        };
        Ok(Self {
            opts,
            plaintext,
            settings: tls.clone(),
        })
    }

    /// The options to connect with first (TLS applied as the URL asks).
    pub fn opts(&self) -> &Opts {
        &self.opts
    }

    /// Runs `attempt` (a connection, or a pool's first) with [`MySqlTarget::opts`];
    /// when the server offers no TLS and the mode is `PREFERRED`, runs it again without
    /// TLS. Gives what `attempt` gave and the options that worked, for every later
    /// connection.
    pub async fn first_connection<T, F, Fut>(&self, attempt: F) -> Result<(T, Opts), ConnectError>
    where
        F: Fn(Opts) -> Fut,
        Fut: Future<Output = Result<T, mysql_async::Error>>,
    {
        match attempt(self.opts.clone()).await {
            Ok(made) => Ok((made, self.opts.clone())),
            Err(mysql_async::Error::Driver(DriverError::NoClientSslFlagFromServer))
                if self.plaintext.is_some() =>
            {
                let plaintext = self.plaintext.clone().expect("checked");
                let made = attempt(plaintext.clone())
                    .await
                    .map_err(|error| ConnectError::settings(self.explain(&error)))?;
                Ok((made, plaintext))
            }
            Err(error) => Err(ConnectError::settings(self.explain(&error))),
        }
    }

    /// One connection with the session set up by `setup`.
    pub async fn connect(
        &self,
        setup: impl Fn(OptsBuilder) -> OptsBuilder,
    ) -> Result<Conn, ConnectError> {
        let (conn, _) = self
            .first_connection(|opts| Conn::new(setup(OptsBuilder::from_opts(opts))))
            .await?;
        Ok(conn)
    }

    /// The driver's error with its causes, and the TLS settings named where TLS is why
    /// it failed.
    pub fn explain(&self, error: &mysql_async::Error) -> String {
        match error {
            mysql_async::Error::Driver(DriverError::NoClientSslFlagFromServer) => format!(
                "{}: the server does not offer TLS, and this mode allows no plaintext \
                 connection (the server needs ssl_cert and ssl_key)",
                self.settings.mode_setting()
            ),
            mysql_async::Error::Io(IoError::Tls(tls_error)) => {
                format!("{}: TLS failed: {tls_error}", self.settings)
            }
            mysql_async::Error::Io(IoError::Io(io))
                if io
                    .get_ref()
                    .is_some_and(|inner| inner.is::<rustls::Error>()) =>
            {
                format!("{}: TLS failed: {io}", self.settings)
            }
            other => with_causes(other),
        }
    }
}

/// `plain` with the `SslOpts` of `tls`.
fn with_tls(plain: Opts, tls: &DatabaseTls) -> Opts {
    let mut ssl = SslOpts::default();
    match &tls.roots {
        Some(TrustedRoots::File(path)) => {
            ssl = ssl
                .with_root_certs(vec![path.clone().into()])
                .with_disable_built_in_roots(true);
        }
        Some(TrustedRoots::System) | None => {}
    }
    ssl = match tls.check {
        ServerCheck::None => ssl.with_danger_accept_invalid_certs(true),
        ServerCheck::Chain => ssl.with_danger_skip_domain_validation(true),
        ServerCheck::ChainAndHost => ssl,
    };
    if let Some(client) = &tls.client {
        ssl = ssl.with_client_identity(Some(ClientIdentity::new(
            client.cert_file.clone().into(),
            client.key_file.clone().into(),
        )));
    }
    OptsBuilder::from_opts(plain).ssl_opts(ssl).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(url: &str) -> MySqlTarget {
        MySqlTarget::new(&DatabaseUrl::parse(url).unwrap()).unwrap()
    }

    #[test]
    fn each_mode_gives_the_driver_its_tls_options() {
        let disabled = target("mysql://root@h/db?ssl-mode=DISABLED");
        assert_eq!(disabled.opts().ssl_opts(), None);
        assert!(disabled.plaintext.is_none());

        // PREFERRED tries TLS (unchecked) first, and keeps plaintext to fall back to.
        let preferred = target("mariadb://root@h/db");
        let ssl = preferred.opts().ssl_opts().expect("TLS first");
        assert!(ssl.accept_invalid_certs());
        assert_eq!(
            preferred.plaintext.as_ref().map(|opts| opts.ssl_opts()),
            Some(None)
        );

        let required = target("mysql://root@h/db?ssl-mode=required");
        assert!(required.opts().ssl_opts().unwrap().accept_invalid_certs());
        assert!(required.plaintext.is_none(), "no plaintext under REQUIRED");

        let system = target("mysql://root@h/db?ssl-mode=VERIFY_IDENTITY&ssl-ca=system");
        let ssl = system.opts().ssl_opts().unwrap();
        assert!(!ssl.accept_invalid_certs() && !ssl.skip_domain_validation());
        assert!(!ssl.disable_built_in_roots(), "the public roots");
    }

    #[test]
    fn a_missing_ca_file_is_named() {
        let url = DatabaseUrl::parse("mysql://root@h/db?ssl-ca=/nowhere/ca.pem").unwrap();
        let error = MySqlTarget::new(&url).unwrap_err().to_string();
        assert!(
            error.starts_with("ssl-ca: cannot read /nowhere/ca.pem"),
            "{error}"
        );
    }
}
