//! A transaction held open on a connection of its own, as a forgotten report or a stuck
//! client would: PostgreSQL cannot remove row versions newer than its snapshot, InnoDB
//! cannot purge undo records past it.

use mysql_async::prelude::Queryable as _;

use crate::database::{connect, connect_mysql, Dialect};

/// The open transaction; [`HeldTransaction::end`] commits it.
pub enum HeldTransaction {
    Postgres(tokio_postgres::Client),
    MySql(mysql_async::Conn),
}

impl HeldTransaction {
    /// Opens a snapshot transaction on the database at `url` and reads from it, so the
    /// snapshot is taken now.
    pub async fn begin(dialect: Dialect, url: &str) -> anyhow::Result<HeldTransaction> {
        match dialect {
            Dialect::Postgres => {
                let client = connect(url).await?;
                client
                    .batch_execute(
                        "BEGIN ISOLATION LEVEL REPEATABLE READ; \
                         SELECT count(*) FROM xdb_sys_tasks",
                    )
                    .await?;
                Ok(HeldTransaction::Postgres(client))
            }
            Dialect::MySql => {
                let mut conn = connect_mysql(url).await?;
                conn.query_drop("START TRANSACTION WITH CONSISTENT SNAPSHOT")
                    .await?;
                conn.query_drop("SELECT COUNT(*) FROM xdb_sys_tasks")
                    .await?;
                Ok(HeldTransaction::MySql(conn))
            }
        }
    }

    /// Commits the transaction and closes its connection.
    pub async fn end(self) -> anyhow::Result<()> {
        match self {
            HeldTransaction::Postgres(client) => Ok(client.batch_execute("COMMIT").await?),
            HeldTransaction::MySql(mut conn) => {
                conn.query_drop("COMMIT").await?;
                let _ = conn.disconnect().await;
                Ok(())
            }
        }
    }
}
