//! The system tables' column lists, and the models read from a row's columns in their
//! order. A dialect supplies only how one column of each kind converts
//! ([`ColumnReader`]: by position where the driver allows, by name otherwise); what a
//! row means is read here, once.

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use uuid::Uuid;
use xdb_engine::{
    ProcessExecution, StateExecution, StateExecutionId, StateExecutionStatus, Task, TaskType,
};
use xdb_protocol::ProcessStatus;

use crate::trace_context::TaskInfo;
use crate::StoreError;

pub(crate) const PROCESS_COLUMNS: &str = "id, process_id, process_type, worker_url, status, \
    start_time, close_time, timeout_seconds, running_state_executions, graceful_completion, \
    state_execution_sequences, global_attribute_config, result, failure, paused, priority, \
    fairness_key, fairness_weight";

/// Columns in [`PROCESS_COLUMNS`] order.
pub(crate) const PROCESS_COLUMN_COUNT: usize = 18;

pub(crate) const STATE_COLUMNS: &str = "process_execution_id, state_id, state_execution_number, \
    status, version, input, config, command_request, command_results, created_at";
/// How many columns [`STATE_COLUMNS`] lists.
pub(crate) const STATE_COLUMN_COUNT: usize = 10;

pub(crate) const TASK_COLUMNS: &str = "id, task_type, fire_at, process_execution_id, state_id, \
    state_execution_number, timer_index, attempt, first_attempt_at, info";

/// Columns in [`TASK_COLUMNS`] order.
pub(crate) const TASK_COLUMN_COUNT: usize = 10;

/// One row's columns, each read once, in the order of the `*_COLUMNS` list the
/// statement selected.
pub(crate) trait ColumnReader {
    fn uuid(&mut self) -> Result<Uuid, StoreError>;
    fn text(&mut self) -> Result<String, StoreError>;
    fn optional_text(&mut self) -> Result<Option<String>, StoreError>;
    fn int(&mut self) -> Result<i32, StoreError>;
    fn optional_int(&mut self) -> Result<Option<i32>, StoreError>;
    fn bigint(&mut self) -> Result<i64, StoreError>;
    fn time(&mut self) -> Result<DateTime<Utc>, StoreError>;
    fn optional_time(&mut self) -> Result<Option<DateTime<Utc>>, StoreError>;
    /// A JSON column parsed into `T`; SQL NULL and JSON `null` are `None`.
    fn json<T: DeserializeOwned>(&mut self) -> Result<Option<T>, StoreError>;
}

/// `text` as the value `parse` finds, or a corrupt-row error naming `what`.
fn parsed<T>(text: String, parse: fn(&str) -> Option<T>, what: &str) -> Result<T, StoreError> {
    parse(&text).ok_or_else(|| StoreError::Database(format!("unknown {what} {text}")))
}

/// The execution whose [`PROCESS_COLUMNS`] come next.
pub(crate) fn read_process(row: &mut impl ColumnReader) -> Result<ProcessExecution, StoreError> {
    Ok(ProcessExecution {
        id: row.uuid()?,
        process_id: row.text()?,
        process_type: row.text()?,
        worker_url: row.text()?,
        status: parsed(row.text()?, ProcessStatus::parse, "process status")?,
        start_time: row.time()?,
        close_time: row.optional_time()?,
        timeout_seconds: row.int()?,
        running_state_executions: row.int()?,
        graceful_completion: row.json()?,
        state_execution_sequences: row.json()?.unwrap_or_default(),
        global_attribute_config: row.json()?,
        result: row.json()?,
        failure: row.json()?,
        paused: row.json()?,
        priority: priority_of(row.int()?)?,
        fairness: fairness_of(row.text()?, row.int()?),
    })
}

/// The `fairness_key` and `fairness_weight` columns' values: the empty key is the one
/// executions without a key share.
pub(crate) fn fairness_of(key: String, weight: i32) -> Option<xdb_engine::Fairness> {
    (!key.is_empty()).then(|| xdb_engine::Fairness {
        key,
        weight: u32::try_from(weight).unwrap_or(xdb_protocol::fairness::DEFAULT_WEIGHT),
    })
}

/// The fairness key a task of `task_type` of an execution keyed by `fairness` carries:
/// only state tasks are shared by key. Timers and timeouts are claimed by due time,
/// ahead of every priority, and a keyed timer waiting an hour out would otherwise be
/// walked by every claim's look for keyed tasks due.
pub(crate) fn task_fairness(
    fairness: Option<&xdb_engine::Fairness>,
    task_type: TaskType,
) -> Option<&xdb_engine::Fairness> {
    fairness.filter(|_| matches!(task_type, TaskType::WaitUntil | TaskType::Execute))
}

/// The `fairness_key` and `fairness_weight` values an execution's rows are written with.
pub(crate) fn fairness_columns(fairness: Option<&xdb_engine::Fairness>) -> (&str, i32) {
    fairness.map_or(("", xdb_protocol::fairness::DEFAULT_WEIGHT as i32), |f| {
        (f.key.as_str(), f.weight as i32)
    })
}

/// A `priority` column's value.
pub(crate) fn priority_of(priority: i32) -> Result<u8, StoreError> {
    u8::try_from(priority).map_err(|_| StoreError::Database(format!("unknown priority {priority}")))
}

/// The state whose [`STATE_COLUMNS`] come next.
pub(crate) fn read_state(row: &mut impl ColumnReader) -> Result<StateExecution, StoreError> {
    Ok(StateExecution {
        process_execution_id: row.uuid()?,
        id: StateExecutionId {
            state_id: row.text()?,
            number: row.int()?,
        },
        status: parsed(row.text()?, StateExecutionStatus::parse, "state status")?,
        version: row.int()?,
        input: row.json()?,
        config: row.json()?.unwrap_or_default(),
        command_request: row.json()?,
        command_progress: row.json()?,
        created_at: row.time()?,
    })
}

/// The task whose [`TASK_COLUMNS`] come next.
pub(crate) fn read_task(row: &mut impl ColumnReader) -> Result<Task, StoreError> {
    read_task_with_info(row).map(|(task, _)| task)
}

/// [`read_task`], with the row's `info` beside it.
pub(crate) fn read_task_with_info(
    row: &mut impl ColumnReader,
) -> Result<(Task, TaskInfo), StoreError> {
    let id = row.bigint()?;
    let task_type = parsed(row.text()?, TaskType::parse, "task type")?;
    let fire_at = row.time()?;
    let process_execution_id = row.uuid()?;
    let state_id = row.optional_text()?;
    let number = row.optional_int()?;
    let mut task = Task {
        id,
        task_type,
        fire_at,
        process_execution_id,
        state: state_id
            .zip(number)
            .map(|(state_id, number)| StateExecutionId { state_id, number }),
        timer_index: row.optional_int()?,
        attempt: row.int()?,
        first_attempt_at: row.optional_time()?,
        traceparent: None,
    };
    let mut info = row.json::<TaskInfo>()?.unwrap_or_default();
    task.traceparent = info.traceparent.take();
    Ok((task, info))
}

/// `columns` (a `*_COLUMNS` list) qualified with `table`, e.g. `p.id, p.process_id`.
pub(crate) fn qualified(columns: &str, table: &str) -> String {
    columns
        .split(", ")
        .map(|column| format!("{table}.{column}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_counts_match_the_column_lists() {
        assert_eq!(PROCESS_COLUMNS.split(", ").count(), PROCESS_COLUMN_COUNT);
        assert_eq!(STATE_COLUMNS.split(", ").count(), STATE_COLUMN_COUNT);
        assert_eq!(TASK_COLUMNS.split(", ").count(), TASK_COLUMN_COUNT);
        assert_eq!(qualified("a, b", "t"), "t.a, t.b");
    }

    /// Columns as JSON values, read in order as a driver would convert them.
    struct Values(std::vec::IntoIter<serde_json::Value>);

    impl Values {
        fn of(values: Vec<serde_json::Value>) -> Self {
            Values(values.into_iter())
        }
        fn value<T: DeserializeOwned>(&mut self) -> Result<T, StoreError> {
            let value = self.0.next().expect("a column left");
            serde_json::from_value(value).map_err(|e| StoreError::Database(e.to_string()))
        }
    }

    impl ColumnReader for Values {
        fn uuid(&mut self) -> Result<Uuid, StoreError> {
            self.value()
        }
        fn text(&mut self) -> Result<String, StoreError> {
            self.value()
        }
        fn optional_text(&mut self) -> Result<Option<String>, StoreError> {
            self.value()
        }
        fn int(&mut self) -> Result<i32, StoreError> {
            self.value()
        }
        fn optional_int(&mut self) -> Result<Option<i32>, StoreError> {
            self.value()
        }
        fn bigint(&mut self) -> Result<i64, StoreError> {
            self.value()
        }
        fn time(&mut self) -> Result<DateTime<Utc>, StoreError> {
            self.value()
        }
        fn optional_time(&mut self) -> Result<Option<DateTime<Utc>>, StoreError> {
            self.value()
        }
        fn json<T: DeserializeOwned>(&mut self) -> Result<Option<T>, StoreError> {
            self.value()
        }
    }

    fn task_row(task_type: &str, state_id: serde_json::Value) -> Values {
        Values::of(vec![
            7.into(),
            task_type.into(),
            "2026-01-02T03:04:05.000006Z".into(),
            "6f9619ff-8b86-d011-b42d-00c04fc964ff".into(),
            state_id,
            2.into(),
            serde_json::Value::Null,
            1.into(),
            serde_json::Value::Null,
            serde_json::json!({ "traceparent": "00-trace" }),
        ])
    }

    #[test]
    fn a_task_is_read_in_task_column_order() {
        let task = read_task(&mut task_row("EXECUTE", "s".into())).unwrap();
        assert_eq!(task.id, 7);
        assert_eq!(task.task_type, TaskType::parse("EXECUTE").unwrap());
        assert_eq!(task.fire_at.timestamp_subsec_micros(), 6);
        assert_eq!(
            task.state,
            Some(StateExecutionId {
                state_id: "s".into(),
                number: 2
            })
        );
        assert_eq!((task.timer_index, task.attempt), (None, 1));
        assert_eq!(task.first_attempt_at, None);
        assert_eq!(task.traceparent.as_deref(), Some("00-trace"));
        let without_state = read_task(&mut task_row("TIMER", serde_json::Value::Null)).unwrap();
        assert_eq!(without_state.state, None);
    }

    #[test]
    fn an_unknown_task_type_is_a_corrupt_row() {
        let error = read_task(&mut task_row("SOMETHING", "s".into())).unwrap_err();
        assert!(
            matches!(&error, StoreError::Database(m) if m == "unknown task type SOMETHING"),
            "{error:?}"
        );
    }
}
