//! Describe: one execution's row, as the client sees it.

use xdb_engine::ProcessExecution;
use xdb_protocol::{ProcessExecutionDescribeRequest, ProcessExecutionDescribeResponse};

use super::rows::{parse_execution_id, process_from_row, PROCESS_COLUMNS};
use super::PostgresStore;
use crate::StoreError;

pub(crate) async fn describe_process(
    store: &PostgresStore,
    request: &ProcessExecutionDescribeRequest,
) -> Result<ProcessExecutionDescribeResponse, StoreError> {
    let client = store.pool().get().await?;
    // One statement either way: describe is what wait-for-completion polls.
    let row = match request.process_execution_id.as_deref() {
        Some(id) => {
            let id = parse_execution_id(id)?;
            let statement = client
                .prepare_cached(&format!(
                    "SELECT {PROCESS_COLUMNS} FROM xdb_sys_process_executions \
                     WHERE id = $1 AND process_id = $2"
                ))
                .await?;
            client
                .query_opt(&statement, &[&id, &request.process_id])
                .await?
                .ok_or_else(|| StoreError::NotFound(format!("process execution {id} not found")))?
        }
        None => {
            let statement = client
                .prepare_cached(&format!(
                    "SELECT {PROCESS_COLUMNS} FROM xdb_sys_process_executions \
                     WHERE id = (SELECT process_execution_id FROM xdb_sys_latest_process_executions \
                                 WHERE process_id = $1)"
                ))
                .await?;
            client
                .query_opt(&statement, &[&request.process_id])
                .await?
                .ok_or_else(|| {
                    StoreError::NotFound(format!("process '{}' not found", request.process_id))
                })?
        }
    };
    Ok(describe(process_from_row(&row)?))
}

pub(crate) fn describe(process: ProcessExecution) -> ProcessExecutionDescribeResponse {
    ProcessExecutionDescribeResponse {
        process_execution_id: process.id.to_string(),
        process_id: process.process_id,
        process_type: process.process_type,
        worker_url: process.worker_url,
        status: process.status,
        start_timestamp_ms: process.start_time.timestamp_millis(),
        close_timestamp_ms: process.close_time.map(|t| t.timestamp_millis()),
        running_state_executions: process.running_state_executions,
        result: process.result,
        failure: process.failure,
        global_attribute_config: process.global_attribute_config,
    }
}
