//! One `xdb dev` process: started with its own cache, repository and free ports, its
//! banner read, the commands it prints run through `sh` with `xdb` on PATH, and stopped
//! with SIGINT as Ctrl-C would.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use xdb_cli::dev::banner::READY_LINE;

const XDB_BIN: &str = env!("CARGO_BIN_EXE_xdb-test-cli");
/// Cold starts download 15 MB, unpack 58 MB and run initdb on a busy 2-core machine.
const READY_TIMEOUT: Duration = Duration::from_secs(180);
const STOP_TIMEOUT: Duration = Duration::from_secs(60);
/// The banner prints three commands to try.
pub const SAMPLE_COMMANDS: usize = 3;

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// PostgreSQL's programs (and `xdb`, the CLI under test) first on PATH: each of the
/// former records that it ran.
pub struct Decoys {
    dir: tempfile::TempDir,
}

impl Decoys {
    pub fn new() -> Decoys {
        let dir = tempfile::tempdir().unwrap();
        for program in ["postgres", "initdb", "pg_ctl", "psql", "pg_config"] {
            let path = dir.path().join(program);
            let marker = dir.path().join("ran");
            std::fs::write(
                &path,
                format!(
                    "#!/bin/sh\necho {program} >> '{}'\nexit 1\n",
                    marker.display()
                ),
            )
            .unwrap();
            make_executable(&path);
        }
        std::os::unix::fs::symlink(XDB_BIN, dir.path().join("xdb")).unwrap();
        Decoys { dir }
    }

    fn path_var(&self) -> String {
        format!(
            "{}:{}",
            self.dir.path().display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }

    pub fn assert_never_run(&self) {
        let ran = std::fs::read_to_string(self.dir.path().join("ran")).unwrap_or_default();
        assert!(ran.is_empty(), "PostgreSQL programs from PATH ran: {ran}");
    }
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn dev_command(repository: &str, cache: &Path, decoys: &Decoys) -> Command {
    let mut command = Command::new(XDB_BIN);
    command
        .arg("dev")
        .env("PATH", decoys.path_var())
        .env("XDB_DEV_CACHE_DIR", cache)
        .env("XDB_DEV_MAVEN_REPOSITORY", repository)
        .env_remove("XDB_DATABASE_URL")
        .env_remove("XDB_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Runs `xdb dev --ephemeral` until it exits by itself; its exit code and output.
pub async fn dev_until_exit(repository: &str, cache: &Path, decoys: &Decoys) -> (i32, String) {
    let mut command = dev_command(repository, cache, decoys);
    command.args([
        "--ephemeral",
        "--listen",
        &format!("127.0.0.1:{}", free_port()),
    ]);
    let output = tokio::time::timeout(READY_TIMEOUT, command.output())
        .await
        .expect("xdb dev exits when it cannot get PostgreSQL")
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code().unwrap_or(-1), text)
}

pub struct DevRun {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    api: String,
    path_var: String,
}

impl DevRun {
    /// Starts `xdb dev` on free ports and waits for its banner.
    pub async fn start(
        repository: &str,
        cache: &Path,
        data_dir: Option<&Path>,
        decoys: &Decoys,
    ) -> DevRun {
        let api = format!("127.0.0.1:{}", free_port());
        let mut command = dev_command(repository, cache, decoys);
        command
            .args(["--listen", &api])
            .args(["--async-listen", &format!("127.0.0.1:{}", free_port())])
            .args(["--worker-listen", &format!("127.0.0.1:{}", free_port())]);
        match data_dir {
            Some(dir) => command.arg("--data-dir").arg(dir),
            None => command.arg("--ephemeral"),
        };
        let mut child = command.spawn().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn tokio::io::AsyncRead + Unpin + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let lines = lines.clone();
            tokio::spawn(async move {
                let mut reader = BufReader::new(stream).lines();
                while let Ok(Some(line)) = reader.next_line().await {
                    lines.lock().unwrap().push(line);
                }
            });
        }
        let mut run = DevRun {
            child,
            lines,
            api: format!("http://{api}"),
            path_var: decoys.path_var(),
        };
        let deadline = Instant::now() + READY_TIMEOUT;
        while !run.output().lines().any(|l| l == READY_LINE) {
            if let Ok(Some(status)) = run.child.try_wait() {
                panic!(
                    "xdb dev exited ({status}) before it was ready:\n{}",
                    run.output()
                );
            }
            assert!(
                Instant::now() < deadline,
                "xdb dev not ready within {READY_TIMEOUT:?}:\n{}",
                run.output()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        run
    }

    fn output(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }

    pub fn banner(&self) -> String {
        let output = self.output();
        let start = output.find("xdb dev is ready").expect("the banner");
        let end = output.find(READY_LINE).expect("the ready line");
        output[start..end].to_string()
    }

    pub fn api_url(&self) -> &str {
        &self.api
    }

    /// The banner's commands to try (indented lines starting with `xdb `).
    pub fn printed_commands(&self) -> Vec<String> {
        self.banner()
            .lines()
            .filter_map(|line| line.strip_prefix("  "))
            .filter(|line| line.starts_with("xdb "))
            .map(str::to_string)
            .collect()
    }

    /// The banner's start time and PostgreSQL's own, as it prints them.
    pub fn start_times(&self) -> (Duration, Duration) {
        let banner = self.banner();
        let seconds_after = |prefix: &str| -> Duration {
            let rest = &banner[banner
                .find(prefix)
                .unwrap_or_else(|| panic!("{prefix}: {banner}"))
                + prefix.len()..];
            let number: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            Duration::from_secs_f64(number.parse().unwrap())
        };
        (seconds_after("ready in "), seconds_after(" started in "))
    }

    /// Runs a printed command through `sh`, as pasted into a terminal; its stdout.
    pub async fn run_printed(&self, command: &str) -> String {
        let output = Command::new("sh")
            .args(["-c", command])
            .env("PATH", &self.path_var)
            .env("XDB_URL", &self.api)
            .env_remove("XDB_TOKEN")
            .output()
            .await
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "`{command}` failed ({}):\n{stdout}{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        stdout
    }

    /// Runs `xdb ARGS` against this instance; its stdout.
    pub async fn xdb(&self, args: &[&str]) -> String {
        let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
        self.run_printed(&format!("xdb {}", quoted.join(" "))).await
    }

    /// Ctrl-C: everything stops cleanly and xdb dev exits 0.
    pub async fn stop(mut self) {
        let pid = Pid::from_raw(self.child.id().expect("running") as i32);
        kill(pid, Signal::SIGINT).unwrap();
        let status = tokio::time::timeout(STOP_TIMEOUT, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("xdb dev still running after Ctrl-C:\n{}", self.output()))
            .unwrap();
        // The readers see the last lines once the pipes close.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.output().contains("xdb dev: stopped") && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            status.success(),
            "xdb dev after Ctrl-C: {status}\n{}",
            self.output()
        );
        assert!(
            self.output().contains("xdb dev: stopped"),
            "{}",
            self.output()
        );
        // The database stops after every session of the services has ended.
        assert!(
            !self.output().contains("lost its connection"),
            "{}",
            self.output()
        );
        let port = self.api.rsplit(':').next().unwrap().to_string();
        assert!(
            std::net::TcpStream::connect(format!("127.0.0.1:{port}")).is_err(),
            "the API still listens after Ctrl-C"
        );
    }
}
