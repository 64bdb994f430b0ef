//! Per-statement profile: `pg_stat_statements` on PostgreSQL when the server preloads
//! it, `performance_schema` statement digests on MySQL/MariaDB when the server runs it.

use mysql_async::prelude::Queryable;

use crate::database::{connect, connect_mysql, BenchDatabase, Dialect};

/// One normalized statement as the server's statement statistics saw it in the bench
/// database.
#[derive(Debug, Clone)]
pub struct StatementStat {
    pub calls: i64,
    pub rows: i64,
    pub total_ms: f64,
    pub query: String,
}

/// Whether statement statistics are available: on PostgreSQL creates the extension in
/// the bench database when the server preloads the library; on MySQL checks that
/// `performance_schema` is on. `false` (and nothing changed) otherwise.
pub async fn enable(database: &BenchDatabase) -> anyhow::Result<bool> {
    match database.dialect() {
        Dialect::Postgres => enable_postgres(database).await,
        Dialect::MySql => {
            let mut conn = connect_mysql(database.url()).await?;
            let on: Option<i64> = conn.query_first("SELECT @@performance_schema").await?;
            let _ = conn.disconnect().await;
            Ok(on == Some(1))
        }
    }
}

/// Why [`top_statements`] has nothing, for the report.
pub fn unavailable_reason(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres => {
            "the server does not preload `pg_stat_statements` (`shared_preload_libraries`)"
        }
        Dialect::MySql => {
            "the server runs without `performance_schema` (it needs \
             `performance_schema=ON` in the server configuration and a restart)"
        }
    }
}

/// Where [`top_statements`] reads from, for the report.
pub fn source(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres => "`pg_stat_statements`",
        Dialect::MySql => "`performance_schema.events_statements_summary_by_digest`",
    }
}

async fn enable_postgres(database: &BenchDatabase) -> anyhow::Result<bool> {
    let client = connect(database.url()).await?;
    let preload: String = client
        .query_one("SELECT current_setting('shared_preload_libraries')", &[])
        .await?
        .get(0);
    if !preload.split(',').any(|l| l.trim() == "pg_stat_statements") {
        return Ok(false);
    }
    client
        .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .await?;
    Ok(true)
}

/// The `limit` statements of the bench database with the most execution time. The
/// database is new, so every entry of it belongs to this run.
pub async fn top_statements(
    database: &BenchDatabase,
    limit: i64,
) -> anyhow::Result<Vec<StatementStat>> {
    match database.dialect() {
        Dialect::Postgres => top_statements_postgres(database, limit).await,
        Dialect::MySql => top_statements_mysql(database, limit).await,
    }
}

async fn top_statements_postgres(
    database: &BenchDatabase,
    limit: i64,
) -> anyhow::Result<Vec<StatementStat>> {
    let client = connect(database.url()).await?;
    let rows = client
        .query(
            "SELECT calls, rows, total_exec_time, query FROM pg_stat_statements
              WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
                AND query NOT LIKE '%pg_stat_statements%'
              ORDER BY total_exec_time DESC LIMIT $1",
            &[&limit],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|row| StatementStat {
            calls: row.get(0),
            rows: row.get(1),
            total_ms: row.get(2),
            query: row.get(3),
        })
        .collect())
}

async fn top_statements_mysql(
    database: &BenchDatabase,
    limit: i64,
) -> anyhow::Result<Vec<StatementStat>> {
    let mut conn = connect_mysql(database.url()).await?;
    // Timers are in picoseconds.
    let rows: Vec<(i64, i64, f64, Option<String>)> = conn
        .exec(
            "SELECT CAST(COUNT_STAR AS SIGNED),
                    CAST(SUM_ROWS_SENT + SUM_ROWS_AFFECTED AS SIGNED),
                    SUM_TIMER_WAIT / 1e9, DIGEST_TEXT
               FROM performance_schema.events_statements_summary_by_digest
              WHERE SCHEMA_NAME = ? AND COALESCE(DIGEST_TEXT, '') NOT LIKE '%performance_schema%'
              ORDER BY SUM_TIMER_WAIT DESC LIMIT ?",
            (database.name(), limit),
        )
        .await?;
    let _ = conn.disconnect().await;
    Ok(rows
        .into_iter()
        .map(|(calls, rows, total_ms, query)| StatementStat {
            calls,
            rows,
            total_ms,
            query: query.unwrap_or_default(),
        })
        .collect())
}

/// `query` on one line, at most `max` characters, safe inside a markdown table cell.
pub fn one_line(query: &str, max: usize) -> String {
    let flat = query.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut cut: String = flat.chars().take(max).collect();
    if cut.len() < flat.len() {
        cut.push('…');
    }
    cut.replace('|', "\\|").replace('`', "'")
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn flattens_and_truncates() {
        assert_eq!(one_line("SELECT  a\n  FROM t", 100), "SELECT a FROM t");
        assert_eq!(one_line("SELECT a || b", 8), "SELECT a…");
        assert_eq!(one_line("a || b", 100), "a \\|\\| b");
    }
}
