//! TLS to the database, as the URL's parameters ask for it: PostgreSQL's `sslmode`,
//! `sslrootcert`, `sslcert`, `sslkey` (libpq's names and meanings) and MySQL's
//! `ssl-mode`, `ssl-ca`, `ssl-cert`, `ssl-key` (the MySQL client's names and modes).
//!
//! Parsed once, here, into one dialect-free [`DatabaseTls`]; the connectors are built
//! from it (crate `xdb-db-connect`). The drivers never see these parameters: tokio-postgres
//! knows only `disable`/`prefer`/`require` and mysql_async none of them, so
//! [`crate::DatabaseUrl::driver_url`] leaves them out.

use std::fmt;
use std::path::PathBuf;

use crate::database_url::{DatabaseUrlError, Dialect};

/// Whether a connection uses TLS at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsUse {
    /// Plaintext only.
    Disable,
    /// TLS when the server offers it, else plaintext (libpq's default `prefer`, MySQL's
    /// default `PREFERRED`).
    Prefer,
    /// TLS or no connection.
    Require,
}

/// How much of the server's certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerCheck {
    /// Nothing: the connection is encrypted, but the server is not authenticated.
    None,
    /// The chain up to a trusted root (`verify-ca`, `VERIFY_CA`).
    Chain,
    /// The chain and that the certificate names the host connected to (`verify-full`,
    /// `VERIFY_IDENTITY`).
    ChainAndHost,
}

/// The certificates a server's chain must lead to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustedRoots {
    /// The CA certificates (PEM) in this file.
    File(PathBuf),
    /// The public web roots built into XDB (Mozilla's, from `webpki-roots`): the value
    /// `system`, as libpq's `sslrootcert=system`.
    System,
}

/// A client certificate (PEM chain) and its private key (PEM), for servers that
/// authenticate clients by certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCertificate {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
}

/// What the URL asks of TLS, whatever the dialect calls it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatabaseTls {
    pub use_tls: TlsUse,
    pub check: ServerCheck,
    /// Set whenever `check` is not [`ServerCheck::None`].
    pub roots: Option<TrustedRoots>,
    pub client: Option<ClientCertificate>,
    /// The dialect's parameter names, for messages.
    pub names: TlsParameterNames,
    /// The mode as the URL spelled it (or its default), e.g. `verify-full`.
    mode: String,
}

/// One dialect's names of the TLS parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlsParameterNames {
    pub mode: &'static str,
    pub roots: &'static str,
    pub cert: &'static str,
    pub key: &'static str,
}

const POSTGRES: TlsParameterNames = TlsParameterNames {
    mode: "sslmode",
    roots: "sslrootcert",
    cert: "sslcert",
    key: "sslkey",
};

const MYSQL: TlsParameterNames = TlsParameterNames {
    mode: "ssl-mode",
    roots: "ssl-ca",
    cert: "ssl-cert",
    key: "ssl-key",
};

impl DatabaseTls {
    /// The mode as a parameter, e.g. `sslmode=verify-full`, for messages.
    pub fn mode_setting(&self) -> String {
        format!("{}={}", self.names.mode, self.mode)
    }

    /// Whether a connection may go without TLS.
    pub fn allows_plaintext(&self) -> bool {
        self.use_tls != TlsUse::Require
    }
}

impl fmt::Display for DatabaseTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.mode_setting())?;
        match &self.roots {
            Some(TrustedRoots::File(path)) => {
                write!(f, " {}={}", self.names.roots, path.display())?
            }
            Some(TrustedRoots::System) => write!(f, " {}=system", self.names.roots)?,
            None => {}
        }
        Ok(())
    }
}

/// The parameters a dialect's driver must not see: XDB reads them.
pub(crate) fn is_tls_parameter(dialect: Dialect, key: &str) -> bool {
    let names = names_of(dialect);
    key == names.mode || key == names.roots || key == names.cert || key == names.key
}

fn names_of(dialect: Dialect) -> TlsParameterNames {
    match dialect {
        Dialect::Postgres => POSTGRES,
        Dialect::MySql => MYSQL,
    }
}

/// mysql_async's own TLS switches; XDB takes `ssl-mode` instead, so that one URL means
/// one thing.
const MYSQL_DRIVER_TLS_PARAMETERS: [&str; 4] = [
    "require_ssl",
    "verify_ca",
    "verify_identity",
    "built_in_roots",
];

/// Reads the TLS parameters among `pairs` (decoded keys and values).
pub(crate) fn parse<'a>(
    dialect: Dialect,
    pairs: impl Iterator<Item = (&'a str, String)>,
) -> Result<DatabaseTls, DatabaseUrlError> {
    let names = names_of(dialect);
    let (mut mode, mut roots, mut cert, mut key) = (None, None, None, None);
    for (name, value) in pairs {
        let slot = match name {
            _ if name == names.mode => &mut mode,
            _ if name == names.roots => &mut roots,
            _ if name == names.cert => &mut cert,
            _ if name == names.key => &mut key,
            _ if dialect == Dialect::MySql && MYSQL_DRIVER_TLS_PARAMETERS.contains(&name) => {
                return Err(tls_error(
                    name,
                    "not supported; use ssl-mode (DISABLED, PREFERRED, REQUIRED, VERIFY_CA or \
                     VERIFY_IDENTITY) with ssl-ca",
                ));
            }
            _ => continue,
        };
        if value.trim().is_empty() {
            return Err(tls_error(name, "empty; leave the parameter out instead"));
        }
        *slot = Some(value);
    }
    let roots = roots.map(|value| match value.as_str() {
        "system" => TrustedRoots::System,
        _ => TrustedRoots::File(PathBuf::from(value)),
    });
    let client = match (cert, key) {
        (None, None) => None,
        (Some(cert), Some(key)) => Some(ClientCertificate {
            cert_file: cert.into(),
            key_file: key.into(),
        }),
        (Some(_), None) => {
            return Err(tls_error(
                names.key,
                &format!("missing: {} needs the private key file too", names.cert),
            ))
        }
        (None, Some(_)) => {
            return Err(tls_error(
                names.cert,
                &format!("missing: {} needs the certificate file too", names.key),
            ))
        }
    };
    let (mode, use_tls, strictest) = match dialect {
        Dialect::Postgres => postgres_mode(mode, &roots)?,
        Dialect::MySql => mysql_mode(mode, &roots)?,
    };
    let check = match (use_tls, strictest, &roots) {
        (TlsUse::Disable, _, _) => ServerCheck::None,
        (_, ServerCheck::None, None) => ServerCheck::None,
        // As libpq: a CA given with a weaker mode still checks the chain.
        (_, ServerCheck::None, Some(_)) => ServerCheck::Chain,
        (_, strictest, Some(_)) => strictest,
        (_, _, None) => {
            return Err(tls_error(
                names.roots,
                &format!(
                    "{}={mode} checks the server's certificate, so it needs {}: the file of \
                     the CA certificate(s) that signed it (PEM), or {}=system for the public \
                     web roots",
                    names.mode, names.roots, names.roots
                ),
            ))
        }
    };
    Ok(DatabaseTls {
        use_tls,
        check,
        roots: (use_tls != TlsUse::Disable).then_some(roots).flatten(),
        client,
        names,
        mode,
    })
}

/// libpq's modes; `sslrootcert=system` alone means `verify-full`, and a weaker mode
/// with it is refused (libpq 16's rules: the public roots vouch for names, not chains).
fn postgres_mode(
    given: Option<String>,
    roots: &Option<TrustedRoots>,
) -> Result<(String, TlsUse, ServerCheck), DatabaseUrlError> {
    let system = roots == &Some(TrustedRoots::System);
    let mode = given.unwrap_or_else(|| if system { "verify-full" } else { "prefer" }.into());
    let (use_tls, check) = match mode.as_str() {
        "disable" => (TlsUse::Disable, ServerCheck::None),
        "allow" | "prefer" => (TlsUse::Prefer, ServerCheck::None),
        "require" => (TlsUse::Require, ServerCheck::None),
        "verify-ca" => (TlsUse::Require, ServerCheck::Chain),
        "verify-full" => (TlsUse::Require, ServerCheck::ChainAndHost),
        _ => {
            return Err(tls_error(
                "sslmode",
                &format!(
                    "unknown mode `{mode}`; expected disable, prefer, require, verify-ca or \
                     verify-full"
                ),
            ))
        }
    };
    if system && check != ServerCheck::ChainAndHost && use_tls != TlsUse::Disable {
        return Err(tls_error(
            "sslrootcert",
            &format!("sslrootcert=system needs sslmode=verify-full (not {mode})"),
        ));
    }
    Ok((mode, use_tls, check))
}

/// The MySQL client's modes, case-insensitive; `ssl-ca` alone means `VERIFY_CA`.
fn mysql_mode(
    given: Option<String>,
    roots: &Option<TrustedRoots>,
) -> Result<(String, TlsUse, ServerCheck), DatabaseUrlError> {
    let mode = given
        .map(|mode| mode.to_ascii_uppercase())
        .unwrap_or_else(|| {
            if roots.is_some() {
                "VERIFY_CA"
            } else {
                "PREFERRED"
            }
            .into()
        });
    let (use_tls, check) = match mode.as_str() {
        "DISABLED" => (TlsUse::Disable, ServerCheck::None),
        "PREFERRED" => (TlsUse::Prefer, ServerCheck::None),
        "REQUIRED" => (TlsUse::Require, ServerCheck::None),
        "VERIFY_CA" => (TlsUse::Require, ServerCheck::Chain),
        "VERIFY_IDENTITY" => (TlsUse::Require, ServerCheck::ChainAndHost),
        _ => {
            return Err(tls_error(
                "ssl-mode",
                &format!(
                    "unknown mode `{mode}`; expected DISABLED, PREFERRED, REQUIRED, VERIFY_CA \
                     or VERIFY_IDENTITY"
                ),
            ))
        }
    };
    Ok((mode, use_tls, check))
}

fn tls_error(parameter: &str, problem: &str) -> DatabaseUrlError {
    DatabaseUrlError::Tls {
        parameter: parameter.to_string(),
        problem: problem.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use crate::DatabaseUrl;

    use super::*;

    fn tls(text: &str) -> DatabaseTls {
        DatabaseUrl::parse(text)
            .unwrap_or_else(|e| panic!("{text}: {e}"))
            .tls()
            .clone()
    }

    fn error(text: &str) -> String {
        DatabaseUrl::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn without_parameters_tls_is_preferred_and_unchecked() {
        for text in [
            "postgres://u@h/db",
            "host=h dbname=db",
            "mysql://u@h/db",
            "mariadb://u@h/db",
        ] {
            let tls = tls(text);
            assert_eq!(tls.use_tls, TlsUse::Prefer, "{text}");
            assert_eq!(tls.check, ServerCheck::None, "{text}");
            assert_eq!(tls.roots, None, "{text}");
            assert!(tls.allows_plaintext());
        }
        assert_eq!(tls("postgres://u@h/db").mode_setting(), "sslmode=prefer");
        assert_eq!(tls("mysql://u@h/db").mode_setting(), "ssl-mode=PREFERRED");
    }

    #[test]
    fn postgres_modes_follow_libpq() {
        let cases = [
            ("sslmode=disable", TlsUse::Disable, ServerCheck::None),
            ("sslmode=prefer", TlsUse::Prefer, ServerCheck::None),
            ("sslmode=require", TlsUse::Require, ServerCheck::None),
            (
                "sslmode=require&sslrootcert=/ca.pem",
                TlsUse::Require,
                ServerCheck::Chain,
            ),
            ("sslrootcert=/ca.pem", TlsUse::Prefer, ServerCheck::Chain),
            (
                "sslmode=verify-ca&sslrootcert=/ca.pem",
                TlsUse::Require,
                ServerCheck::Chain,
            ),
            (
                "sslmode=verify-full&sslrootcert=%2Fetc%2Fca%20x.pem",
                TlsUse::Require,
                ServerCheck::ChainAndHost,
            ),
            (
                "sslrootcert=system",
                TlsUse::Require,
                ServerCheck::ChainAndHost,
            ),
            (
                "sslmode=disable&sslrootcert=/ca.pem",
                TlsUse::Disable,
                ServerCheck::None,
            ),
        ];
        for (query, use_tls, check) in cases {
            let tls = tls(&format!("postgres://u@h/db?{query}"));
            assert_eq!((tls.use_tls, tls.check), (use_tls, check), "{query}");
        }
        let full = tls("postgres://u@h/db?sslmode=verify-full&sslrootcert=%2Fetc%2Fca%20x.pem");
        assert_eq!(full.roots, Some(TrustedRoots::File("/etc/ca x.pem".into())));
        assert_eq!(
            full.to_string(),
            "sslmode=verify-full sslrootcert=/etc/ca x.pem"
        );
        let key_value = tls("host=h sslmode=verify-ca sslrootcert='/a b/ca.pem' dbname=db");
        assert_eq!(key_value.check, ServerCheck::Chain);
        assert_eq!(
            key_value.roots,
            Some(TrustedRoots::File("/a b/ca.pem".into()))
        );
    }

    #[test]
    fn mysql_modes_follow_the_mysql_client() {
        let cases = [
            ("ssl-mode=DISABLED", TlsUse::Disable, ServerCheck::None),
            ("ssl-mode=preferred", TlsUse::Prefer, ServerCheck::None),
            ("ssl-mode=REQUIRED", TlsUse::Require, ServerCheck::None),
            ("ssl-ca=/ca.pem", TlsUse::Require, ServerCheck::Chain),
            (
                "ssl-mode=VERIFY_IDENTITY&ssl-ca=/ca.pem",
                TlsUse::Require,
                ServerCheck::ChainAndHost,
            ),
            (
                "ssl-mode=verify_ca&ssl-ca=system",
                TlsUse::Require,
                ServerCheck::Chain,
            ),
        ];
        for (query, use_tls, check) in cases {
            let tls = tls(&format!("mysql://u@h/db?{query}"));
            assert_eq!((tls.use_tls, tls.check), (use_tls, check), "{query}");
        }
        assert_eq!(
            tls("mariadb://u@h/db?ssl-mode=verify_identity&ssl-ca=/c").mode_setting(),
            "ssl-mode=VERIFY_IDENTITY"
        );
    }

    #[test]
    fn client_certificates_need_both_files() {
        let tls = tls("postgres://u@h/db?sslmode=require&sslcert=/c.pem&sslkey=/k.pem");
        assert_eq!(
            tls.client,
            Some(ClientCertificate {
                cert_file: "/c.pem".into(),
                key_file: "/k.pem".into()
            })
        );
        let message = error("postgres://u@h/db?sslcert=/c.pem");
        assert!(message.starts_with("sslkey: missing"), "{message}");
        let message = error("mysql://u@h/db?ssl-key=/k.pem");
        assert!(message.starts_with("ssl-cert: missing"), "{message}");
    }

    #[test]
    fn bad_tls_parameters_are_refused_naming_the_parameter() {
        let cases = [
            (
                "postgres://u:s3cret@h/db?sslmode=verify_full",
                "sslmode: unknown mode",
            ),
            (
                "postgres://u:s3cret@h/db?sslmode=verify-full",
                "sslrootcert: sslmode=verify-full checks",
            ),
            (
                "host=h password=s3cret sslmode=verify-ca",
                "sslrootcert: sslmode=verify-ca checks",
            ),
            (
                "postgres://u:s3cret@h/db?sslmode=require&sslrootcert=system",
                "sslrootcert: sslrootcert=system needs sslmode=verify-full",
            ),
            (
                "postgres://u:s3cret@h/db?sslrootcert=",
                "sslrootcert: empty",
            ),
            (
                "mysql://u:s3cret@h/db?ssl-mode=VERIFY_IDENTITY",
                "ssl-ca: ssl-mode=VERIFY_IDENTITY checks",
            ),
            (
                "mysql://u:s3cret@h/db?ssl-mode=on",
                "ssl-mode: unknown mode `ON`",
            ),
            (
                "mysql://u:s3cret@h/db?require_ssl=true",
                "require_ssl: not supported; use ssl-mode",
            ),
        ];
        for (text, expected) in cases {
            let message = error(text);
            assert!(message.starts_with(expected), "{text}: {message}");
            assert!(!message.contains("s3cret"), "{message}");
        }
    }
}
