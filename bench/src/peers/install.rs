//! Where scripts/ensure-peers.sh installs the peers, and calling it.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context as _;

use super::Peer;

/// The installer, run from the repository's root (where the bench is documented to run).
pub const ENSURE_SCRIPT: &str = "scripts/ensure-peers.sh";

/// `$XDB_PEERS_HOME`, or `$HOME/.cache/xdb-peers`: everything the installer puts down.
pub fn home() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDB_PEERS_HOME") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
    Path::new(&home).join(".cache/xdb-peers")
}

/// Restate's server binary (the npm package's platform binary, not its Node launcher, so
/// that no extra Node process is measured as Restate's).
pub fn restate_server() -> PathBuf {
    home().join("restate/node_modules/@restatedev/restate-server-linux-x64/bin/restate-server")
}

/// The compiled Restate service endpoint.
pub fn restate_endpoint() -> PathBuf {
    home().join("restate/dist/service.js")
}

/// The Python and app of DBOS or Temporal.
pub fn python_app(peer: Peer) -> (PathBuf, PathBuf) {
    let dir = home().join(peer.slug());
    (dir.join("venv/bin/python"), dir.join("app.py"))
}

/// Temporal's CLI, whose `server start-dev` is the dev server.
pub fn temporal_cli() -> PathBuf {
    home().join("bin/temporal")
}

/// Files `peer` needs.
pub fn required(peer: Peer) -> Vec<PathBuf> {
    match peer {
        Peer::Restate => vec![restate_server(), restate_endpoint()],
        Peer::Dbos => {
            let (python, app) = python_app(peer);
            vec![python, app]
        }
        Peer::Temporal => {
            let (python, app) = python_app(peer);
            vec![temporal_cli(), python, app]
        }
    }
}

/// Runs [`ENSURE_SCRIPT`] for `peers` (it installs only what is missing or changed),
/// then checks that every file they need is there.
pub fn ensure(peers: &[Peer]) -> anyhow::Result<()> {
    let script = Path::new(ENSURE_SCRIPT);
    anyhow::ensure!(
        script.is_file(),
        "{ENSURE_SCRIPT} not found: run the bench from the repository's root"
    );
    let names: Vec<&str> = peers.iter().map(|p| p.slug()).collect();
    eprintln!("xdb-bench: {ENSURE_SCRIPT} {}", names.join(" "));
    let status = Command::new("bash")
        .arg(script)
        .args(&names)
        .status()
        .with_context(|| format!("running {ENSURE_SCRIPT}"))?;
    anyhow::ensure!(status.success(), "{ENSURE_SCRIPT} failed ({status})");
    for peer in peers {
        for file in required(*peer) {
            anyhow::ensure!(
                file.exists(),
                "{} is missing after {ENSURE_SCRIPT}",
                file.display()
            );
        }
    }
    Ok(())
}
