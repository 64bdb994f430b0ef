//! TLS peers of a test's own, for the TLS tests (`tests/suite/tls.rs`):
//!
//! - [`TestCa`]: a CA made for the test (rcgen) and the certificates it signs, as PEM
//!   files in a directory of the test's own;
//! - [`TlsPostgres`], [`TlsMariaDb`]: a PostgreSQL and a MariaDB server started on free
//!   ports and data directories of their own with that CA's certificate, accepting
//!   TLS connections only (`hostssl` / `require_secure_transport`); never the shared
//!   servers on 5432/3306;
//! - [`serve_https`]: a worker's router over HTTPS, optionally asking for a client
//!   certificate (mutual TLS).
//!
//! Dropped = stopped and removed. The servers need root (the suite's machines run as
//! root) and Debian's PostgreSQL 15 and MariaDB packages (`scripts/ensure-postgres.sh`,
//! `scripts/ensure-mariadb.sh`); without them a test fails naming the script.

mod ca;
mod https;
mod mariadb;
mod postgres;

use std::path::Path;
use std::process::Command;

pub use ca::{Issued, TestCa};
pub use https::{serve_https, HttpsServer};
pub use mariadb::TlsMariaDb;
pub use postgres::{TlsPostgres, CERT_USER};

/// Runs `program` with `args` (as `user` when given), panicking with its output when it
/// fails: a test cannot go on without its server.
fn run(user: Option<&str>, program: &str, args: &[&str]) -> String {
    let mut command = match user {
        Some(user) => {
            let mut command = Command::new("runuser");
            command.args(["-u", user, "--", program]);
            command
        }
        None => Command::new(program),
    };
    let output = command
        .args(args)
        .output()
        .unwrap_or_else(|error| panic!("cannot run {program}: {error}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "{program} {args:?} failed ({}):\n{text}",
        output.status
    );
    text
}

/// Gives `path` (and what is in it) to the OS user `owner`.
fn chown(owner: &str, path: &Path) {
    run(
        None,
        "chown",
        &[
            "-R",
            &format!("{owner}:{owner}"),
            &path.display().to_string(),
        ],
    );
}

/// A fresh directory under the system's temporary directory, readable by the servers'
/// OS users.
fn fresh_dir(what: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("xdb-{what}-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("create a test directory");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))
        .expect("open the test directory to the servers");
    dir
}
