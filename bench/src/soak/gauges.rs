//! What the soak reads from the database each minute: the size and the live and dead
//! rows of XDB's tables, and how far back the server keeps old row versions for the
//! oldest open transaction (PostgreSQL's xmin horizon, InnoDB's history list).

use std::collections::BTreeMap;

use mysql_async::prelude::Queryable as _;

use crate::database::{connect, connect_mysql, Dialect};

/// One XDB table at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableGauge {
    /// Bytes on disk, indexes included (InnoDB: the tablespace file).
    pub bytes: i64,
    /// Live rows (estimates: the server's statistics).
    pub live_rows: i64,
    /// Row versions no transaction can see any more, not yet removed (PostgreSQL only).
    pub dead_rows: i64,
}

/// The database at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DatabaseGauges {
    /// Every `xdb_sys_*` table by name.
    pub tables: BTreeMap<String, TableGauge>,
    /// PostgreSQL: the age in transactions of the oldest snapshot any session holds.
    /// InnoDB: the history list length (undo records not yet purged).
    pub horizon: i64,
}

impl DatabaseGauges {
    /// Bytes of every XDB table.
    pub fn total_bytes(&self) -> i64 {
        self.tables.values().map(|t| t.bytes).sum()
    }

    /// Live rows of every XDB table.
    pub fn total_live_rows(&self) -> i64 {
        self.tables.values().map(|t| t.live_rows).sum()
    }

    /// Dead rows of every XDB table.
    pub fn total_dead_rows(&self) -> i64 {
        self.tables.values().map(|t| t.dead_rows).sum()
    }

    /// One table's gauge; zero when the table is unknown.
    pub fn table(&self, name: &str) -> TableGauge {
        self.tables.get(name).copied().unwrap_or_default()
    }
}

const POSTGRES_TABLES: &str = "SELECT relname::text, pg_total_relation_size(relid), \
     n_live_tup, n_dead_tup FROM pg_stat_user_tables WHERE relname LIKE 'xdb\\_sys\\_%'";
const POSTGRES_HORIZON: &str = "SELECT coalesce(max(age(backend_xmin)), 0)::bigint \
     FROM pg_stat_activity WHERE backend_xmin IS NOT NULL";
const MYSQL_TABLES: &str = "SELECT t.table_name, coalesce(s.allocated_size, \
     t.data_length + t.index_length), t.table_rows FROM information_schema.tables t \
     LEFT JOIN information_schema.innodb_sys_tablespaces s \
     ON s.name = concat(t.table_schema, '/', t.table_name) \
     WHERE t.table_schema = database() AND t.table_name LIKE 'xdb\\_sys\\_%'";

/// Reads the gauges of the database at `url`.
pub async fn read(dialect: Dialect, url: &str) -> anyhow::Result<DatabaseGauges> {
    match dialect {
        Dialect::Postgres => {
            let client = connect(url).await?;
            let mut gauges = DatabaseGauges::default();
            for row in client.query(POSTGRES_TABLES, &[]).await? {
                let gauge = TableGauge {
                    bytes: row.get(1),
                    live_rows: row.get(2),
                    dead_rows: row.get(3),
                };
                gauges.tables.insert(row.get(0), gauge);
            }
            gauges.horizon = client.query_one(POSTGRES_HORIZON, &[]).await?.get(0);
            Ok(gauges)
        }
        Dialect::MySql => {
            let mut conn = connect_mysql(url).await?;
            let mut gauges = DatabaseGauges::default();
            let rows: Vec<(String, Option<i64>, Option<i64>)> = conn.query(MYSQL_TABLES).await?;
            for (name, bytes, rows) in rows {
                let gauge = TableGauge {
                    bytes: bytes.unwrap_or(0),
                    live_rows: rows.unwrap_or(0),
                    dead_rows: 0,
                };
                gauges.tables.insert(name, gauge);
            }
            let status: Option<(String, String, String)> =
                conn.query_first("SHOW ENGINE INNODB STATUS").await?;
            gauges.horizon = status
                .and_then(|(_, _, text)| history_list_length(&text))
                .unwrap_or(-1);
            let _ = conn.disconnect().await;
            Ok(gauges)
        }
    }
}

/// The "History list length N" line of `SHOW ENGINE INNODB STATUS`.
fn history_list_length(status: &str) -> Option<i64> {
    status
        .lines()
        .find_map(|line| line.trim().strip_prefix("History list length "))
        .and_then(|n| n.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_history_list_length_is_read_from_the_innodb_status() {
        let status = "------------\nTRANSACTIONS\n------------\nTrx id counter 9\n\
                      Purge done for trx's n:o < 7 undo n:o < 0\nHistory list length 1234\n";
        assert_eq!(history_list_length(status), Some(1234));
        assert_eq!(history_list_length("nothing here"), None);
    }

    #[test]
    fn totals_add_every_table() {
        let mut gauges = DatabaseGauges::default();
        for (name, bytes, dead) in [("xdb_sys_tasks", 10, 3), ("xdb_sys_timers", 5, 1)] {
            let gauge = TableGauge {
                bytes,
                live_rows: 0,
                dead_rows: dead,
            };
            gauges.tables.insert(name.into(), gauge);
        }
        assert_eq!(gauges.total_bytes(), 15);
        assert_eq!(gauges.total_dead_rows(), 4);
        assert_eq!(gauges.table("xdb_sys_missing"), TableGauge::default());
    }
}
