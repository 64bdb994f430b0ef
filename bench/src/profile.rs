//! Per-statement profile: `pg_stat_statements` on PostgreSQL when the server preloads
//! it, `performance_schema` on MySQL/MariaDB when the server runs it: its statement
//! digests for statements sent as text, and its prepared statements' own statistics for
//! the rest (the digests leave prepared statements out, and the services prepare theirs).

use std::collections::HashMap;
use std::sync::LazyLock;

use mysql_async::prelude::Queryable;
use regex::Regex;

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
        Dialect::MySql => {
            "`performance_schema`: `events_statements_summary_by_digest` for statements \
             sent as text, and `prepared_statements_instances` for prepared ones, read \
             before the services stopped (the statements of connections closed earlier \
             are missing); a statement prepared for lists of several lengths counts once"
        }
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

/// The `limit` statements of the bench database with the most execution time, among
/// the server's statistics and `prepared` (see [`prepared_statements`]). The database is
/// new, so every entry of it belongs to this run.
pub async fn top_statements(
    database: &BenchDatabase,
    limit: i64,
    prepared: Vec<StatementStat>,
) -> anyhow::Result<Vec<StatementStat>> {
    let mut stats = match database.dialect() {
        Dialect::Postgres => top_statements_postgres(database, limit).await?,
        Dialect::MySql => top_statements_mysql(database, limit).await?,
    };
    stats.extend(prepared);
    stats.sort_by(|a, b| b.total_ms.total_cmp(&a.total_ms));
    stats.truncate(limit.max(0) as usize);
    Ok(stats)
}

/// On MySQL/MariaDB with `performance_schema` on, the statistics of the statements
/// prepared on the bench database's open connections, each statement once whatever the
/// lengths of its lists; empty otherwise. Read while the services run: the server
/// forgets a connection's prepared statements when it closes.
pub async fn prepared_statements(database: &BenchDatabase) -> anyhow::Result<Vec<StatementStat>> {
    if database.dialect() != Dialect::MySql {
        return Ok(Vec::new());
    }
    let mut conn = connect_mysql(database.url()).await?;
    let on: Option<i64> = conn.query_first("SELECT @@performance_schema").await?;
    if on != Some(1) {
        let _ = conn.disconnect().await;
        return Ok(Vec::new());
    }
    // Timers are in picoseconds.
    let rows: Vec<(i64, i64, f64, String)> = conn
        .exec(
            "SELECT CAST(p.COUNT_EXECUTE AS SIGNED),
                    CAST(p.SUM_ROWS_SENT + p.SUM_ROWS_AFFECTED AS SIGNED),
                    p.SUM_TIMER_EXECUTE / 1e9, p.SQL_TEXT
               FROM performance_schema.prepared_statements_instances p
               JOIN performance_schema.threads t ON t.THREAD_ID = p.OWNER_THREAD_ID
              WHERE t.PROCESSLIST_DB = ? AND p.COUNT_EXECUTE > 0",
            (database.name(),),
        )
        .await?;
    let _ = conn.disconnect().await;
    let mut by_text: HashMap<String, StatementStat> = HashMap::new();
    for (calls, rows, total_ms, query) in rows {
        let query = without_list_lengths(&query);
        let stat = by_text.entry(query.clone()).or_insert(StatementStat {
            calls: 0,
            rows: 0,
            total_ms: 0.0,
            query,
        });
        stat.calls += calls;
        stat.rows += rows;
        stat.total_ms += total_ms;
    }
    Ok(by_text.into_values().collect())
}

/// `sql` with each list written once, so that a statement prepared for lists of
/// different lengths reads the same: a run of placeholders `?, ?, …`, a run of rows
/// `(…), (…)`, and a run of `WHEN … THEN ?` arms each become their first and `…`.
fn without_list_lengths(sql: &str) -> String {
    static PLACEHOLDERS: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\?(?:\s*,\s*\?)+").expect("a valid pattern"));
    static ROWS: LazyLock<Regex> = LazyLock::new(|| {
        let row = r"\((?:[^()]|\([^()]*\))*\)";
        Regex::new(&format!(r"({row})(?:\s*,\s*{row})+")).expect("a valid pattern")
    });
    static ARMS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(WHEN .*? THEN \?)(?:\s+WHEN .*? THEN \?)+").expect("a valid pattern")
    });
    let flat = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    let flat = PLACEHOLDERS.replace_all(&flat, "?, …");
    let flat = ROWS.replace_all(&flat, "$1, …");
    ARMS.replace_all(&flat, "$1 …").into_owned()
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

/// `query` on one line, at most `max` characters, safe inside a markdown table cell; a
/// long select list is shown as `…`, so that what tells statements apart (the table,
/// the conditions) fits.
pub fn one_line(query: &str, max: usize) -> String {
    let flat = query.split_whitespace().collect::<Vec<_>>().join(" ");
    let flat = without_select_list(&flat);
    let mut cut: String = flat.chars().take(max).collect();
    if cut.len() < flat.len() {
        cut.push('…');
    }
    cut.replace('|', "\\|").replace('`', "'")
}

/// `flat` with the select list of its first `SELECT` as `…` when longer than 40
/// characters.
fn without_select_list(flat: &str) -> String {
    let Some(start) = flat.find("SELECT ").map(|at| at + "SELECT ".len()) else {
        return flat.to_string();
    };
    match flat[start..].find(" FROM ") {
        Some(len) if len > 40 => format!("{}…{}", &flat[..start], &flat[start + len..]),
        _ => flat.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::{one_line, without_list_lengths};

    #[test]
    fn flattens_and_truncates() {
        assert_eq!(one_line("SELECT  a\n  FROM t", 100), "SELECT a FROM t");
        assert_eq!(one_line("SELECT a || b", 8), "SELECT a…");
        assert_eq!(one_line("a || b", 100), "a \\|\\| b");
        assert_eq!(
            one_line(
                "SELECT id, task_type, fire_at, process_execution_id, state_id FROM t WHERE x",
                100
            ),
            "SELECT … FROM t WHERE x"
        );
    }

    #[test]
    fn a_statement_reads_the_same_whatever_its_lists_lengths() {
        let forms = [
            (
                "DELETE FROM t WHERE id IN (?)",
                "DELETE FROM t WHERE id IN (?)",
            ),
            (
                "DELETE FROM t WHERE id IN (?, ?,\n ?)",
                "DELETE FROM t WHERE id IN (?, …)",
            ),
            (
                "INSERT INTO t (a, b) VALUES (?, NOW()), (?, NOW()), (?, NOW())",
                "INSERT INTO t (a, b) VALUES (?, NOW()), …",
            ),
            (
                "INSERT INTO t (a, b) VALUES (?, ?), (?, ?)",
                "INSERT INTO t (a, b) VALUES (?, …), …",
            ),
            (
                "UPDATE t SET a = CASE WHEN id = ? AND n = ? THEN ? WHEN id = ? AND n = ? \
                 THEN ? END, b = COALESCE(CASE id WHEN ? THEN ? WHEN ? THEN ? END, b) \
                 WHERE (id, n) IN ((?, ?), (?, ?))",
                "UPDATE t SET a = CASE WHEN id = ? AND n = ? THEN ? … END, b = \
                 COALESCE(CASE id WHEN ? THEN ? … END, b) WHERE (id, n) IN ((?, …), …)",
            ),
        ];
        for (sql, expected) in forms {
            assert_eq!(without_list_lengths(sql), expected, "{sql}");
        }
    }
}
