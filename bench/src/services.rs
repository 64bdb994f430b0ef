//! The XDB services as child processes: found next to the bench executable, started on
//! free ports, and always stopped again (a guard kills them on error and panic too).

use std::fs::File;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context as _;

pub const API_SERVICE: &str = "xdb-api-service";
pub const ASYNC_SERVICE: &str = "xdb-async-service";
/// The build the bench needs before it can run.
pub const BUILD_COMMAND: &str =
    "cargo build --release -p xdb-api-service -p xdb-async-service -p xdb-bench";

/// How long a service gets to exit after SIGINT before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// The path of service binary `name` beside the running executable; an error naming
/// [`BUILD_COMMAND`] when it is missing.
pub fn locate_binary(name: &str) -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find the bench executable")?;
    let dir = exe
        .parent()
        .context("the bench executable has no parent directory")?;
    let path = dir.join(name);
    anyhow::ensure!(
        path.is_file(),
        "{} not found: build the services first with `{BUILD_COMMAND}`",
        path.display()
    );
    Ok(path)
}

/// A loopback address with a port that was free a moment ago.
pub fn free_local_addr() -> anyhow::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").context("cannot bind a free port")?;
    Ok(listener.local_addr()?)
}

/// A running service; stopped (SIGINT, then SIGKILL after a grace period) when dropped.
pub struct ServiceProcess {
    name: &'static str,
    child: Child,
    log: PathBuf,
}

impl ServiceProcess {
    /// Starts `binary` with `args`, its output appended to `<log_dir>/<name>.log`. The
    /// services log at `XDB_BENCH_SERVICE_LOG` (default `warn`) so logging costs little.
    pub fn spawn(
        name: &'static str,
        binary: &Path,
        args: &[String],
        log_dir: &Path,
    ) -> anyhow::Result<ServiceProcess> {
        Self::spawn_logged(name, binary, args, log_dir.join(format!("{name}.log")))
    }

    /// [`ServiceProcess::spawn`] with the output appended to `log`: for a second
    /// instance of one service.
    pub fn spawn_logged(
        name: &'static str,
        binary: &Path,
        args: &[String],
        log: PathBuf,
    ) -> anyhow::Result<ServiceProcess> {
        let out = File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let level = std::env::var("XDB_BENCH_SERVICE_LOG").unwrap_or_else(|_| "warn".into());
        let child = Command::new(binary)
            .args(args)
            .env("RUST_LOG", level)
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        Ok(ServiceProcess { name, child, log })
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Fails, with the end of the service's log, if it has exited.
    pub fn ensure_running(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait()? {
            anyhow::bail!(
                "{} exited ({status}); its log ({}) ends with:\n{}",
                self.name,
                self.log.display(),
                self.log_tail()
            );
        }
        Ok(())
    }

    /// The last lines of the service's log.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Asks the service to shut down (SIGINT) and waits; kills it after the grace period.
    pub fn stop(&mut self) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: kill(2) only sends a signal; pid is our own, not yet reaped, child.
            unsafe {
                libc::kill(pid, libc::SIGINT);
            }
        }
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServiceProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Waits until the API service at `base_url` answers `/health/ready` with 200.
pub async fn wait_until_ready(
    service: &mut ServiceProcess,
    base_url: &str,
    timeout: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    let url = format!("{base_url}/health/ready");
    let http = reqwest::Client::new();
    loop {
        service.ensure_running()?;
        let answer = http.get(&url).timeout(Duration::from_secs(2)).send().await;
        if answer.is_ok_and(|r| r.status().is_success()) {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{} did not become ready within {timeout:?}; its log ends with:\n{}",
            service.name(),
            service.log_tail()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
