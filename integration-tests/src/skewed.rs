//! The real service binaries (`xdb-api-service`, `xdb-async-service`) run as OS
//! processes whose wall clock is shifted by Debian's `faketime` (its `libfaketime`,
//! preloaded as the `faketime` command does, so that the service is the child that
//! `kill_on_drop` kills), for the clock-skew tests. Monotonic time stays the machine's
//! (`FAKETIME_DONT_FAKE_MONOTONIC=1`), so tokio's sleeps and timeouts are not disturbed:
//! only what reads the wall clock is.
//!
//! The same spawn runs them unskewed too (`SkewedService::spawn_unskewed`), for tests
//! that signal a real service process.
//!
//! The binaries are built by cargo on first use (after `cargo test --workspace`, little
//! more than a link), into the target directory this test binary runs from.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::OnceCell;

/// How to install `faketime` where it is missing (also done by scripts/ensure-postgres.sh).
pub const FAKETIME_INSTALL: &str = "apt-get install -y faketime";

/// Where Debian's `libfaketime` is installed.
const LIBFAKETIME: [&str; 2] = [
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
];

/// The path of `libfaketime`; panics, naming the install command, when it is missing.
pub fn require_faketime() -> &'static str {
    LIBFAKETIME
        .into_iter()
        .find(|path| Path::new(path).exists())
        .unwrap_or_else(|| {
            panic!(
                "faketime is not installed; the clock-skew tests need it: run \
                 `sudo {FAKETIME_INSTALL}` (or scripts/ensure-postgres.sh as root)"
            )
        })
}

/// Paths of the `xdb-api-service` and `xdb-async-service` binaries, built once per test
/// binary with the profile this one was built with.
pub async fn service_binaries() -> &'static (PathBuf, PathBuf) {
    static BINARIES: OnceCell<(PathBuf, PathBuf)> = OnceCell::const_new();
    BINARIES
        .get_or_init(|| async {
            tokio::task::spawn_blocking(build_service_binaries)
                .await
                .expect("the build does not panic")
        })
        .await
}

fn build_service_binaries() -> (PathBuf, PathBuf) {
    // <target>/<profile>/deps/<test binary>
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary runs from <target>/<profile>/deps")
        .to_path_buf();
    let target_dir = profile_dir.parent().expect("a target directory");
    let profile = match profile_dir.file_name().and_then(|name| name.to_str()) {
        Some("debug") | None => "dev".to_string(),
        Some(name) => name.to_string(),
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut command = std::process::Command::new(&cargo);
    // Cargo gives this test process its package's variables (`CARGO_MANIFEST_DIR`,
    // `CARGO_PKG_NAME`, ...). Build scripts such as ring's rerun when one of those they
    // watch changes, and rebuild in place what every later build then rebuilds again.
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(set_by_cargo_for_this_test) {
            command.env_remove(name);
        }
    }
    let status = command
        .current_dir(&workspace)
        .args(["build", "--quiet", "--profile", &profile])
        // With the workspace's tests, features resolve as in `cargo test --workspace`
        // (dev-dependencies' features unified), so what that run built is reused and
        // only the binaries are linked; `-p` alone resolved tokio's features anew and
        // rebuilt some 66 crates, minutes in which the suite's threads waited here.
        .args(["--workspace", "--tests"])
        .args(["--bin", "xdb-api-service", "--bin", "xdb-async-service"])
        .env("CARGO_TARGET_DIR", target_dir)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {cargo}: {e}"));
    assert!(
        status.success(),
        "cargo build --bin xdb-api-service --bin xdb-async-service failed"
    );
    let binary = |name: &str| {
        let path = profile_dir.join(name);
        assert!(path.exists(), "{} was not built", path.display());
        path
    };
    (binary("xdb-api-service"), binary("xdb-async-service"))
}

/// Whether cargo set the variable `name` for this test binary's run (as opposed to the
/// variables the developer gave cargo, such as `CARGO_TARGET_DIR` or `CARGO_HOME`).
fn set_by_cargo_for_this_test(name: &str) -> bool {
    const PREFIXES: [&str; 3] = ["CARGO_PKG_", "CARGO_BIN_EXE_", "CARGO_MANIFEST_"];
    const NAMES: [&str; 6] = [
        "CARGO_CRATE_NAME",
        "CARGO_BIN_NAME",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_TMPDIR",
        "CARGO_RUSTC_CURRENT_DIR",
        "OUT_DIR",
    ];
    PREFIXES.iter().any(|prefix| name.starts_with(prefix)) || NAMES.contains(&name)
}

/// A service binary running under `faketime`; killed when dropped.
pub struct SkewedService {
    child: tokio::process::Child,
    /// Base URL of its HTTP listener (the API, or the async service's health and metrics).
    pub url: String,
    /// Its wall clock when it logged that it started, and the test's at that moment.
    pub started_log_time: DateTime<Utc>,
    pub started_seen_at: DateTime<Utc>,
    /// Every log line so far (JSON), for assertions on what it logged.
    lines: Arc<Mutex<Vec<String>>>,
}

impl SkewedService {
    /// Runs `binary` with `args` (plus `--listen 127.0.0.1:0` and JSON logs at info)
    /// with its clock shifted by `skew` (`faketime -f` syntax: `+5s`, `-5s`), and waits until it logs
    /// `started_message` with its listen address.
    pub async fn spawn(
        binary: &Path,
        skew: &str,
        args: &[String],
        started_message: &str,
    ) -> SkewedService {
        Self::spawn_with(binary, Some(skew), args, started_message).await
    }

    /// Runs `binary` as [`SkewedService::spawn`] does, with the machine's clock (no
    /// `faketime`): a real service process, for tests that signal it.
    pub async fn spawn_unskewed(
        binary: &Path,
        args: &[String],
        started_message: &str,
    ) -> SkewedService {
        Self::spawn_with(binary, None, args, started_message).await
    }

    async fn spawn_with(
        binary: &Path,
        skew: Option<&str>,
        args: &[String],
        started_message: &str,
    ) -> SkewedService {
        let mut command = tokio::process::Command::new(binary);
        if let Some(skew) = skew {
            command
                .env("LD_PRELOAD", require_faketime())
                .env("FAKETIME", skew)
                .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
        }
        let mut child = command
            .args(args)
            .args(["--listen", "127.0.0.1:0", "--log-format", "json"])
            .args(["--log-level", "info"])
            .env_remove("RUST_LOG")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn {}: {e}", binary.display()));
        let stdout = child.stdout.take().expect("piped stdout");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (started_tx, started_rx) = tokio::sync::oneshot::channel();
        let recorded = lines.clone();
        let wanted = started_message.to_string();
        tokio::spawn(async move {
            let mut started = Some(started_tx);
            let mut reader = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                let seen_at = Utc::now();
                if let Some(found) = started.take_if(|_| line.contains(&wanted)) {
                    let _ = found.send((line.clone(), seen_at));
                }
                recorded.lock().expect("never poisoned").push(line);
            }
        });
        let (line, started_seen_at) = tokio::time::timeout(Duration::from_secs(60), started_rx)
            .await
            .unwrap_or_else(|_| panic!("{} did not log {started_message:?}", binary.display()))
            .unwrap_or_else(|_| {
                panic!(
                    "{} exited before logging {started_message:?}",
                    binary.display()
                )
            });
        let entry: serde_json::Value = serde_json::from_str(&line).expect("a JSON log line");
        let address = entry["fields"]["address"]
            .as_str()
            .unwrap_or_else(|| panic!("no address in {line}"));
        let started_log_time = entry["timestamp"]
            .as_str()
            .and_then(|text| DateTime::parse_from_rfc3339(text).ok())
            .unwrap_or_else(|| panic!("no timestamp in {line}"))
            .with_timezone(&Utc);
        SkewedService {
            child,
            url: format!("http://{address}"),
            started_log_time,
            started_seen_at,
            lines,
        }
    }

    /// How far ahead of the test's clock this process's clock ran when it started, by
    /// its log's timestamp (a little less than its skew: the line took a moment to read).
    pub fn logged_skew(&self) -> chrono::TimeDelta {
        self.started_log_time - self.started_seen_at
    }

    /// The log lines that contain `text`.
    pub fn log_lines_with(&self, text: &str) -> Vec<String> {
        let lines = self.lines.lock().expect("never poisoned");
        lines.iter().filter(|l| l.contains(text)).cloned().collect()
    }

    /// The process id (for signals).
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// Sends SIGTERM, as an orchestrator does to stop a pod.
    pub fn terminate(&self) {
        let pid = self.child.id().expect("the service is running");
        let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).expect("a pid fits i32"));
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM)
            .unwrap_or_else(|e| panic!("SIGTERM to the service: {e}"));
    }

    /// Waits up to `limit` for the process to exit; its exit status.
    pub async fn wait(&mut self, limit: Duration) -> std::process::ExitStatus {
        match tokio::time::timeout(limit, self.child.wait()).await {
            Ok(status) => status.expect("wait for the service"),
            Err(_) => panic!("the service did not exit within {limit:?}"),
        }
    }
}
