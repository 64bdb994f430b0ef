//! Reads of system and business rows, for assertions.

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use crate::env::XdbTestEnv;
use crate::sql::{Arg, Row};

/// A row of `xdb_sys_process_executions`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessRow {
    pub id: Uuid,
    pub process_id: String,
    pub process_type: String,
    pub status: String,
    pub start_time: DateTime<Utc>,
    pub close_time: Option<DateTime<Utc>>,
    pub running_state_executions: i32,
    pub result: Option<Value>,
    pub failure: Option<Value>,
}

/// A row of `xdb_sys_async_state_executions`.
#[derive(Debug, Clone, PartialEq)]
pub struct StateRow {
    pub state_id: String,
    pub number: i32,
    pub status: String,
    pub version: i32,
    pub input: Option<Value>,
    pub command_request: Option<Value>,
    pub command_results: Option<Value>,
    pub last_failure: Option<Value>,
    pub created_at: DateTime<Utc>,
}

impl StateRow {
    /// `stateId-number`, as in contexts and `consumed_by`.
    pub fn execution_id(&self) -> String {
        format!("{}-{}", self.state_id, self.number)
    }
}

/// A row of `xdb_sys_tasks`.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRow {
    pub id: i64,
    pub task_type: String,
    pub fire_at: DateTime<Utc>,
    pub state_id: Option<String>,
    pub number: Option<i32>,
    pub timer_index: Option<i32>,
    pub attempt: i32,
    pub lease_owner: Option<String>,
}

/// A row of `xdb_sys_local_queue_messages`.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageRow {
    pub queue_name: String,
    pub sequence_id: i64,
    pub dedup_id: String,
    pub payload: Option<Value>,
    pub consumed_by: Option<String>,
}

/// A row of the sign-up sample's `user` table.
#[derive(Debug, Clone, PartialEq)]
pub struct UserRow {
    pub form: Option<Value>,
    pub status: Option<String>,
    pub source: Option<String>,
}

/// A row of `test_entity`.
#[derive(Debug, Clone, PartialEq)]
pub struct EntityRow {
    pub counter: i32,
    pub note: Option<String>,
    pub data: Option<Value>,
}

/// A row of the site-creation sample's `site` table.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteRow {
    pub name: Option<String>,
    pub status: String,
    pub metadata_status: Option<String>,
    pub fs_status: Option<String>,
    pub db_status: Option<String>,
    pub bootstrap_status: Option<String>,
}

/// A row of `counted_site` (see [`crate::processes::counted_site`]).
#[derive(Debug, Clone, PartialEq)]
pub struct CountedSiteRow {
    pub site_id: String,
    pub status: String,
    /// The write counters, in the order of `counted_site::COUNTERS`.
    pub counters: [i32; 5],
}

/// A row of `xdb_sys_history_events`.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryRow {
    pub id: i64,
    pub event_type: String,
    pub details: Value,
}

fn uuid(exec_id: &str) -> Arg {
    Arg::Uuid(
        Uuid::parse_str(exec_id).unwrap_or_else(|e| panic!("not an execution id {exec_id:?}: {e}")),
    )
}

impl XdbTestEnv {
    /// Rows of `sql`, written in PostgreSQL's spelling (`$1`, `"quoted"`): see
    /// [`crate::sql`]. Works on both dialects.
    pub async fn query(&self, sql: &str, args: &[Arg]) -> Vec<Row> {
        self.sql().query(sql, args).await
    }

    /// One number from `sql` (e.g. a `count(*)`).
    pub async fn count(&self, sql: &str, args: &[Arg]) -> i64 {
        self.query(sql, args).await[0].i64(0)
    }

    /// The execution row, if it exists.
    pub async fn process_row(&self, exec_id: &str) -> Option<ProcessRow> {
        self.query(
            "SELECT id, process_id, process_type, status, start_time, close_time, \
               running_state_executions, result, failure \
             FROM xdb_sys_process_executions WHERE id = $1",
            &[uuid(exec_id)],
        )
        .await
        .first()
        .map(|r| ProcessRow {
            id: r.uuid(0),
            process_id: r.text(1),
            process_type: r.text(2),
            status: r.text(3),
            start_time: r.time(4),
            close_time: r.opt_time(5),
            running_state_executions: r.i32(6),
            result: r.opt_json(7),
            failure: r.opt_json(8),
        })
    }

    /// Every execution row of `process_id`, oldest first.
    pub async fn process_rows_of(&self, process_id: &str) -> Vec<ProcessRow> {
        let ids: Vec<Uuid> = self
            .query(
                "SELECT id FROM xdb_sys_process_executions WHERE process_id = $1 \
                 ORDER BY start_time, id",
                &[process_id.into()],
            )
            .await
            .iter()
            .map(|r| r.uuid(0))
            .collect();
        let mut rows = Vec::new();
        for id in ids {
            rows.push(self.process_row(&id.to_string()).await.expect("row exists"));
        }
        rows
    }

    /// The execution `xdb_sys_latest_process_executions` names for `process_id`.
    pub async fn latest_execution(&self, process_id: &str) -> Option<String> {
        self.query(
            "SELECT process_execution_id FROM xdb_sys_latest_process_executions \
             WHERE process_id = $1",
            &[process_id.into()],
        )
        .await
        .first()
        .map(|r| r.uuid(0).to_string())
    }

    /// The execution's state rows, in creation order.
    pub async fn state_rows(&self, exec_id: &str) -> Vec<StateRow> {
        self.query(
            "SELECT state_id, state_execution_number, status, version, input, command_request, \
               command_results, last_failure, created_at \
             FROM xdb_sys_async_state_executions WHERE process_execution_id = $1 \
             ORDER BY created_at, state_id, state_execution_number",
            &[uuid(exec_id)],
        )
        .await
        .iter()
        .map(|r| StateRow {
            state_id: r.text(0),
            number: r.i32(1),
            status: r.text(2),
            version: r.i32(3),
            input: r.opt_json(4),
            command_request: r.opt_json(5),
            command_results: r.opt_json(6),
            last_failure: r.opt_json(7),
            created_at: r.time(8),
        })
        .collect()
    }

    /// One state row (`state_id`, `number`), if it exists.
    pub async fn state_row(&self, exec_id: &str, state_id: &str, number: i32) -> Option<StateRow> {
        self.state_rows(exec_id)
            .await
            .into_iter()
            .find(|s| s.state_id == state_id && s.number == number)
    }

    /// The execution's tasks, by id.
    pub async fn tasks(&self, exec_id: &str) -> Vec<TaskRow> {
        self.query(
            "SELECT id, task_type, fire_at, state_id, state_execution_number, timer_index, \
               attempt, lease_owner \
             FROM xdb_sys_tasks WHERE process_execution_id = $1 ORDER BY id",
            &[uuid(exec_id)],
        )
        .await
        .iter()
        .map(|r| TaskRow {
            id: r.i64(0),
            task_type: r.text(1),
            fire_at: r.time(2),
            state_id: r.opt_text(3),
            number: r.opt_i32(4),
            timer_index: r.opt_i32(5),
            attempt: r.i32(6),
            lease_owner: r.opt_text(7),
        })
        .collect()
    }

    /// The execution's local-queue messages, in sequence order.
    pub async fn messages(&self, exec_id: &str) -> Vec<MessageRow> {
        self.query(
            "SELECT queue_name, sequence_id, dedup_id, payload, consumed_by \
             FROM xdb_sys_local_queue_messages WHERE process_execution_id = $1 \
             ORDER BY sequence_id",
            &[uuid(exec_id)],
        )
        .await
        .iter()
        .map(|r| MessageRow {
            queue_name: r.text(0),
            sequence_id: r.i64(1),
            dedup_id: r.text(2),
            payload: r.opt_json(3),
            consumed_by: r.opt_text(4),
        })
        .collect()
    }

    /// The execution's local attributes as `key → stored value` (an encoded object).
    pub async fn local_attributes(&self, exec_id: &str) -> Vec<(String, Value)> {
        self.query(
            "SELECT \"key\", value FROM xdb_sys_local_attributes \
             WHERE process_execution_id = $1 ORDER BY \"key\"",
            &[uuid(exec_id)],
        )
        .await
        .iter()
        .map(|r| (r.text(0), r.json(1)))
        .collect()
    }

    /// Event types of the execution's history rows, oldest first.
    pub async fn history_types(&self, exec_id: &str) -> Vec<String> {
        self.query(
            "SELECT event_type FROM xdb_sys_history_events WHERE process_execution_id = $1 \
             ORDER BY id",
            &[uuid(exec_id)],
        )
        .await
        .iter()
        .map(|r| r.text(0))
        .collect()
    }

    /// The execution's history rows with their details, oldest first.
    pub async fn history(&self, exec_id: &str) -> Vec<HistoryRow> {
        self.query(
            "SELECT id, event_type, details FROM xdb_sys_history_events \
             WHERE process_execution_id = $1 ORDER BY id",
            &[uuid(exec_id)],
        )
        .await
        .iter()
        .map(|r| HistoryRow {
            id: r.i64(0),
            event_type: r.text(1),
            details: r.json(2),
        })
        .collect()
    }

    /// The site-creation sample's `site` row of `site_id`.
    pub async fn site_row(&self, site_id: &str) -> Option<SiteRow> {
        self.query(
            "SELECT name, status, metadata_status, fs_status, db_status, bootstrap_status \
             FROM site WHERE site_id = $1",
            &[site_id.into()],
        )
        .await
        .first()
        .map(|r| SiteRow {
            name: r.opt_text(0),
            status: r.text(1),
            metadata_status: r.opt_text(2),
            fs_status: r.opt_text(3),
            db_status: r.opt_text(4),
            bootstrap_status: r.opt_text(5),
        })
    }

    /// Every `counted_site` row, by site id.
    pub async fn counted_site_rows(&self) -> Vec<CountedSiteRow> {
        self.query(
            "SELECT site_id, status, metadata_writes, fs_writes, db_writes, bootstrap_writes, \
               created_writes FROM counted_site ORDER BY site_id",
            &[],
        )
        .await
        .iter()
        .map(|r| CountedSiteRow {
            site_id: r.text(0),
            status: r.text(1),
            counters: [r.i32(2), r.i32(3), r.i32(4), r.i32(5), r.i32(6)],
        })
        .collect()
    }

    /// The sign-up `user` row of `user_id`.
    pub async fn user_row(&self, user_id: &str) -> Option<UserRow> {
        self.query(
            "SELECT form, status, source FROM \"user\" WHERE user_id = $1",
            &[user_id.into()],
        )
        .await
        .first()
        .map(|r| UserRow {
            form: r.opt_json(0),
            status: r.opt_text(1),
            source: r.opt_text(2),
        })
    }

    /// The `test_entity` row of `id`.
    pub async fn entity_row(&self, id: &str) -> Option<EntityRow> {
        self.query(
            "SELECT counter, note, data FROM test_entity WHERE id = $1",
            &[id.into()],
        )
        .await
        .first()
        .map(|r| EntityRow {
            counter: r.i32(0),
            note: r.opt_text(1),
            data: r.opt_json(2),
        })
    }

    /// Rows in every system table and both business tables, by table: for asserting
    /// that a refused request wrote nothing.
    pub async fn row_counts(&self) -> Vec<(&'static str, i64)> {
        const TABLES: [&str; 9] = [
            "xdb_sys_process_executions",
            "xdb_sys_latest_process_executions",
            "xdb_sys_async_state_executions",
            "xdb_sys_tasks",
            "xdb_sys_local_queue_messages",
            "xdb_sys_local_attributes",
            "xdb_sys_history_events",
            "\"user\"",
            "test_entity",
        ];
        let mut counts = Vec::new();
        for table in TABLES {
            let sql = format!("SELECT count(*) FROM {table}");
            counts.push((table, self.count(&sql, &[]).await));
        }
        counts
    }
}
