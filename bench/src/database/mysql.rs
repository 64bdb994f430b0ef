//! MySQL/MariaDB: the bench database, the server's threads, and its status counters.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use mysql_async::prelude::Queryable;
use mysql_async::Conn;
use xdb_config::DatabaseUrl;
use xdb_db_connect::MySqlTarget;

use crate::cpu::Task;

/// The server the bench creates its MySQL database on when none is given (what
/// `scripts/ensure-mariadb.sh` provides).
pub const DEFAULT_MYSQL_ADMIN_URL: &str = "mysql://root@127.0.0.1:3306/mysql";

/// Command names of the MySQL-compatible server process.
const SERVER_PROCESS_NAMES: [&str; 2] = ["mariadbd", "mysqld"];

pub(super) async fn create_database(admin_url: &str, name: &str) -> anyhow::Result<()> {
    let mut admin = connect(admin_url)
        .await
        .context("cannot reach MySQL/MariaDB (start it with scripts/ensure-mariadb.sh)")?;
    // Hex digits only: no quoting needed. The collation the XDB tests use too.
    admin
        .query_drop(format!(
            "CREATE DATABASE {name} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
        ))
        .await
        .with_context(|| format!("CREATE DATABASE {name}"))?;
    let _ = admin.disconnect().await;
    Ok(())
}

/// The server's version, and whether it writes the binary log: Pulsar mode's capture
/// needs it (`scripts/ensure-cdc-databases.sh` turns it on, and it stays on), and every
/// commit then writes it too, so figures of either mode say which they ran with.
pub(super) async fn server_version(url: &str) -> anyhow::Result<String> {
    let mut conn = connect(url).await?;
    let version: Option<(String, String, i64)> = conn
        .query_first("SELECT version(), @@version_comment, @@log_bin")
        .await?;
    let _ = conn.disconnect().await;
    Ok(version.map_or_else(String::new, |(v, c, log_bin)| {
        let binary_log = if log_bin == 1 { "on" } else { "off" };
        format!("{v} ({c}); binary log {binary_log}")
    }))
}

pub(super) async fn wait_for_idle(
    admin_url: &str,
    name: &str,
    timeout: Duration,
) -> anyhow::Result<()> {
    let mut admin = connect(admin_url).await?;
    let deadline = Instant::now() + timeout;
    loop {
        let others: Option<i64> = admin
            .exec_first(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = ?",
                (name,),
            )
            .await?;
        if others.unwrap_or(0) == 0 || Instant::now() >= deadline {
            let _ = admin.disconnect().await;
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Threads of the local server process serving the connections that use database
/// `name` now (one thread per connection, MariaDB's default `thread_handling`); empty
/// when the server is not on this machine. A client that closes its connections loses
/// their threads to the thread cache, so they are not counted.
pub(super) async fn session_tids(admin_url: &str, name: &str) -> anyhow::Result<Vec<Task>> {
    let (server, threads) = server_threads(admin_url).await?;
    let Some(server) = server else {
        return Ok(Vec::new());
    };
    Ok(threads
        .into_iter()
        .filter(|(db, _)| db.as_deref() == Some(name))
        .map(|(_, tid)| Task::Thread { pid: server, tid })
        .collect())
}

/// The local server process, whole; empty when it is not on this machine.
pub(super) async fn server_process(admin_url: &str) -> anyhow::Result<Vec<Task>> {
    let (server, _) = server_threads(admin_url).await?;
    Ok(server.into_iter().map(Task::Process).collect())
}

/// The local server process (the one whose threads serve the connections), and every
/// connection's database and thread id.
async fn server_threads(
    admin_url: &str,
) -> anyhow::Result<(Option<u32>, Vec<(Option<String>, u32)>)> {
    let mut admin = connect(admin_url).await?;
    let rows: Vec<(Option<String>, Option<u64>)> = admin
        .query("SELECT DB, TID FROM information_schema.PROCESSLIST")
        .await?;
    let _ = admin.disconnect().await;
    let sessions: Vec<(Option<String>, u32)> = rows
        .into_iter()
        .filter_map(|(db, tid)| Some((db, u32::try_from(tid?).ok()?)))
        .collect();
    let server = crate::database::processes_named(&SERVER_PROCESS_NAMES)
        .into_iter()
        .find(|pid| {
            let tasks = threads_of(*pid);
            sessions.iter().any(|(_, tid)| tasks.contains(tid))
        });
    Ok((server, sessions))
}

fn threads_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// One `SHOW GLOBAL STATUS` counter the report shows, and what it means.
pub struct StatusCounter {
    pub name: &'static str,
    pub meaning: &'static str,
}

/// The server-wide counters the report differences over the run.
pub const STATUS_COUNTERS: [StatusCounter; 24] = [
    counter(
        "Connections",
        "connection attempts (a pool reusing connections makes ~0)",
    ),
    counter(
        "Threads_created",
        "server threads created for new connections",
    ),
    counter("Questions", "statements sent by clients"),
    counter("Com_commit", "COMMIT statements"),
    counter("Com_rollback", "ROLLBACK statements"),
    counter("Com_begin", "BEGIN / START TRANSACTION statements"),
    counter("Com_select", "SELECT statements"),
    counter("Com_insert", "INSERT statements"),
    counter("Com_update", "UPDATE statements"),
    counter("Com_delete", "DELETE statements"),
    counter("Com_stmt_prepare", "statements prepared"),
    counter("Com_stmt_execute", "prepared statements executed"),
    counter("Com_stmt_close", "prepared statements closed"),
    counter("Handler_read_key", "index lookups"),
    counter("Handler_read_next", "rows read in index order"),
    counter("Handler_read_rnd_next", "rows read by table scans"),
    counter("Handler_write", "rows inserted (temporary tables included)"),
    counter(
        "Handler_tmp_write",
        "rows written to internal temporary tables",
    ),
    counter("Handler_update", "rows updated"),
    counter("Handler_delete", "rows deleted"),
    counter("Innodb_row_lock_waits", "row lock waits"),
    counter("Innodb_deadlocks", "deadlocks"),
    counter("Innodb_log_writes", "redo log writes"),
    counter("Innodb_data_fsyncs", "fsyncs (redo log and data files)"),
];

const fn counter(name: &'static str, meaning: &'static str) -> StatusCounter {
    StatusCounter { name, meaning }
}

/// `SHOW GLOBAL STATUS` at one moment.
#[derive(Debug, Clone, Default)]
pub struct StatusSnapshot(HashMap<String, i64>);

impl StatusSnapshot {
    /// The [`STATUS_COUNTERS`] differences from `earlier` to `self`, in that order.
    pub fn since(&self, earlier: &StatusSnapshot) -> Vec<(String, i64)> {
        STATUS_COUNTERS
            .iter()
            .filter_map(|c| {
                let now = self.0.get(c.name)?;
                Some((
                    c.name.to_string(),
                    now - earlier.0.get(c.name).unwrap_or(&0),
                ))
            })
            .collect()
    }
}

pub(super) async fn status_snapshot(admin_url: &str) -> anyhow::Result<StatusSnapshot> {
    let mut admin = connect(admin_url).await?;
    let rows: Vec<(String, String)> = admin.query("SHOW GLOBAL STATUS").await?;
    let _ = admin.disconnect().await;
    Ok(StatusSnapshot(
        rows.into_iter()
            .filter_map(|(name, value)| Some((name, value.parse().ok()?)))
            .collect(),
    ))
}

pub(super) async fn drop_database(admin_url: &str, name: &str) -> anyhow::Result<()> {
    let mut admin = connect(admin_url).await?;
    let sessions: Vec<u64> = admin
        .exec(
            "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()",
            (name,),
        )
        .await?;
    for id in sessions {
        // The session may have ended meanwhile.
        let _ = admin.query_drop(format!("KILL {id}")).await;
    }
    let result = admin
        .query_drop(format!("DROP DATABASE IF EXISTS {name}"))
        .await
        .with_context(|| format!("DROP DATABASE {name}"));
    let _ = admin.disconnect().await;
    result
}

/// One connection (TLS as `url` says), giving up after 10 s; `mariadb://` is taken as
/// `mysql://`.
pub async fn connect(url: &str) -> anyhow::Result<Conn> {
    let url =
        DatabaseUrl::parse(url).map_err(|error| anyhow::anyhow!("invalid MySQL URL: {error}"))?;
    let target = MySqlTarget::new(&url)?;
    tokio::time::timeout(Duration::from_secs(10), target.connect(|opts| opts))
        .await
        .map_err(|_| anyhow::anyhow!("no answer from MySQL within 10 s"))?
        .map_err(anyhow::Error::from)
}
