//! Runs the PostgreSQL server of an installation on a data directory: `initdb` on first
//! use, then `postgres` as a child process on 127.0.0.1 only (no Unix socket), stopped
//! with a fast shutdown.
//!
//! The cluster lives in `<data dir>/postgres` and the server's log in
//! `<data dir>/postgres.log`. `initdb` runs into a temporary directory renamed into
//! place, so an interrupted first start leaves no half cluster. The server is its own
//! process group, so a terminal's Ctrl-C reaches only `xdb dev`, which stops the
//! services using the database before the database; on Linux the server also gets
//! SIGINT should `xdb dev` die without stopping it.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command};

use crate::error::Error;
use crate::platform::POSTGRES_MAJOR;
use crate::server_user::ServerUser;

/// The superuser `initdb` creates; trust authentication on 127.0.0.1 only.
pub const SUPERUSER: &str = "postgres";
const READY_TIMEOUT: Duration = Duration::from_secs(60);
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// A running server. Stop it with [`RunningServer::stop`]; dropping it sends the
/// server a fast shutdown without waiting.
///
/// A `std` child, not a tokio one: `xdb dev` stops the server after its runtime, so
/// every session of the services has ended by then.
#[derive(Debug)]
pub struct RunningServer {
    child: Child,
    port: u16,
    log: PathBuf,
}

/// Creates the cluster in `data_dir` if it has none, then starts the server on `port`.
pub async fn start(
    installation: &Path,
    data_dir: &Path,
    port: u16,
    user: Option<&ServerUser>,
) -> Result<RunningServer, Error> {
    let cluster = data_dir.join("postgres");
    let log = data_dir.join("postgres.log");
    if cluster.join("PG_VERSION").is_file() {
        check_major(&cluster)?;
    } else {
        init_cluster(installation, data_dir, &cluster, user).await?;
    }
    let log_file = std::fs::File::create(&log).map_err(Error::io("cannot create", &log))?;
    let mut command = server_command(installation, "postgres", user);
    command
        .arg("-D")
        .arg(&cluster)
        .args(["-p", &port.to_string()])
        .args(["-c", "listen_addresses=127.0.0.1"])
        .args(["-c", "unix_socket_directories="])
        .stdin(Stdio::null())
        .stdout(
            log_file
                .try_clone()
                .map_err(Error::io("cannot open", &log))?,
        )
        .stderr(log_file);
    let child = command.spawn().map_err(Error::io(
        "cannot run",
        installation.join("bin").join("postgres"),
    ))?;
    let mut server = RunningServer { child, port, log };
    server.wait_ready().await?;
    Ok(server)
}

impl RunningServer {
    /// The port it listens on, at 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of `database` as the superuser.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://{SUPERUSER}@127.0.0.1:{}/{database}", self.port)
    }

    /// The server's log file.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    async fn wait_ready(&mut self) -> Result<(), Error> {
        let deadline = Instant::now() + READY_TIMEOUT;
        let config = format!(
            "host=127.0.0.1 port={} user={SUPERUSER} dbname=postgres connect_timeout=2",
            self.port
        );
        loop {
            if let Ok((client, connection)) =
                tokio_postgres::connect(&config, tokio_postgres::NoTls).await
            {
                drop(connection);
                drop(client);
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(self.failure("starting PostgreSQL", format!("it exited ({status})")));
            }
            if Instant::now() > deadline {
                return Err(self.failure(
                    "starting PostgreSQL",
                    format!("not ready within {READY_TIMEOUT:?}"),
                ));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn failure(&self, what: &str, reason: String) -> Error {
        Error::Server {
            what: what.to_string(),
            reason,
            log: log_tail(&self.log),
        }
    }

    /// Fast shutdown (SIGINT): open sessions end, the server checkpoints and exits.
    /// Blocks until it has exited, so it also works once the async runtime is gone.
    pub fn stop(mut self) -> Result<(), Error> {
        self.signal(libc::SIGINT);
        let deadline = Instant::now() + STOP_TIMEOUT;
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => return Ok(()),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Ok(None) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return Err(self.failure(
                        "stopping PostgreSQL",
                        format!("still running after {STOP_TIMEOUT:?}; killed"),
                    ));
                }
                Err(e) => return Err(self.failure("stopping PostgreSQL", e.to_string())),
            }
        }
    }

    fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill has no memory preconditions; the pid is our own child's.
        unsafe { libc::kill(self.child.id() as libc::pid_t, signal) };
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.signal(libc::SIGINT);
        }
    }
}

fn check_major(cluster: &Path) -> Result<(), Error> {
    let path = cluster.join("PG_VERSION");
    let found = std::fs::read_to_string(&path).map_err(Error::io("cannot read", &path))?;
    let found = found.trim();
    if found == POSTGRES_MAJOR {
        Ok(())
    } else {
        Err(Error::MajorVersion {
            data_dir: cluster.to_path_buf(),
            found: found.to_string(),
            expected: POSTGRES_MAJOR.to_string(),
        })
    }
}

async fn init_cluster(
    installation: &Path,
    data_dir: &Path,
    cluster: &Path,
    user: Option<&ServerUser>,
) -> Result<(), Error> {
    let staging = data_dir.join(crate::staging_name("initdb"));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).map_err(Error::io("cannot create", &staging))?;
    if let Some(user) = user {
        user.take_ownership(&staging)?;
    }
    tracing::info!(cluster = %cluster.display(), "creating the PostgreSQL cluster (first start)");
    let mut initdb = server_command(installation, "initdb", user);
    initdb
        .arg("-D")
        .arg(&staging)
        .args(["-U", SUPERUSER, "-A", "trust", "-E", "UTF8", "--locale=C"])
        .stdin(Stdio::null());
    let output = tokio::process::Command::from(initdb)
        .output()
        .await
        .map_err(Error::io(
            "cannot run",
            installation.join("bin").join("initdb"),
        ))?;
    if !output.status.success() {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(Error::Server {
            what: "initdb".into(),
            reason: format!("it exited ({})", output.status),
            log: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    std::fs::rename(&staging, cluster).map_err(Error::io("cannot move into place", cluster))
}

/// A command running `program` of the installation, as `user` when given, with a
/// locale-neutral environment and, on Linux, SIGINT should this process die.
fn server_command(installation: &Path, program: &str, user: Option<&ServerUser>) -> Command {
    let mut command = Command::new(installation.join("bin").join(program));
    command
        .env_remove("PGDATA")
        .env_remove("PGPORT")
        .env("LC_ALL", "C")
        .process_group(0);
    if let Some(user) = user {
        command.uid(user.uid).gid(user.gid);
    }
    #[cfg(target_os = "linux")]
    {
        // SAFETY: getpid is async-signal-safe.
        let parent = unsafe { libc::getpid() };
        // SAFETY: prctl and getppid are async-signal-safe; this runs after the uid
        // change, which would otherwise clear the parent-death signal.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGINT) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() != parent {
                    return Err(std::io::Error::other("xdb dev exited"));
                }
                Ok(())
            });
        }
    }
    command
}

/// The last lines of the server's log, for an error message.
fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(15)..].join("\n");
    format!("(the end of {}):\n{tail}", log.display())
}
