//! The database URL, parsed once: which dialect it names, whether its scheme said
//! MariaDB, which database it names, and a form that is safe to print.
//!
//! Every binary, tool and test harness reads the dialect from here instead of looking at
//! the URL's text itself. Parsing needs no driver; each driver still reads the URL
//! itself ([`DatabaseUrl::driver_url`]) for hosts and options, but not for TLS, which
//! is parsed here ([`DatabaseUrl::tls`], see `database_tls.rs`).

use std::fmt;
use std::str::FromStr;

use crate::database_tls::{self, DatabaseTls, TlsUse};

/// The SQL dialect of a database: what XDB's statements and system tables are written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// PostgreSQL: `postgres://`, `postgresql://` or libpq `key=value` pairs.
    Postgres,
    /// MySQL or MariaDB: `mysql://` or `mariadb://` (MariaDB 10.11 is the server tested).
    MySql,
}

impl Dialect {
    /// The dialect `database_url` names; see [`DatabaseUrl::parse`].
    pub fn from_url(database_url: &str) -> Result<Dialect, DatabaseUrlError> {
        Ok(DatabaseUrl::parse(database_url)?.dialect())
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dialect::Postgres => "PostgreSQL",
            Dialect::MySql => "MySQL",
        })
    }
}

/// Why a database URL cannot be used. No message contains the URL or any part of it
/// but a scheme, since the URL may carry a password; callers name the setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatabaseUrlError {
    /// Nothing, or only spaces.
    Empty,
    /// A URL whose scheme is none of XDB's.
    UnknownScheme(String),
    /// Neither a URL nor `key=value` pairs.
    NotAUrl,
    /// A port that is not a number up to 65535.
    BadPort,
    /// A `%` not followed by two hex digits, or a name that is not UTF-8 once decoded.
    BadEncoding,
    /// A libpq connection string that is not `key=value` pairs.
    BadKeyValue,
    /// The URL names no database where one is needed.
    NoDatabase(Dialect),
    /// A TLS parameter (`sslmode`, `ssl-ca`, …) that cannot be used, or a missing one.
    Tls { parameter: String, problem: String },
}

impl fmt::Display for DatabaseUrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => write!(
                f,
                "empty; expected e.g. postgres://user@host:5432/db or mysql://user@host:3306/db"
            ),
            Self::UnknownScheme(scheme) => write!(
                f,
                "unknown scheme `{scheme}://`; expected postgres://, postgresql://, mysql:// \
                 or mariadb://"
            ),
            Self::NotAUrl => write!(
                f,
                "expected a URL such as postgres://user@host:5432/db or \
                 mysql://user@host:3306/db, or PostgreSQL key=value pairs (host=… dbname=…)"
            ),
            Self::BadPort => write!(f, "the port must be a number up to 65535"),
            Self::BadEncoding => write!(
                f,
                "invalid percent-encoding: `%` must be followed by two hex digits, and the \
                 decoded database name must be UTF-8"
            ),
            Self::BadKeyValue => write!(
                f,
                "expected key=value pairs separated by spaces (quote values with spaces as \
                 key='a value')"
            ),
            Self::NoDatabase(Dialect::Postgres) => write!(
                f,
                "it names no database; add it as the path, e.g. postgres://user@host:5432/dbname"
            ),
            Self::NoDatabase(Dialect::MySql) => write!(
                f,
                "a MySQL URL must name the database, e.g. mysql://user@host:3306/dbname"
            ),
            Self::Tls { parameter, problem } => write!(f, "{parameter}: {problem}"),
        }
    }
}

impl std::error::Error for DatabaseUrlError {}

/// A database URL that names a known dialect. [`fmt::Display`] and [`fmt::Debug`] show it
/// with the password replaced by `***`; only [`DatabaseUrl::as_str`] and
/// [`DatabaseUrl::driver_url`] give the secret, for the driver.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseUrl {
    text: String,
    dialect: Dialect,
    mariadb_scheme: bool,
    /// `key=value` pairs rather than a URL.
    key_value: bool,
    database: Option<String>,
    redacted: String,
    tls: DatabaseTls,
}

impl DatabaseUrl {
    /// Parses `text`: `postgres://` and `postgresql://` URLs and libpq `key=value`
    /// strings are PostgreSQL, `mysql://` and `mariadb://` URLs MySQL. Schemes are
    /// case-insensitive; surrounding spaces are ignored.
    pub fn parse(text: &str) -> Result<Self, DatabaseUrlError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(DatabaseUrlError::Empty);
        }
        match text.split_once("://") {
            Some((scheme, rest)) if is_scheme(scheme) => parse_url(text, scheme, rest),
            _ if text.contains('=') => parse_key_value(text),
            _ => Err(DatabaseUrlError::NotAUrl),
        }
    }

    /// PostgreSQL or MySQL.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Whether the scheme was `mariadb://`. Whether the server *is* MariaDB only the
    /// server can say (`SELECT VERSION()`): a `mysql://` URL often points at MariaDB.
    pub fn mariadb_scheme(&self) -> bool {
        self.mariadb_scheme
    }

    /// The database named (URL path, or libpq `dbname`), percent-decoded; `None` when
    /// the URL names none (PostgreSQL then uses the user's name).
    pub fn database(&self) -> Option<&str> {
        self.database.as_deref()
    }

    /// [`DatabaseUrl::database`], or an error saying how to name one.
    pub fn require_database(&self) -> Result<&str, DatabaseUrlError> {
        self.database()
            .ok_or(DatabaseUrlError::NoDatabase(self.dialect))
    }

    /// The URL as given (trimmed), password included: only for handing to a driver.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// What the URL asks of TLS (its defaults when it says nothing).
    pub fn tls(&self) -> &DatabaseTls {
        &self.tls
    }

    /// The URL as the dialect's driver reads it, without the TLS parameters XDB reads
    /// itself ([`DatabaseUrl::tls`]): `mariadb://` is spelled `mysql://` (mysql_async
    /// knows only that scheme), and PostgreSQL's `sslmode` is the one of
    /// `disable`/`prefer`/`require` tokio-postgres knows; the rest as given.
    pub fn driver_url(&self) -> String {
        let is_tls = |key: &str| database_tls::is_tls_parameter(self.dialect, key);
        let driver_sslmode = match (self.dialect, self.tls.use_tls) {
            (Dialect::Postgres, TlsUse::Disable) => Some("sslmode=disable"),
            (Dialect::Postgres, TlsUse::Require) => Some("sslmode=require"),
            _ => None,
        };
        if self.key_value {
            let mut pairs: Vec<&str> = key_value_pairs(&self.text)
                .expect("parsed before")
                .into_iter()
                .filter(|pair| !is_tls(pair.key))
                .map(|pair| pair.text)
                .collect();
            pairs.extend(driver_sslmode);
            return pairs.join(" ");
        }
        let (scheme, rest) = self.text.split_once("://").expect("parsed as a URL");
        let scheme = if self.mariadb_scheme { "mysql" } else { scheme };
        let fragment_start = rest.find('#').unwrap_or(rest.len());
        let (rest, fragment) = rest.split_at(fragment_start);
        let (base, query) = rest.split_once('?').unwrap_or((rest, ""));
        let mut kept: Vec<&str> = query
            .split('&')
            .filter(|pair| !pair.is_empty())
            .filter(|pair| !is_tls(pair.split_once('=').map_or(*pair, |(key, _)| key)))
            .collect();
        kept.extend(driver_sslmode);
        let query = if kept.is_empty() {
            String::new()
        } else {
            format!("?{}", kept.join("&"))
        };
        format!("{scheme}://{base}{query}{fragment}")
    }

    /// The URL with its password replaced by `***`, for logs and messages.
    pub fn redacted(&self) -> &str {
        &self.redacted
    }

    /// The same server, user and options with database `name` instead (a URL's path,
    /// a `key=value` string's `dbname`).
    pub fn with_database(&self, name: &str) -> Result<DatabaseUrl, DatabaseUrlError> {
        let text = if self.key_value {
            let mut pairs: Vec<String> = key_value_pairs(&self.text)?
                .into_iter()
                .filter(|pair| pair.key != "dbname")
                .map(|pair| pair.text.to_string())
                .collect();
            pairs.push(format!("dbname={}", quote_value(name)));
            pairs.join(" ")
        } else {
            let (scheme, rest) = self.text.split_once("://").expect("parsed as a URL");
            let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            let tail = &rest[authority_end..];
            let suffix = tail.find(['?', '#']).map_or("", |i| &tail[i..]);
            format!(
                "{scheme}://{}/{}{suffix}",
                &rest[..authority_end],
                percent_encode(name)
            )
        };
        DatabaseUrl::parse(&text)
    }
}

impl FromStr for DatabaseUrl {
    type Err = DatabaseUrlError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        DatabaseUrl::parse(text)
    }
}

impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted)
    }
}

// The password stays out of debug output too.
impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DatabaseUrl")
            .field("url", &self.redacted)
            .field("dialect", &self.dialect)
            .field("mariadb_scheme", &self.mariadb_scheme)
            .field("database", &self.database)
            .field("tls", &self.tls)
            .finish()
    }
}

/// RFC 3986: a letter, then letters, digits, `+`, `-` or `.`.
fn is_scheme(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

fn parse_url(text: &str, scheme: &str, rest: &str) -> Result<DatabaseUrl, DatabaseUrlError> {
    let lower = scheme.to_ascii_lowercase();
    let (dialect, mariadb_scheme) = match lower.as_str() {
        "postgres" | "postgresql" => (Dialect::Postgres, false),
        "mysql" => (Dialect::MySql, false),
        "mariadb" => (Dialect::MySql, true),
        _ => return Err(DatabaseUrlError::UnknownScheme(lower)),
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let (userinfo, hosts) = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => (Some(userinfo), hosts),
        None => (None, authority),
    };
    // PostgreSQL allows several `host:port`s, comma-separated.
    for host in hosts.split(',') {
        let port = match host.strip_prefix('[') {
            Some(bracketed) => bracketed
                .split_once(']')
                .and_then(|(_, p)| p.strip_prefix(':')),
            None => host.split_once(':').map(|(_, port)| port),
        };
        if let Some(port) = port {
            if !port.is_empty() && port.parse::<u16>().is_err() {
                return Err(DatabaseUrlError::BadPort);
            }
        }
    }
    let tail = &rest[authority_end..];
    let path_end = tail.find(['?', '#']).unwrap_or(tail.len());
    let path = tail[..path_end].trim_start_matches('/');
    let query = tail[path_end..]
        .strip_prefix('?')
        .map(|q| q.split('#').next().unwrap_or_default())
        .unwrap_or_default();
    let mut database = (!path.is_empty())
        .then(|| percent_decode(path))
        .transpose()?;
    if database.is_none() && dialect == Dialect::Postgres {
        // libpq also takes the database as a parameter: `postgres://h?dbname=app`.
        database = query_pairs(query)
            .find(|(key, _)| *key == "dbname")
            .map(|(_, value)| percent_decode(value))
            .transpose()?
            .filter(|name| !name.is_empty());
    }

    let mut redacted = format!("{scheme}://");
    if let Some(userinfo) = userinfo {
        match userinfo.split_once(':') {
            Some((user, _password)) => redacted.push_str(&format!("{user}:***@")),
            None => redacted.push_str(&format!("{userinfo}@")),
        }
    }
    redacted.push_str(hosts);
    redacted.push_str(&tail[..path_end]);
    // Only XDB's own parameters are decoded here; the driver decodes the others.
    let decoded = query_pairs(query)
        .map(
            |(key, value)| match database_tls::is_tls_parameter(dialect, key) {
                true => Ok((key, percent_decode(value)?)),
                false => Ok((key, value.to_string())),
            },
        )
        .collect::<Result<Vec<_>, DatabaseUrlError>>()?;
    let tls = database_tls::parse(dialect, decoded.into_iter())?;
    if !query.is_empty() {
        let query: Vec<String> = query_pairs(query)
            .map(|(key, value)| match key {
                "password" => "password=***".to_string(),
                _ if value.is_empty() => key.to_string(),
                _ => format!("{key}={value}"),
            })
            .collect();
        redacted.push('?');
        redacted.push_str(&query.join("&"));
    }
    Ok(DatabaseUrl {
        text: text.to_string(),
        dialect,
        mariadb_scheme,
        key_value: false,
        database,
        redacted,
        tls,
    })
}

fn query_pairs(query: &str) -> impl Iterator<Item = (&str, &str)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| pair.split_once('=').unwrap_or((pair, "")))
}

fn parse_key_value(text: &str) -> Result<DatabaseUrl, DatabaseUrlError> {
    let pairs = key_value_pairs(text)?;
    let database = pairs
        .iter()
        .find(|pair| pair.key == "dbname")
        .map(|pair| pair.value.clone())
        .filter(|name| !name.is_empty());
    let redacted = pairs
        .iter()
        .map(|pair| match pair.key {
            "password" => "password=***".to_string(),
            _ => pair.text.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ");
    let tls = database_tls::parse(
        Dialect::Postgres,
        pairs.iter().map(|pair| (pair.key, pair.value.clone())),
    )?;
    Ok(DatabaseUrl {
        text: text.to_string(),
        dialect: Dialect::Postgres,
        mariadb_scheme: false,
        key_value: true,
        database,
        redacted,
        tls,
    })
}

/// One `key=value` of a libpq connection string.
struct Pair<'a> {
    key: &'a str,
    /// Unquoted and unescaped.
    value: String,
    /// The pair as written.
    text: &'a str,
}

/// libpq's syntax: `key = value` pairs separated by spaces; a value is a run of
/// non-spaces or single-quoted, with `\'` and `\\` escapes in either.
fn key_value_pairs(text: &str) -> Result<Vec<Pair<'_>>, DatabaseUrlError> {
    let bytes = text.as_bytes();
    let mut pairs = Vec::new();
    let mut i = 0;
    let skip_spaces = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    loop {
        i = skip_spaces(i);
        if i == bytes.len() {
            return Ok(pairs);
        }
        let start = i;
        while i < bytes.len() && !bytes[i].is_ascii_whitespace() && bytes[i] != b'=' {
            i += 1;
        }
        let key = &text[start..i];
        i = skip_spaces(i);
        if key.is_empty() || bytes.get(i) != Some(&b'=') {
            return Err(DatabaseUrlError::BadKeyValue);
        }
        i = skip_spaces(i + 1);
        let mut value = Vec::new();
        let quoted = bytes.get(i) == Some(&b'\'');
        if quoted {
            i += 1;
        }
        loop {
            match bytes.get(i) {
                None if quoted => return Err(DatabaseUrlError::BadKeyValue),
                None => break,
                Some(b'\'') if quoted => {
                    i += 1;
                    break;
                }
                Some(c) if !quoted && c.is_ascii_whitespace() => break,
                Some(b'\\') if i + 1 < bytes.len() => {
                    value.push(bytes[i + 1]);
                    i += 2;
                }
                Some(&c) => {
                    value.push(c);
                    i += 1;
                }
            }
        }
        pairs.push(Pair {
            key,
            value: String::from_utf8(value).map_err(|_| DatabaseUrlError::BadEncoding)?,
            text: &text[start..i],
        });
    }
}

fn quote_value(value: &str) -> String {
    if !value.is_empty() && !value.contains(|c: char| c.is_whitespace() || c == '\'' || c == '\\') {
        return value.to_string();
    }
    let escaped = value.replace('\\', "\\\\").replace('\'', "\\'");
    format!("'{escaped}'")
}

fn percent_decode(text: &str) -> Result<String, DatabaseUrlError> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text
                .get(i + 1..i + 3)
                .ok_or(DatabaseUrlError::BadEncoding)?;
            let byte = u8::from_str_radix(hex, 16).map_err(|_| DatabaseUrlError::BadEncoding)?;
            decoded.push(byte);
            i += 3;
        } else {
            decoded.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(decoded).map_err(|_| DatabaseUrlError::BadEncoding)
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
#[path = "database_url_tests.rs"]
mod tests;
