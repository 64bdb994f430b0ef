//! Reads for clients: describe an execution, its history, and its attributes (for the
//! web console).

use xdb_engine::decide::DecideError;
use xdb_engine::validation::ValidationError;
use xdb_engine::ProcessExecution;
use xdb_protocol::limits::PAGE_SIZE_CEILING;
use xdb_protocol::{
    BusinessRow, ProcessExecutionAttributesRequest, ProcessExecutionAttributesResponse,
    ProcessExecutionDescribeRequest, ProcessExecutionDescribeResponse,
    ProcessExecutionHistoryRequest, ProcessExecutionHistoryResponse,
};

use crate::tables::{
    AttributeRows, Dialect, HistoryQuery, HistoryRows, Lane, OperatorRows, ProcessRows,
};
use crate::StoreError;

/// Describe: one execution's row, as the client sees it; with `count_parked`, also how
/// many of its tasks are parked (a statement more, which wait-for-completion's polls of
/// a running execution do without).
pub(crate) async fn describe_process<D: Dialect>(
    store: &D,
    request: &ProcessExecutionDescribeRequest,
    count_parked: bool,
) -> Result<ProcessExecutionDescribeResponse, StoreError> {
    let execution_id = request
        .process_execution_id
        .as_deref()
        .map(crate::parse_execution_id)
        .transpose()?;
    let mut session = store.session(Lane::Main).await?;
    let process = session
        .find_execution(&request.process_id, execution_id)
        .await?
        .ok_or_else(|| match execution_id {
            Some(id) => StoreError::NotFound(format!("process execution {id} not found")),
            None => StoreError::NotFound(format!("process '{}' not found", request.process_id)),
        })?;
    let parked_tasks = if process.status.is_closed() || !count_parked {
        0
    } else {
        session.count_refused(process.id).await?
    };
    let mut described = describe(process);
    described.parked_tasks = u32::try_from(parked_tasks).unwrap_or(u32::MAX);
    Ok(described)
}

/// Attributes: every local attribute of an execution and its whole business row, read
/// in one session without locks (a page to look at, not a consistent snapshot).
pub(crate) async fn process_attributes<D: Dialect>(
    store: &D,
    request: &ProcessExecutionAttributesRequest,
) -> Result<ProcessExecutionAttributesResponse, StoreError> {
    let mut session = store.session(Lane::Main).await?;
    let id = session
        .resolve_execution(&request.process_id, request.process_execution_id.as_deref())
        .await?;
    let process = session.read_process(id).await?;
    let global_attributes = match &process.global_attribute_config {
        Some(config) => Some(BusinessRow {
            table_name: config.table_name.clone(),
            primary_key: config.primary_key.clone(),
            row: session.read_whole_business_row(config).await?,
        }),
        None => None,
    };
    Ok(ProcessExecutionAttributesResponse {
        process_execution_id: id.to_string(),
        global_attributes,
        local_attributes: session.all_local_attributes(id).await?,
    })
}

/// History: one page of an execution's events, oldest first, of the types asked for.
pub(crate) async fn process_history<D: Dialect>(
    store: &D,
    request: &ProcessExecutionHistoryRequest,
) -> Result<ProcessExecutionHistoryResponse, StoreError> {
    let page_size = request.page_size.unwrap_or(PAGE_SIZE_CEILING);
    if page_size == 0 || page_size > PAGE_SIZE_CEILING {
        return Err(StoreError::Decide(DecideError::Invalid(
            ValidationError::new(
                "pageSize",
                format!("must be between 1 and {PAGE_SIZE_CEILING}"),
            ),
        )));
    }
    let event_types: Vec<&'static str> = request.event_types.iter().map(|t| t.as_str()).collect();
    // One more than the page: whether another page follows.
    let query = HistoryQuery {
        after_event_id: request.after_event_id,
        event_types: &event_types,
        limit: i64::from(page_size) + 1,
        newest_first: false,
    };
    let mut session = store.session(Lane::Main).await?;
    let id = session
        .resolve_execution(&request.process_id, request.process_execution_id.as_deref())
        .await?;
    let mut events = session
        .read_history(id, &request.process_id, &query)
        .await?;
    let more = events.len() > page_size as usize;
    events.truncate(page_size as usize);
    Ok(ProcessExecutionHistoryResponse {
        process_execution_id: id.to_string(),
        next_after_event_id: more.then(|| events.last().map(|e| e.event_id)).flatten(),
        events,
    })
}

/// An execution row as the API describes it.
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
        // A closed execution's mark no longer holds anything back.
        paused: process.paused.filter(|_| !process.status.is_closed()),
        parked_tasks: 0,
        priority: process.priority,
        fairness_weight: process.fairness.as_ref().map(|f| f.weight),
        fairness_key: process.fairness.map(|f| f.key),
    }
}
