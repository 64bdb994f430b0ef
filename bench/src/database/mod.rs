//! The throw-away benchmark database on PostgreSQL or MySQL/MariaDB, the server
//! processes that serve it, and the statistics the server keeps about it.

use std::time::Duration;

use xdb_config::DatabaseUrl;
pub use xdb_sys_schema::Dialect;

use crate::cpu::Task;

mod mysql;
mod postgres;

pub use mysql::{
    connect as connect_mysql, StatusCounter, StatusSnapshot, DEFAULT_MYSQL_ADMIN_URL,
    STATUS_COUNTERS,
};
pub use postgres::{connect, DbStatistics, TableStatistics, DEFAULT_ADMIN_URL};

/// A database `xdb_bench_<12 hex digits>` with the XDB schema installed. Call
/// [`BenchDatabase::drop_database`]; if that never happens (error, panic) `Drop` still
/// drops it, blocking for a few seconds at most.
pub struct BenchDatabase {
    name: String,
    url: String,
    admin_url: String,
    dialect: Dialect,
    dropped: bool,
}

/// What the server counted about the run.
#[derive(Debug, Clone)]
pub enum DbWork {
    /// `pg_stat_database` / `pg_stat_user_tables` of the bench database.
    Postgres(DbStatistics),
    /// Server-wide `SHOW GLOBAL STATUS` differences over the run (MySQL keeps no
    /// per-database counters without extra plugins).
    MySql(Vec<(String, i64)>),
}

impl BenchDatabase {
    /// Creates the database on the server at `admin_url` (its dialect from the scheme)
    /// and installs the XDB schema.
    pub async fn create(admin_url: &str) -> anyhow::Result<BenchDatabase> {
        let dialect = Dialect::from_url(admin_url)?;
        let name = format!(
            "xdb_bench_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        match dialect {
            Dialect::Postgres => postgres::create_database(admin_url, &name).await?,
            Dialect::MySql => mysql::create_database(admin_url, &name).await?,
        }
        let database = BenchDatabase {
            url: with_database(admin_url, &name)?,
            name,
            admin_url: admin_url.to_string(),
            dialect,
            dropped: false,
        };
        xdb_sys_schema::install(&database.url)
            .await
            .map_err(anyhow::Error::from)
            .map_err(|e| e.context(format!("installing the XDB schema into {}", database.name)))?;
        Ok(database)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The URL of the bench database itself.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The server's version string.
    pub async fn server_version(&self) -> anyhow::Result<String> {
        match self.dialect {
            Dialect::Postgres => postgres::server_version(&self.url).await,
            Dialect::MySql => mysql::server_version(&self.url).await,
        }
    }

    /// Settles the server before a measured load, so that every load starts alike:
    /// PostgreSQL vacuums and analyzes the database, as autovacuum would between
    /// scenarios had it caught up (otherwise a scenario may scan the dead rows of those
    /// before it), then checkpoints, so that no load pays for a checkpoint the WAL of
    /// the scenario before it started (the 100,000 waiting processes write ~0.5 GB of
    /// WAL, and a checkpoint then ran through the load beside them, which paid its
    /// full-page writes). InnoDB purges, samples
    /// statistics and flushes on its own: nothing to do on MySQL.
    pub async fn settle(&self) -> anyhow::Result<()> {
        match self.dialect {
            Dialect::Postgres => postgres::settle(&self.url).await,
            Dialect::MySql => Ok(()),
        }
    }

    /// Waits until no other session uses the database (so their statistics are flushed
    /// by the exiting sessions), for at most `timeout`.
    pub async fn wait_for_idle(&self, timeout: Duration) -> anyhow::Result<()> {
        match self.dialect {
            Dialect::Postgres => {
                postgres::wait_for_idle(&self.admin_url, &self.name, timeout).await
            }
            Dialect::MySql => mysql::wait_for_idle(&self.admin_url, &self.name, timeout).await,
        }
    }

    /// Server processes (PostgreSQL backends) or threads (MariaDB connection threads)
    /// serving the database's sessions.
    pub async fn session_ids(&self) -> anyhow::Result<Vec<Task>> {
        match self.dialect {
            Dialect::Postgres => postgres::backend_pids(&self.admin_url, &self.name).await,
            Dialect::MySql => mysql::session_tids(&self.admin_url, &self.name).await,
        }
    }

    /// The whole database server on this machine: every `postgres` process, or the
    /// `mariadbd` process. Empty when the server is not on this machine.
    pub async fn server_ids(&self) -> anyhow::Result<Vec<Task>> {
        match self.dialect {
            Dialect::Postgres => Ok(processes_named(&["postgres"])
                .into_iter()
                .map(Task::Process)
                .collect()),
            Dialect::MySql => mysql::server_process(&self.admin_url).await,
        }
    }

    /// Server-wide counters to difference over the run (MySQL only; `None` elsewhere).
    pub async fn status_snapshot(&self) -> anyhow::Result<Option<StatusSnapshot>> {
        match self.dialect {
            Dialect::Postgres => Ok(None),
            Dialect::MySql => Ok(Some(mysql::status_snapshot(&self.admin_url).await?)),
        }
    }

    /// What the server counted: per-database statistics on PostgreSQL; on MySQL the
    /// server-wide counters since `before`.
    pub async fn work(&self, before: Option<&StatusSnapshot>) -> anyhow::Result<Option<DbWork>> {
        match (self.dialect, before) {
            (Dialect::Postgres, _) => Ok(Some(DbWork::Postgres(
                postgres::statistics(&self.url).await?,
            ))),
            (Dialect::MySql, Some(before)) => {
                let after = mysql::status_snapshot(&self.admin_url).await?;
                Ok(Some(DbWork::MySql(after.since(before))))
            }
            (Dialect::MySql, None) => Ok(None),
        }
    }

    /// Drops the database, ending any session still connected.
    pub async fn drop_database(mut self) -> anyhow::Result<()> {
        self.dropped = true;
        drop_now(self.dialect, &self.admin_url, &self.name).await
    }
}

impl Drop for BenchDatabase {
    fn drop(&mut self) {
        if self.dropped {
            return;
        }
        let (dialect, admin_url, name) = (self.dialect, self.admin_url.clone(), self.name.clone());
        // A thread of its own: this may run inside (or outside) a tokio runtime.
        let cleanup = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async {
                tokio::time::timeout(
                    Duration::from_secs(10),
                    drop_now(dialect, &admin_url, &name),
                )
                .await
                .map_err(|_| anyhow::anyhow!("timed out"))?
            })
        });
        if let Ok(Err(error)) = cleanup.join() {
            eprintln!(
                "xdb-bench: could not drop database {}: {error:#}",
                self.name
            );
        }
    }
}

/// Set to keep each bench database after the run, to look into it or run probes on it.
pub const KEEP_DATABASE_ENV: &str = "XDB_BENCH_KEEP_DATABASE";

async fn drop_now(dialect: Dialect, admin_url: &str, name: &str) -> anyhow::Result<()> {
    if std::env::var_os(KEEP_DATABASE_ENV).is_some_and(|v| !v.is_empty() && v != "0") {
        eprintln!("xdb-bench: kept database {name} ({KEEP_DATABASE_ENV} is set)");
        return Ok(());
    }
    match dialect {
        Dialect::Postgres => postgres::drop_database(admin_url, name).await,
        Dialect::MySql => mysql::drop_database(admin_url, name).await,
    }
}

/// Ids of the running processes whose command name is one of `names`.
pub(crate) fn processes_named(names: &[&str]) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let comm = std::fs::read_to_string(entry.path().join("comm")).ok()?;
            names.contains(&comm.trim()).then_some(pid)
        })
        .collect()
}

/// `admin_url` with its database replaced by `name`.
fn with_database(admin_url: &str, name: &str) -> anyhow::Result<String> {
    let url = DatabaseUrl::parse(admin_url)
        .and_then(|url| url.with_database(name))
        .map_err(|error| anyhow::anyhow!("the server URL: {error}"))?;
    Ok(url.as_str().to_owned())
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn replaces_the_database_of_a_url() {
        let url = with_database("postgres://u@h:5432/postgres", "x").unwrap();
        assert_eq!(url, "postgres://u@h:5432/x");
        let url = with_database("postgres://u@h:5432?sslmode=disable", "x").unwrap();
        assert_eq!(url, "postgres://u@h:5432/x?sslmode=disable");
        let url = with_database("mysql://root@127.0.0.1:3306/mysql", "x").unwrap();
        assert_eq!(url, "mysql://root@127.0.0.1:3306/x");
        let url = with_database("host=h dbname=d", "x").unwrap();
        assert_eq!(url, "host=h dbname=x");
        assert!(with_database("oracle://u:secret@h/d", "x").is_err());
    }
}
