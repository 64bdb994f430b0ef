//! The system tables' column lists, in the order every dialect's row conversions read
//! them (by position where the driver allows, by name otherwise).

pub(crate) const PROCESS_COLUMNS: &str = "id, process_id, process_type, worker_url, status, \
    start_time, close_time, timeout_seconds, running_state_executions, graceful_completion, \
    state_execution_sequences, global_attribute_config, result, failure, paused";

/// Columns in [`PROCESS_COLUMNS`] order.
pub(crate) const PROCESS_COLUMN_COUNT: usize = 15;

pub(crate) const STATE_COLUMNS: &str = "process_execution_id, state_id, state_execution_number, \
    status, version, input, config, command_request, command_results, created_at";

pub(crate) const TASK_COLUMNS: &str = "id, task_type, fire_at, process_execution_id, state_id, \
    state_execution_number, timer_index, attempt, first_attempt_at, info";

/// Columns in [`TASK_COLUMNS`] order.
pub(crate) const TASK_COLUMN_COUNT: usize = 10;

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
        assert_eq!(STATE_COLUMNS.split(", ").count(), 10);
        assert_eq!(TASK_COLUMNS.split(", ").count(), TASK_COLUMN_COUNT);
        assert_eq!(qualified("a, b", "t"), "t.a, t.b");
    }
}
