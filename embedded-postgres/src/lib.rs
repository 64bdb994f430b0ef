//! A PostgreSQL server for development (`xdb dev`), with no root, package manager or
//! installed server needed.
//!
//! The binaries are Maven Central's embedded PostgreSQL jars (zonky.io's
//! `embedded-postgres-binaries-<os>-<arch>`), fetched once, checked against a pinned
//! SHA-256 and unpacked into a cache directory. A system PostgreSQL is never looked
//! for or used: the server is always the cached installation's `bin/postgres`.
//! Started as root, the server runs as an unprivileged user (see [`ServerUser`]).
//!
//! Platforms: Linux x86-64 and arm64 (glibc; zonky's Alpine builds are not used) and
//! macOS x86-64 and arm64, one pinned jar each; tested on Linux x86-64. On macOS there
//! is no parent-death signal, so a server whose `xdb dev` was SIGKILLed keeps running
//! and the next start reports its lock file (`postgres/postmaster.pid` names its pid).
//!
//! Why not a crate that does this: `postgresql_embedded` (theseus-rs, 0.22, with its
//! `zonky` feature) fetches the same jars, so download size and start times are the
//! same (14.6 MB; initdb and start are PostgreSQL's own). But its tree has 198 crates,
//! among them sqlx 0.9 and a second reqwest (0.13); it runs `initdb` and `pg_ctl` as the
//! calling user, so it fails as root, and `pg_ctl` detaches the server, which then
//! outlives a killed parent. This crate adds 18 crates to the workspace
//! (`zip`, `liblzma`, `tar`, `dirs` and theirs, mostly platform shims) and a few
//! hundred lines.

mod error;
mod fetch;
pub mod platform;
mod server;
mod server_user;
mod unpack;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use error::Error;
pub use fetch::cached_jar;
pub use platform::{Platform, DEFAULT_REPOSITORY, POSTGRES_VERSION};
pub use server::SUPERUSER;
pub use server_user::{ServerUser, USER_ENV};

/// Overrides the cache of downloaded and unpacked binaries.
pub const CACHE_DIR_ENV: &str = "XDB_DEV_CACHE_DIR";
/// Overrides the Maven repository the binaries come from.
pub const REPOSITORY_ENV: &str = "XDB_DEV_MAVEN_REPOSITORY";

/// Where the binaries come from and where the cluster lives.
#[derive(Debug, Clone)]
pub struct Options {
    /// Downloaded jars and unpacked installations.
    pub cache_dir: PathBuf,
    /// The cluster's directory; `None` for a throwaway one removed on stop.
    pub data_dir: Option<PathBuf>,
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// Maven repository root URL.
    pub repository: String,
}

impl Options {
    /// The defaults: the cache and repository from the environment, or the user's cache
    /// dir and Maven Central; the data dir as [`default_data_dir`]; a free port.
    pub fn from_env(data_dir: Option<PathBuf>) -> Options {
        Options {
            cache_dir: std::env::var_os(CACHE_DIR_ENV)
                .map(PathBuf::from)
                .unwrap_or_else(default_cache_dir),
            data_dir,
            port: 0,
            repository: std::env::var(REPOSITORY_ENV)
                .unwrap_or_else(|_| DEFAULT_REPOSITORY.to_string()),
        }
    }
}

/// The user's cache dir (`~/.cache/xdb`, `~/Library/Caches/xdb`); `/var/cache/xdb` for
/// root, whose home the server's unprivileged user cannot reach.
pub fn default_cache_dir() -> PathBuf {
    if is_root() {
        return PathBuf::from("/var/cache/xdb");
    }
    dirs::cache_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("xdb")
}

/// The user's data dir (`~/.local/share/xdb/dev`, `~/Library/Application
/// Support/xdb/dev`); `/var/lib/xdb/dev` for root.
pub fn default_data_dir() -> PathBuf {
    if is_root() {
        return PathBuf::from("/var/lib/xdb/dev");
    }
    dirs::data_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("xdb")
        .join("dev")
}

/// A name for a temporary file or directory beside its final place, unique to this
/// call: two starts in one process (tests, or two threads) never share one.
pub(crate) fn staging_name(what: &str) -> String {
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!(".{what}-{}-{call}", std::process::id())
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// A running embedded server.
#[derive(Debug)]
pub struct EmbeddedPostgres {
    server: server::RunningServer,
    data_dir: PathBuf,
    started_in: Duration,
    // Last, so the server is told to stop before its directory goes.
    ephemeral: Option<tempfile::TempDir>,
}

/// Fetches (once) and unpacks (once) the binaries, creates the cluster on first use and
/// starts the server.
pub async fn start(options: &Options) -> Result<EmbeddedPostgres, Error> {
    let began = Instant::now();
    let platform = Platform::current().ok_or_else(|| Error::UnsupportedPlatform {
        os: std::env::consts::OS.into(),
        arch: std::env::consts::ARCH.into(),
    })?;
    let user = ServerUser::for_this_process()?;
    let jar = fetch::cached_jar(&platform, &options.cache_dir, &options.repository).await?;
    let installation = {
        let (cache_dir, jar) = (options.cache_dir.clone(), jar.clone());
        tokio::task::spawn_blocking(move || unpack::installation(&platform, &cache_dir, &jar))
            .await
            .expect("unpacking does not panic")?
    };
    let (data_dir, ephemeral) = match &options.data_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(Error::io("cannot create", dir))?;
            (dir.clone(), None)
        }
        None => {
            let temp = tempfile::Builder::new()
                .prefix("xdb-dev-")
                .permissions(std::fs::Permissions::from_mode(0o755))
                .tempdir()
                .map_err(Error::io("cannot create", std::env::temp_dir()))?;
            (temp.path().to_path_buf(), Some(temp))
        }
    };
    if let Some(user) = &user {
        user.check_reachable(&installation.join("bin"), CACHE_DIR_ENV)?;
        user.check_reachable(&data_dir.join("postgres"), "--data-dir")?;
    }
    let port = match options.port {
        0 => free_port(&data_dir)?,
        port => port,
    };
    let server = server::start(&installation, &data_dir, port, user.as_ref()).await?;
    Ok(EmbeddedPostgres {
        server,
        data_dir,
        started_in: began.elapsed(),
        ephemeral,
    })
}

fn free_port(near: &Path) -> Result<u16, Error> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(Error::io("cannot pick a port for", near))?;
    Ok(listener
        .local_addr()
        .map_err(Error::io("cannot pick a port for", near))?
        .port())
}

impl EmbeddedPostgres {
    /// The URL of `database` as the superuser, over TCP on 127.0.0.1.
    pub fn url(&self, database: &str) -> String {
        self.server.url(database)
    }

    /// The port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.server.port()
    }

    /// The data directory (a temporary one when ephemeral).
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Whether the data directory goes away on stop.
    pub fn is_ephemeral(&self) -> bool {
        self.ephemeral.is_some()
    }

    /// The server's log file.
    pub fn log_path(&self) -> &Path {
        self.server.log_path()
    }

    /// From the call to [`start`] until the server accepted a connection.
    pub fn started_in(&self) -> Duration {
        self.started_in
    }

    /// Creates `database` unless it exists. Its name must be a lower-case SQL identifier.
    pub async fn ensure_database(&self, database: &str) -> Result<(), Error> {
        let valid = database.len() <= 63
            && database.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
            && database
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !valid {
            return Err(Error::Config(format!(
                "`{database}` is not a database name (lower-case letters, digits, _)"
            )));
        }
        let failed = |e: tokio_postgres::Error| Error::Server {
            what: format!("creating database {database}"),
            reason: e.to_string(),
            log: String::new(),
        };
        let (client, connection) =
            tokio_postgres::connect(&self.url("postgres"), tokio_postgres::NoTls)
                .await
                .map_err(failed)?;
        let connection = tokio::spawn(connection);
        let exists = client
            .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&database])
            .await
            .map_err(failed)?
            .is_some();
        if !exists {
            // The name was checked above: an identifier of [a-z0-9_] only.
            client
                .batch_execute(&format!("CREATE DATABASE \"{database}\""))
                .await
                .map_err(failed)?;
        }
        drop(client);
        let _ = connection.await;
        Ok(())
    }

    /// Stops the server (fast shutdown) and removes an ephemeral data directory.
    /// Blocks until the server has exited.
    pub fn stop(self) -> Result<(), Error> {
        let stopped = self.server.stop();
        drop(self.ephemeral);
        stopped
    }
}
