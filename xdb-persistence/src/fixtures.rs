//! Rows for unit tests.

use std::collections::BTreeMap;

use chrono::Utc;
use uuid::Uuid;
use xdb_engine::{ProcessExecution, StateExecution, StateExecutionId, StateExecutionStatus};
use xdb_protocol::{AsyncStateConfig, ProcessStatus};

/// An execution with one running state.
pub(crate) fn process(status: ProcessStatus) -> ProcessExecution {
    ProcessExecution {
        id: Uuid::nil(),
        process_id: "p".into(),
        process_type: "T".into(),
        worker_url: "http://w".into(),
        status,
        start_time: Utc::now(),
        close_time: None,
        timeout_seconds: 0,
        running_state_executions: 1,
        graceful_completion: None,
        state_execution_sequences: BTreeMap::new(),
        global_attribute_config: None,
        result: None,
        failure: None,
        paused: None,
        priority: xdb_protocol::priority::DEFAULT,
        fairness: None,
    }
}

/// State execution `id` (`stateId-number`).
pub(crate) fn state(id: &str, status: StateExecutionStatus) -> StateExecution {
    StateExecution {
        process_execution_id: Uuid::nil(),
        id: StateExecutionId::parse(id).expect("a state execution id"),
        status,
        version: 1,
        input: None,
        config: AsyncStateConfig::default(),
        command_request: None,
        command_progress: None,
        created_at: Utc::now(),
    }
}
