//! What can go wrong while fetching, unpacking or running the embedded server.

use std::path::PathBuf;

/// An embedded-PostgreSQL failure, phrased for the person who ran `xdb dev`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "no embedded PostgreSQL binaries are published for {os}/{arch}; \
         use an existing database with --database-url"
    )]
    UnsupportedPlatform { os: String, arch: String },
    #[error(
        "cannot download the PostgreSQL binaries from {url}: {reason}. They are fetched \
         once and then cached in {cache}; set XDB_DEV_MAVEN_REPOSITORY to a mirror of \
         Maven Central, or use an existing database with --database-url"
    )]
    Download {
        url: String,
        cache: PathBuf,
        reason: String,
    },
    #[error(
        "the download from {url} is not the published archive (SHA-256 {actual}, \
         expected {expected}); nothing was cached"
    )]
    Checksum {
        url: String,
        expected: String,
        actual: String,
    },
    #[error("cannot unpack {archive}: {reason}")]
    Unpack { archive: PathBuf, reason: String },
    /// A setting or this machine's set-up does not fit; the text names what to change.
    #[error("{0}")]
    Config(String),
    #[error(
        "{data_dir} holds a PostgreSQL {found} cluster; xdb dev runs PostgreSQL {expected}. \
         Use another --data-dir (or remove this one)"
    )]
    MajorVersion {
        data_dir: PathBuf,
        found: String,
        expected: String,
    },
    #[error("{what} failed: {reason}\n{log}")]
    Server {
        what: String,
        reason: String,
        log: String,
    },
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// An IO error on `path` while doing `what` (e.g. "cannot create").
    pub(crate) fn io(
        what: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { what, path, source }
    }
}
