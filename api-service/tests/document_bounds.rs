//! What the served document states of worker answers and history holds for the engine
//! that enforces it: the bounds are the engine's, and the event types the engine writes
//! are those the document lists.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use uuid::Uuid;
use xdb_engine::decide::{complete_execute, complete_rpc, complete_wait_until, DecideError};
use xdb_engine::{
    events, ProcessExecution, StateExecution, StateExecutionId, StateExecutionStatus,
};
use xdb_protocol::limits::worker::{MAX_NEXT_STATES, MAX_QUEUE_COMMAND_COUNT, MAX_TIMER_SECONDS};
use xdb_protocol::{
    AsyncStateConfig, AsyncStateExecuteResponse, AsyncStateWaitUntilResponse, CommandRequest,
    HistoryEventType, LocalQueueCommand, ProcessRpcWorkerResponse, ProcessStatus, StateDecision,
    StateMovement, TimerCommand,
};

fn process() -> ProcessExecution {
    ProcessExecution {
        id: Uuid::nil(),
        process_id: "p".into(),
        process_type: "T".into(),
        worker_url: "http://w".into(),
        status: ProcessStatus::Running,
        start_time: DateTime::<Utc>::UNIX_EPOCH,
        close_time: None,
        timeout_seconds: 0,
        running_state_executions: 1,
        graceful_completion: None,
        state_execution_sequences: BTreeMap::from([("A".to_string(), 1)]),
        global_attribute_config: None,
        result: None,
        failure: None,
        paused: None,
        priority: xdb_protocol::priority::DEFAULT,
        fairness: None,
    }
}

fn state(status: StateExecutionStatus) -> StateExecution {
    StateExecution {
        process_execution_id: Uuid::nil(),
        id: StateExecutionId {
            state_id: "A".into(),
            number: 1,
        },
        status,
        version: 1,
        input: None,
        config: AsyncStateConfig::default(),
        command_request: None,
        command_progress: None,
        created_at: DateTime::<Utc>::UNIX_EPOCH,
    }
}

fn wait_until(request: CommandRequest) -> Result<(), DecideError> {
    let response = AsyncStateWaitUntilResponse {
        command_request: request,
        ..Default::default()
    };
    let waiting = state(StateExecutionStatus::WaitUntilRunning);
    complete_wait_until(&process(), &waiting, &response, &[], &[], Utc::now()).map(|_| ())
}

fn movements(count: usize) -> Vec<StateMovement> {
    let movement = StateMovement {
        state_id: "A".into(),
        state_input: None,
        state_config: None,
    };
    vec![movement; count]
}

#[test]
fn timers_and_queue_counts_are_bounded_as_stated() {
    let timer = |seconds| CommandRequest {
        timer_commands: vec![TimerCommand {
            delay_in_seconds: seconds,
        }],
        ..Default::default()
    };
    assert!(wait_until(timer(MAX_TIMER_SECONDS)).is_ok());
    assert!(wait_until(timer(MAX_TIMER_SECONDS + 1)).is_err());
    let queue = |count| CommandRequest {
        local_queue_commands: vec![LocalQueueCommand {
            queue_name: "q".into(),
            count: Some(count),
        }],
        ..Default::default()
    };
    assert!(wait_until(queue(MAX_QUEUE_COMMAND_COUNT)).is_ok());
    assert!(wait_until(queue(MAX_QUEUE_COMMAND_COUNT + 1)).is_err());
}

#[test]
fn next_states_are_bounded_as_stated() {
    let execute = |count| {
        let response = AsyncStateExecuteResponse {
            state_decision: StateDecision {
                next_states: movements(count),
                thread_close_decision: None,
            },
            ..Default::default()
        };
        let running = state(StateExecutionStatus::ExecuteRunning);
        complete_execute(&process(), &running, &response, Utc::now()).map(|_| ())
    };
    assert!(execute(MAX_NEXT_STATES).is_ok());
    assert!(execute(MAX_NEXT_STATES + 1).is_err());
    let rpc = |count| {
        let response = ProcessRpcWorkerResponse {
            append_next_states: movements(count),
            ..Default::default()
        };
        complete_rpc(&process(), "r", &response, Utc::now()).map(|_| ())
    };
    assert!(rpc(MAX_NEXT_STATES).is_ok());
    assert!(rpc(MAX_NEXT_STATES + 1).is_err());
}

#[test]
fn the_engine_writes_the_event_types_the_document_lists() {
    let written = [
        events::PROCESS_STARTED,
        events::PROCESS_CLOSED,
        events::WAIT_UNTIL_COMPLETED,
        events::EXECUTE_COMPLETED,
        events::STATE_API_FAILED,
        events::STATE_FAILED,
        events::TIMER_FIRED,
        events::LOCAL_QUEUE_MESSAGES_PUBLISHED,
        events::LOCAL_QUEUE_MESSAGES_CONSUMED,
        events::RPC_COMPLETED,
        // Written by the operator's controls and the async service's parking (in
        // `xdb-persistence`, with the protocol's names).
        HistoryEventType::RetryRequested.as_str(),
        HistoryEventType::GiveUpRequested.as_str(),
        HistoryEventType::Paused.as_str(),
        HistoryEventType::Resumed.as_str(),
        HistoryEventType::TaskParked.as_str(),
        // Written by the reset's plan (`xdb-engine/src/decide/reset.rs`).
        HistoryEventType::ProcessReset.as_str(),
        // Written by the reprioritize control (`xdb-persistence`).
        HistoryEventType::Reprioritized.as_str(),
    ];
    let listed: Vec<&str> = HistoryEventType::ALL.iter().map(|t| t.as_str()).collect();
    assert_eq!(written.as_slice(), listed.as_slice());
}
