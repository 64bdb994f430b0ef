//! A contender running on this machine: its programs, what to measure of them, and how
//! to clean up after it. XDB's side starts the way the bench's own runs do.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use super::generator::Target;
use super::process::{self, PeerProcess};
use crate::cdc::{Capture, PulsarTarget, Standalone};
use crate::cpu::Task;
use crate::database::{processes_named, BenchDatabase, Dialect};
use crate::rss::{self, Memory, Sampler};
use crate::scenarios::Driver;
use crate::services::{self, ServiceProcess, API_SERVICE, ASYNC_SERVICE};
use crate::worker::{Processes, Worker};

/// How long a contender may take to become ready.
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// A part of a contender whose CPU and memory are measured.
#[derive(Debug, Clone)]
pub enum Component {
    /// A program the bench started, with every process it started.
    Tree { name: String, pid: u32 },
    /// A database server running before the bench: every process of these names
    /// (PostgreSQL's server processes, MariaDB's one); memory as proportional set size,
    /// so pages shared between its processes count once.
    Server {
        name: String,
        commands: &'static [&'static str],
    },
}

impl Component {
    pub fn tree(name: &str, pid: u32) -> Component {
        Component::Tree {
            name: name.to_string(),
            pid,
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Component::Tree { name, .. } | Component::Server { name, .. } => name,
        }
    }

    /// Its processes now, as CPU accounting tasks.
    pub fn tasks(&self) -> Vec<Task> {
        match self {
            Component::Tree { pid, .. } => process::tree_tasks(*pid),
            Component::Server { commands, .. } => processes_named(commands)
                .into_iter()
                .map(Task::Process)
                .collect(),
        }
    }

    /// Samples its memory until finished.
    pub fn sample_memory(&self) -> Sampler {
        match self.clone() {
            Component::Tree { pid, .. } => Sampler::watch(Duration::from_millis(100), move || {
                process::tree_memory(pid)
            }),
            Component::Server { commands, .. } => {
                Sampler::watch(Duration::from_secs(1), move || {
                    rss::pss_of(&processes_named(commands)).or(Some(Memory::default()))
                })
            }
        }
    }
}

/// The database server component of `dialect`.
pub fn database_server(dialect: Dialect) -> Component {
    match dialect {
        Dialect::Postgres => Component::Server {
            name: "PostgreSQL server".into(),
            commands: &["postgres"],
        },
        Dialect::MySql => Component::Server {
            name: "MariaDB server".into(),
            commands: &["mariadbd", "mysqld"],
        },
    }
}

/// A running contender.
pub struct Session {
    pub name: String,
    pub target: Target,
    pub components: Vec<Component>,
    /// XDB's throw-away database (VACUUM and CHECKPOINT before each load).
    pub database: Option<BenchDatabase>,
    /// A peer's own PostgreSQL database: (admin URL, name), settled like XDB's and
    /// dropped at the end.
    pub peer_database: Option<(String, String)>,
    pub processes: Vec<PeerProcess>,
    pub services: Vec<ServiceProcess>,
    pub worker: Option<Worker>,
    /// XDB in Pulsar CDC mode: the capture of its database, stopped before the database
    /// is dropped.
    pub capture: Option<Capture>,
    pub temp_dirs: Vec<PathBuf>,
}

impl Session {
    /// An empty session of `name` on `target`.
    pub fn new(name: &str, target: Target) -> Session {
        Session {
            name: name.to_string(),
            target,
            components: Vec::new(),
            database: None,
            peer_database: None,
            processes: Vec::new(),
            services: Vec::new(),
            worker: None,
            capture: None,
            temp_dirs: Vec::new(),
        }
    }

    /// VACUUM (ANALYZE) and CHECKPOINT on the contender's PostgreSQL database, as the
    /// bench does before each XDB load; a failure is reported and the run goes on.
    pub async fn settle(&self) {
        let outcome = match (&self.database, &self.peer_database) {
            (Some(database), _) => database.settle().await,
            (None, Some((admin_url, name))) => {
                settle_postgres(&database_url(admin_url, name)).await
            }
            _ => Ok(()),
        };
        if let Err(error) = outcome {
            eprintln!(
                "xdb-bench: settling {}'s database failed: {error:#}",
                self.name
            );
        }
    }

    /// Fails when one of its programs has exited.
    pub fn ensure_running(&mut self) -> anyhow::Result<()> {
        for process in &mut self.processes {
            process.ensure_running()?;
        }
        for service in &mut self.services {
            service.ensure_running()?;
        }
        Ok(())
    }

    /// Stops everything it started and removes its databases and directories.
    pub async fn close(mut self) -> anyhow::Result<()> {
        self.worker.take();
        for mut service in self.services.drain(..) {
            service.stop();
        }
        for mut process in self.processes.drain(..).rev() {
            process.stop();
        }
        for dir in &self.temp_dirs {
            let _ = std::fs::remove_dir_all(dir);
        }
        if let Some(capture) = self.capture.take() {
            capture.stop().await?;
        }
        if let Some(database) = self.database.take() {
            database.drop_database().await?;
        }
        if let Some((admin_url, name)) = self.peer_database.take() {
            let admin = crate::database::connect(&admin_url).await?;
            admin
                .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .await
                .with_context(|| format!("dropping {name}"))?;
        }
        Ok(())
    }
}

/// `admin_url` with database `name` instead of its own.
pub fn database_url(admin_url: &str, name: &str) -> String {
    match reqwest::Url::parse(admin_url) {
        Ok(mut url) => {
            url.set_path(&format!("/{name}"));
            url.to_string()
        }
        Err(_) => admin_url.to_string(),
    }
}

async fn settle_postgres(url: &str) -> anyhow::Result<()> {
    let client = crate::database::connect(url).await?;
    client.batch_execute("VACUUM (ANALYZE)").await?;
    client.batch_execute("CHECKPOINT").await?;
    Ok(())
}

/// How the report names XDB on `dialect`, in Pulsar CDC mode when `pulsar`.
pub fn xdb_name(dialect: Dialect, pulsar: bool) -> &'static str {
    match (dialect, pulsar) {
        (Dialect::Postgres, false) => "XDB, PostgreSQL",
        (Dialect::MySql, false) => "XDB, MariaDB",
        (Dialect::Postgres, true) => "XDB, PostgreSQL + Pulsar",
        (Dialect::MySql, true) => "XDB, MariaDB + Pulsar",
    }
}

/// XDB on the server at `admin_url`: a fresh bench database, the release services, and
/// the bench's worker, as the bench's own runs start them; in Pulsar CDC mode on
/// `pulsar`'s standalone when given (its JVM measured as a component, as in the
/// bench's `--queue pulsar` runs).
pub async fn start_xdb(
    admin_url: &str,
    pulsar: Option<&PulsarTarget>,
    timer_delay: Duration,
) -> anyhow::Result<Session> {
    let standalone = pulsar.map(Standalone::find).transpose()?;
    let database = BenchDatabase::create(admin_url).await?;
    let dialect = database.dialect();
    let log_dir = std::env::temp_dir().join(database.name());
    let mut capture = None;
    let started = async {
        let mut pulsar_args = Vec::new();
        if let Some(target) = pulsar {
            let started = Capture::start(target, database.name(), database.url()).await?;
            pulsar_args = started.async_service_args(target);
            capture = Some(started);
        }
        start_services(&database, &pulsar_args, &log_dir, timer_delay).await
    }
    .await;
    let (services, worker, driver) = match started {
        Ok(started) => started,
        Err(error) => {
            // The capture first: it holds a replication slot of the database.
            if let Some(capture) = capture {
                let _ = capture.stop().await;
            }
            let _ = std::fs::remove_dir_all(&log_dir);
            let _ = database.drop_database().await;
            return Err(error);
        }
    };
    let mut session = Session::new(xdb_name(dialect, pulsar.is_some()), Target::Xdb(driver));
    session.components = ["API service", "async service"]
        .iter()
        .zip(&services)
        .map(|(label, service)| Component::tree(label, service.pid()))
        .chain([database_server(dialect)])
        .chain(standalone.map(|s| Component::tree("Pulsar standalone JVM", s.pid)))
        .collect();
    session.services = services;
    session.worker = Some(worker);
    session.database = Some(database);
    session.capture = capture;
    session.temp_dirs.push(log_dir);
    Ok(session)
}

/// The API and async services on `database` (the async service with `async_args` more),
/// ready, and the bench's worker.
async fn start_services(
    database: &BenchDatabase,
    async_args: &[String],
    log_dir: &std::path::Path,
    timer_delay: Duration,
) -> anyhow::Result<(Vec<ServiceProcess>, Worker, Driver)> {
    let api_binary = services::locate_binary(API_SERVICE)?;
    let async_binary = services::locate_binary(ASYNC_SERVICE)?;
    std::fs::create_dir_all(log_dir)?;
    let url = database.url().to_string();
    let api_addr = services::free_local_addr()?;
    let async_addr = services::free_local_addr()?;
    let listen = |addr: std::net::SocketAddr| {
        vec![
            "--database-url".to_string(),
            url.clone(),
            "--listen".into(),
            addr.to_string(),
        ]
    };
    let mut api = ServiceProcess::spawn(API_SERVICE, &api_binary, &listen(api_addr), log_dir)?;
    let async_service = ServiceProcess::spawn(
        ASYNC_SERVICE,
        &async_binary,
        &[listen(async_addr), async_args.to_vec()].concat(),
        log_dir,
    )?;
    let service_url = format!("http://{api_addr}");
    services::wait_until_ready(&mut api, &service_url, READY_TIMEOUT).await?;
    let processes = Processes::new(timer_delay);
    let worker = Worker::start(&processes).await?;
    let driver = Driver::new(&service_url, worker.url(), processes);
    Ok((vec![api, async_service], worker, driver))
}

/// Waits until `url` answers a GET with success, while `process` runs.
pub async fn wait_for_http(process: &mut PeerProcess, url: &str) -> anyhow::Result<()> {
    let http = reqwest::Client::new();
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        process.ensure_running()?;
        let answer = http.get(url).timeout(Duration::from_secs(2)).send().await;
        if answer.is_ok_and(|r| r.status().is_success()) {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{} did not answer {url} within {READY_TIMEOUT:?}; its log ends with:\n{}",
            process.name(),
            process.log_tail()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until something accepts connections on `addr`, while `process` runs.
pub async fn wait_for_port(
    process: &mut PeerProcess,
    addr: std::net::SocketAddr,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        process.ensure_running()?;
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{} did not listen on {addr} within {READY_TIMEOUT:?}; its log ends with:\n{}",
            process.name(),
            process.log_tail()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_database_url_keeps_the_server_and_user() {
        assert_eq!(
            database_url(
                "postgres://postgres@127.0.0.1:5432/postgres",
                "xdb_bench_dbos"
            ),
            "postgres://postgres@127.0.0.1:5432/xdb_bench_dbos"
        );
    }
}
