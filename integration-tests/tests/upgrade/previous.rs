//! The previous release's binaries (built by `scripts/build-previous-release.sh` from the
//! commit in `scripts/previous-release.txt`) and the OS processes the test runs of them.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Output, Stdio};
use std::time::Duration;

use tokio::process::{Child, Command};

const BUILD_SCRIPT: &str = "scripts/build-previous-release.sh";

/// Where the previous release's `xdb-server` and `xdb-sys-schema` are.
pub struct PreviousRelease {
    pub commit: String,
    bin: PathBuf,
}

impl PreviousRelease {
    /// Finds the cached binaries; panics naming the build script when they are missing.
    pub fn locate() -> Self {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let recorded = std::fs::read_to_string(repo.join("scripts/previous-release.txt"))
            .expect("read scripts/previous-release.txt");
        let commit = recorded
            .lines()
            .map(str::trim)
            .find(|line| !line.is_empty() && !line.starts_with('#'))
            .expect("scripts/previous-release.txt names a commit")
            .to_string();
        let root = std::env::var_os("XDB_PREVIOUS_RELEASE_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                PathBuf::from(std::env::var_os("HOME").expect("HOME is set"))
                    .join(".cache/xdb-previous-release")
            });
        let bin = root.join(&commit).join("bin");
        for name in ["xdb-server", "xdb-sys-schema"] {
            assert!(
                bin.join(name).is_file(),
                "the previous release's {name} is missing at {}: run {BUILD_SCRIPT} first \
                 (it builds commit {commit} once and caches the binaries)",
                bin.display()
            );
        }
        Self { commit, bin }
    }

    /// Runs the previous release's `xdb-sys-schema install`.
    pub async fn install_schema(&self, database_url: &str) -> Output {
        Command::new(self.bin.join("xdb-sys-schema"))
            .args(["install", "--database-url", database_url])
            .output()
            .await
            .expect("run the previous release's xdb-sys-schema")
    }

    /// Starts the previous release's `xdb-server` (API and async service in one process)
    /// with its API on `listen`.
    pub fn spawn_server(&self, database_url: &str, listen: &str, stderr: Stdio) -> OldServer {
        let child = Command::new(self.bin.join("xdb-server"))
            .args(["--database-url", database_url, "--listen", listen])
            .args(["--log-level", "warn"])
            .args(["--set", "async.lease_seconds=3"])
            .args(["--set", "async.poll_interval_ms=100"])
            .args(["--set", "async.default_api_timeout_seconds=5"])
            .args(["--set", "async.shutdown_grace_seconds=10"])
            .stdout(Stdio::null())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the previous release's xdb-server");
        OldServer {
            child,
            api_url: format!("http://{listen}"),
        }
    }
}

/// A running `xdb-server` of the previous release; killed when dropped.
pub struct OldServer {
    child: Child,
    pub api_url: String,
}

impl OldServer {
    /// Waits until its API answers `GET /health/ready`, or panics after `limit` (or
    /// when the process exits first).
    pub async fn wait_ready(&mut self, limit: Duration) {
        let http = reqwest::Client::new();
        let url = format!("{}/health/ready", self.api_url);
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("poll xdb-server") {
                panic!("the previous release's xdb-server exited while starting: {status}");
            }
            if let Ok(response) = http.get(&url).send().await {
                if response.status().is_success() {
                    return;
                }
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the previous release's xdb-server was not ready within {limit:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Sends SIGTERM, as a rolling update does to a pod.
    pub fn terminate(&self) {
        let pid = self.child.id().expect("xdb-server is running");
        let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).expect("a pid fits i32"));
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    }

    /// Waits up to `limit` for the process to exit.
    pub async fn wait_exit(mut self, limit: Duration) -> ExitStatus {
        match tokio::time::timeout(limit, self.child.wait()).await {
            Ok(status) => status.expect("wait for xdb-server"),
            Err(_) => panic!("the previous release's xdb-server did not exit within {limit:?}"),
        }
    }

    /// Waits up to `limit` for the process to exit; its status and what it wrote on
    /// stderr (spawned with `Stdio::piped()`).
    pub async fn output(self, limit: Duration) -> Output {
        match tokio::time::timeout(limit, self.child.wait_with_output()).await {
            Ok(output) => output.expect("wait for xdb-server"),
            Err(_) => panic!("the previous release's xdb-server did not exit within {limit:?}"),
        }
    }
}
