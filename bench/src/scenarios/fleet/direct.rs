//! The bench's own connection to the bench database: the population, the check of the
//! rows it wrote, and the statements the service's queries are measured against.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use mysql_async::prelude::Queryable;
use mysql_async::{Row, Value};

use super::sql;
use crate::database::{connect, connect_mysql, Dialect};

/// One connection, kept open (as the service's pool keeps its own), its statements
/// prepared once.
pub enum Direct {
    Postgres(tokio_postgres::Client),
    MySql(mysql_async::Conn),
}

impl Direct {
    pub async fn connect(dialect: Dialect, url: &str) -> anyhow::Result<Direct> {
        Ok(match dialect {
            Dialect::Postgres => Direct::Postgres(connect(url).await?),
            Dialect::MySql => Direct::MySql(connect_mysql(url).await?),
        })
    }

    pub fn dialect(&self) -> Dialect {
        match self {
            Direct::Postgres(_) => Dialect::Postgres,
            Direct::MySql(_) => Dialect::MySql,
        }
    }

    /// Runs `statement` (no parameters, no rows).
    pub async fn execute(&mut self, statement: &str) -> anyhow::Result<()> {
        match self {
            Direct::Postgres(client) => client.batch_execute(statement).await?,
            Direct::MySql(conn) => conn.query_drop(statement).await?,
        }
        Ok(())
    }

    /// The rows of `query` (one text parameter), every value as text.
    pub async fn text_rows(
        &mut self,
        query: &str,
        param: &str,
    ) -> anyhow::Result<Vec<Vec<Option<String>>>> {
        match self {
            Direct::Postgres(client) => {
                let rows = client
                    .query(query, &[&param])
                    .await
                    .with_context(|| query.to_string())?;
                Ok(rows
                    .iter()
                    .map(|row| (0..row.len()).map(|i| row.get(i)).collect())
                    .collect())
            }
            Direct::MySql(conn) => {
                let rows: Vec<Row> = conn
                    .exec(query, (param,))
                    .await
                    .with_context(|| query.to_string())?;
                Ok(rows
                    .iter()
                    .map(|row| (0..row.len()).map(|i| text_of(&row[i])).collect())
                    .collect())
            }
        }
    }

    /// The columns of XDB table (or the business table) `table`, in order.
    pub async fn columns(&mut self, table: &str) -> anyhow::Result<Vec<String>> {
        let query = match self.dialect() {
            Dialect::Postgres => {
                "SELECT CAST(column_name AS TEXT) FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND table_name = ? \
                 ORDER BY ordinal_position"
            }
            Dialect::MySql => {
                "SELECT CAST(COLUMN_NAME AS CHAR) FROM information_schema.COLUMNS \
                 WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? \
                 ORDER BY ORDINAL_POSITION"
            }
        };
        let query = match self.dialect() {
            Dialect::Postgres => query.replace('?', "$1"),
            Dialect::MySql => query.to_string(),
        };
        let rows = self.text_rows(&query, table).await?;
        Ok(rows
            .into_iter()
            .filter_map(|row| row.into_iter().next().flatten())
            .collect())
    }

    /// Tables of the schema that have a `process_execution_id` column.
    pub async fn tables_by_execution(&mut self) -> anyhow::Result<Vec<String>> {
        let query = match self.dialect() {
            Dialect::Postgres => {
                "SELECT CAST(table_name AS TEXT) FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND column_name = $1 ORDER BY 1"
            }
            Dialect::MySql => {
                "SELECT CAST(TABLE_NAME AS CHAR) FROM information_schema.COLUMNS \
                 WHERE TABLE_SCHEMA = DATABASE() AND COLUMN_NAME = ? ORDER BY 1"
            }
        };
        let rows = self.text_rows(query, "process_execution_id").await?;
        Ok(rows
            .into_iter()
            .filter_map(|row| row.into_iter().next().flatten())
            .collect())
    }

    /// The time of one run of the service's first-page statement for `customer`, and
    /// the rows it read.
    pub async fn list_by_customer(
        &mut self,
        prepared: &mut Option<tokio_postgres::Statement>,
        customer: i64,
        limit: i64,
    ) -> anyhow::Result<(Duration, usize)> {
        let text = sql::list_by_customer(self.dialect());
        match self {
            Direct::Postgres(client) => {
                if prepared.is_none() {
                    *prepared = Some(client.prepare(&text).await?);
                }
                let statement = prepared.as_ref().expect("prepared above");
                let began = Instant::now();
                let rows = client
                    .query(statement, &[&sql::PROCESS_TYPE, &customer, &limit])
                    .await?;
                Ok((began.elapsed(), rows.len()))
            }
            Direct::MySql(conn) => {
                let began = Instant::now();
                let rows: Vec<Row> = conn
                    .exec(&text, (sql::PROCESS_TYPE, customer, limit))
                    .await?;
                Ok((began.elapsed(), rows.len()))
            }
        }
    }

    /// The one number `query` (no parameters) answers.
    pub async fn count(&mut self, query: &str) -> anyhow::Result<u64> {
        let count: i64 = match self {
            Direct::Postgres(client) => client.query_one(query, &[]).await?.get(0),
            Direct::MySql(conn) => conn.query_first(query).await?.context("no row")?,
        };
        Ok(u64::try_from(count).unwrap_or(0))
    }

    /// The time of one run of `query` (no parameters), every row read.
    pub async fn timed(&mut self, query: &str) -> anyhow::Result<Duration> {
        let began = Instant::now();
        match self {
            Direct::Postgres(client) => {
                client.query(query, &[]).await?;
            }
            Direct::MySql(conn) => {
                let _: Vec<Row> = conn.exec(query, ()).await?;
            }
        }
        Ok(began.elapsed())
    }

    pub async fn close(self) {
        if let Direct::MySql(conn) = self {
            let _ = conn.disconnect().await;
        }
    }
}

fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::NULL => None,
        Value::Bytes(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
        other => Some(other.as_sql(true)),
    }
}
