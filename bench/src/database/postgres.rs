//! PostgreSQL: the bench database, its backends and `pg_stat_*` statistics.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use tokio_postgres::Client;
use xdb_config::DatabaseUrl;
use xdb_db_connect::PostgresTarget;

use crate::cpu::Task;

/// The server the bench creates its database on when none is given.
pub const DEFAULT_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

pub(super) async fn create_database(admin_url: &str, name: &str) -> anyhow::Result<()> {
    let admin = connect(admin_url)
        .await
        .context("cannot reach PostgreSQL (start it with scripts/ensure-postgres.sh)")?;
    // Hex digits only: no quoting needed.
    admin
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .with_context(|| format!("CREATE DATABASE {name}"))
}

/// `SELECT version()` of the server, and its WAL level: `logical` (what Pulsar mode's
/// capture needs, `scripts/ensure-cdc-databases.sh`) writes more per commit than
/// `replica`, so figures of either mode say which they ran with.
pub(super) async fn server_version(url: &str) -> anyhow::Result<String> {
    let client = connect(url).await?;
    let row = client
        .query_one("SELECT version(), current_setting('wal_level')", &[])
        .await?;
    let (version, wal_level): (String, String) = (row.get(0), row.get(1));
    Ok(format!("{version}; wal_level={wal_level}"))
}

pub(super) async fn settle(url: &str) -> anyhow::Result<()> {
    let client = connect(url).await?;
    for statement in ["VACUUM (ANALYZE)", "CHECKPOINT"] {
        client
            .batch_execute(statement)
            .await
            .with_context(|| statement.to_string())?;
    }
    Ok(())
}

pub(super) async fn wait_for_idle(
    admin_url: &str,
    name: &str,
    timeout: Duration,
) -> anyhow::Result<()> {
    let admin = connect(admin_url).await?;
    let deadline = Instant::now() + timeout;
    loop {
        let others: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = $1",
                &[&name],
            )
            .await?
            .get(0);
        if others == 0 || Instant::now() >= deadline {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Process ids of the server backends connected to database `name`.
pub(super) async fn backend_pids(admin_url: &str, name: &str) -> anyhow::Result<Vec<Task>> {
    pids(
        admin_url,
        "SELECT pid FROM pg_stat_activity WHERE datname = $1",
        &[&name],
    )
    .await
}

async fn pids(
    admin_url: &str,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> anyhow::Result<Vec<Task>> {
    let admin = connect(admin_url).await?;
    let rows = admin.query(sql, params).await?;
    Ok(rows
        .iter()
        .filter_map(|row| u32::try_from(row.get::<_, i32>(0)).ok())
        .map(Task::Process)
        .collect())
}

/// Cumulative statistics of the database at `url` and its XDB tables.
pub(super) async fn statistics(url: &str) -> anyhow::Result<DbStatistics> {
    let client = connect(url).await?;
    let db = client
        .query_one(
            "SELECT xact_commit, xact_rollback, tup_returned, tup_fetched,
                    tup_inserted, tup_updated, tup_deleted
               FROM pg_stat_database WHERE datname = current_database()",
            &[],
        )
        .await?;
    let tables = client
        .query(
            "SELECT relname::text, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del,
                    coalesce(seq_scan, 0), coalesce(idx_scan, 0)
               FROM pg_stat_user_tables
              WHERE n_tup_ins + n_tup_upd + n_tup_del + coalesce(seq_scan, 0)
                    + coalesce(idx_scan, 0) > 0
              ORDER BY relname",
            &[],
        )
        .await?
        .iter()
        .map(|row| TableStatistics {
            table: row.get(0),
            inserted: row.get(1),
            updated: row.get(2),
            hot_updated: row.get(3),
            deleted: row.get(4),
            seq_scans: row.get(5),
            index_scans: row.get(6),
        })
        .collect();
    Ok(DbStatistics {
        commits: db.get(0),
        rollbacks: db.get(1),
        rows_returned: db.get(2),
        rows_fetched: db.get(3),
        rows_inserted: db.get(4),
        rows_updated: db.get(5),
        rows_deleted: db.get(6),
        tables,
    })
}

pub(super) async fn drop_database(admin_url: &str, name: &str) -> anyhow::Result<()> {
    let admin = connect(admin_url).await?;
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .await
        .with_context(|| format!("DROP DATABASE {name}"))
}

/// Counters from `pg_stat_database` and `pg_stat_user_tables`.
#[derive(Debug, Clone, Default)]
pub struct DbStatistics {
    pub commits: i64,
    pub rollbacks: i64,
    pub rows_returned: i64,
    pub rows_fetched: i64,
    pub rows_inserted: i64,
    pub rows_updated: i64,
    pub rows_deleted: i64,
    pub tables: Vec<TableStatistics>,
}

/// Row changes and scans of one table.
#[derive(Debug, Clone, Default)]
pub struct TableStatistics {
    pub table: String,
    pub inserted: i64,
    pub updated: i64,
    pub hot_updated: i64,
    pub deleted: i64,
    pub seq_scans: i64,
    pub index_scans: i64,
}

/// Connects to `url` (TLS as it says), giving up after 10 s unless the URL sets a
/// connect timeout.
pub async fn connect(url: &str) -> anyhow::Result<Client> {
    let url = DatabaseUrl::parse(url)
        .map_err(|error| anyhow::anyhow!("invalid PostgreSQL URL: {error}"))?;
    let mut target = PostgresTarget::new(&url)?;
    if target.config().get_connect_timeout().is_none() {
        target.config_mut().connect_timeout(Duration::from_secs(10));
    }
    Ok(target.connect_spawned().await?)
}
