//! History event types and the shape of each one's `details`, so clients can read a
//! history without guessing. [`crate::HistoryEvent`] carries them untyped (as stored);
//! [`HistoryEventType::parse`] and these structs read them typed.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{CommandRequest, ProcessStatus, StateDecision};

/// What happened to the execution; each type has its own `details` schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum HistoryEventType {
    ProcessStarted,
    ProcessClosed,
    WaitUntilCompleted,
    ExecuteCompleted,
    StateApiFailed,
    StateFailed,
    TimerFired,
    LocalQueueMessagesPublished,
    LocalQueueMessagesConsumed,
    RpcCompleted,
    RetryRequested,
    GiveUpRequested,
    Paused,
    Resumed,
    TaskParked,
    ProcessReset,
    Reprioritized,
}

impl HistoryEventType {
    pub const ALL: [HistoryEventType; 17] = [
        HistoryEventType::ProcessStarted,
        HistoryEventType::ProcessClosed,
        HistoryEventType::WaitUntilCompleted,
        HistoryEventType::ExecuteCompleted,
        HistoryEventType::StateApiFailed,
        HistoryEventType::StateFailed,
        HistoryEventType::TimerFired,
        HistoryEventType::LocalQueueMessagesPublished,
        HistoryEventType::LocalQueueMessagesConsumed,
        HistoryEventType::RpcCompleted,
        HistoryEventType::RetryRequested,
        HistoryEventType::GiveUpRequested,
        HistoryEventType::Paused,
        HistoryEventType::Resumed,
        HistoryEventType::TaskParked,
        HistoryEventType::ProcessReset,
        HistoryEventType::Reprioritized,
    ];

    /// The name on the wire (and in `xdb_sys_history`).
    pub fn as_str(self) -> &'static str {
        match self {
            HistoryEventType::ProcessStarted => "PROCESS_STARTED",
            HistoryEventType::ProcessClosed => "PROCESS_CLOSED",
            HistoryEventType::WaitUntilCompleted => "WAIT_UNTIL_COMPLETED",
            HistoryEventType::ExecuteCompleted => "EXECUTE_COMPLETED",
            HistoryEventType::StateApiFailed => "STATE_API_FAILED",
            HistoryEventType::StateFailed => "STATE_FAILED",
            HistoryEventType::TimerFired => "TIMER_FIRED",
            HistoryEventType::LocalQueueMessagesPublished => "LOCAL_QUEUE_MESSAGES_PUBLISHED",
            HistoryEventType::LocalQueueMessagesConsumed => "LOCAL_QUEUE_MESSAGES_CONSUMED",
            HistoryEventType::RpcCompleted => "RPC_COMPLETED",
            HistoryEventType::RetryRequested => "RETRY_REQUESTED",
            HistoryEventType::GiveUpRequested => "GIVE_UP_REQUESTED",
            HistoryEventType::Paused => "PAUSED",
            HistoryEventType::Resumed => "RESUMED",
            HistoryEventType::TaskParked => "TASK_PARKED",
            HistoryEventType::ProcessReset => "PROCESS_RESET",
            HistoryEventType::Reprioritized => "REPRIORITIZED",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == text)
    }

    /// The component schema of this type's `details`.
    pub fn details_schema(self) -> &'static str {
        match self {
            HistoryEventType::ProcessStarted => "ProcessStartedDetails",
            HistoryEventType::ProcessClosed => "ProcessClosedDetails",
            HistoryEventType::WaitUntilCompleted => "WaitUntilCompletedDetails",
            HistoryEventType::ExecuteCompleted => "ExecuteCompletedDetails",
            HistoryEventType::StateApiFailed | HistoryEventType::StateFailed => {
                "StateApiFailureDetails"
            }
            HistoryEventType::TimerFired => "TimerFiredDetails",
            HistoryEventType::LocalQueueMessagesPublished => "LocalQueueMessagesPublishedDetails",
            HistoryEventType::LocalQueueMessagesConsumed => "LocalQueueMessagesConsumedDetails",
            HistoryEventType::RpcCompleted => "RpcCompletedDetails",
            HistoryEventType::RetryRequested
            | HistoryEventType::GiveUpRequested
            | HistoryEventType::Paused
            | HistoryEventType::Resumed => "ControlDetails",
            HistoryEventType::TaskParked => "TaskParkedDetails",
            HistoryEventType::ProcessReset => "ProcessResetDetails",
            HistoryEventType::Reprioritized => "ReprioritizedDetails",
        }
    }

    /// When the event is written, as the document states it.
    pub fn meaning(self) -> &'static str {
        match self {
            HistoryEventType::ProcessStarted => "The execution started (its first event).",
            HistoryEventType::ProcessClosed => {
                "The execution closed: completed, failed, timed out or terminated (its last \
                 event)."
            }
            HistoryEventType::WaitUntilCompleted => {
                "A state's waitUntil answered; the state now waits for its commands."
            }
            HistoryEventType::ExecuteCompleted => "A state's execute answered with its decision.",
            HistoryEventType::StateApiFailed => {
                "An attempt of a state's waitUntil or execute failed and will be retried by \
                 the state's retry policy."
            }
            HistoryEventType::StateFailed => {
                "A state's waitUntil or execute failed for the last time (its retry policy \
                 is exhausted): its failure recovery applies."
            }
            HistoryEventType::TimerFired => "A durable timer of a waiting state fired.",
            HistoryEventType::LocalQueueMessagesPublished => {
                "Messages were published to the execution's local queues: by a client, an \
                 RPC or a state's waitUntil or execute (whichever, `details` says)."
            }
            HistoryEventType::LocalQueueMessagesConsumed => {
                "A waiting state took messages of one of its queue commands: one event per \
                 command completed, whether the messages were queued before the wait began \
                 or arrived during it."
            }
            HistoryEventType::RpcCompleted => "An RPC answered and its writes committed.",
            HistoryEventType::RetryRequested => {
                "An operator asked for waiting retries to run now (`retry-now`): calls \
                 waiting for their backoff became due, parked tasks were released."
            }
            HistoryEventType::GiveUpRequested => {
                "An operator gave up on failing states (`give-up`): each goes to its \
                 failure recovery (a `STATE_FAILED` follows)."
            }
            HistoryEventType::Paused => {
                "An operator paused the execution: nothing of it is called until it resumes."
            }
            HistoryEventType::Resumed => {
                "An operator resumed the execution: what fell due meanwhile runs now."
            }
            HistoryEventType::TaskParked => {
                "A task is set aside until `retry-now` or `give-up`: the database refused \
                 its transition too many times in a row (`REFUSED`), or the worker answered \
                 its call with an error that can never succeed \
                 (`NON_RETRYABLE_WORKER_ERROR`)."
            }
            HistoryEventType::ProcessReset => {
                "An operator reset the execution to a state (`reset`): its open state \
                 executions were aborted, their calls, timers and waits cancelled (queued \
                 messages stay), and the named state started with the given input. On a \
                 closed execution, the reset starts a new execution (this event follows its \
                 `PROCESS_STARTED`, with `resetFrom`)."
            }
            HistoryEventType::Reprioritized => {
                "An operator changed the execution's priority or fairness key \
                 (`reprioritize`): its waiting tasks, and those it writes later, are \
                 ordered by the new ones."
            }
        }
    }
}

/// `PROCESS_STARTED`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessStartedDetails {
    pub process_type: String,
    /// Absent when the process started with no state.
    #[serde(default)]
    pub start_state_id: Option<String>,
    /// The execution `TERMINATE_IF_RUNNING` terminated, if one was running.
    #[serde(default)]
    pub terminated_previous: Option<String>,
    /// Set when a reset of the closed execution of this id started this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_from: Option<String>,
}

/// `PROCESS_RESET`: where the execution was reset to, and what the reset closed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessResetDetails {
    /// The state execution the reset started (`stateId-number`).
    pub state_execution_id: String,
    /// The state executions the reset aborted (none for a closed execution).
    pub closed_state_execution_ids: Vec<String>,
    /// The closed execution this one was reset from; absent for a running one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_from: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub identity: Option<String>,
}

/// `PROCESS_CLOSED`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessClosedDetails {
    pub status: ProcessStatus,
    /// Why it did not complete (the failure's `reason`); absent when it completed.
    #[serde(default)]
    pub failure: Option<String>,
}

/// `WAIT_UNTIL_COMPLETED`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaitUntilCompletedDetails {
    /// `stateId-executionNumber`.
    pub state_execution_id: String,
    pub command_request: CommandRequest,
}

/// `EXECUTE_COMPLETED`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecuteCompletedDetails {
    pub state_execution_id: String,
    pub decision: StateDecision,
}

/// Which state API an event is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum StateApiName {
    WaitUntil,
    Execute,
}

/// `STATE_API_FAILED` and `STATE_FAILED`; also the input (as a JSON payload) of the state
/// a failure recovery proceeds to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StateApiFailureDetails {
    pub state_execution_id: String,
    pub api: StateApiName,
    /// The attempt that failed (1-based).
    pub attempt: u32,
    /// How it failed: the worker's status and detail, a timeout, an unusable answer.
    pub error: String,
    /// The worker's `errorType` when it answered one that can never succeed (see
    /// `WorkerErrorType`): the attempt was not retried, and its call is parked
    /// (`TASK_PARKED`).
    #[serde(default)]
    pub non_retryable_error_type: Option<String>,
}

/// `TIMER_FIRED`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimerFiredDetails {
    pub state_execution_id: String,
    /// The timer's index in the state's `timerCommands`.
    pub timer_index: u32,
}

/// `LOCAL_QUEUE_MESSAGES_PUBLISHED`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueMessagesPublishedDetails {
    /// Messages in the request.
    pub messages: u64,
    /// Of those, dropped as duplicates of an earlier `dedupId`.
    pub duplicates: u64,
    /// The state whose waitUntil or execute published them; absent for a client's
    /// publish and an RPC's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_execution_id: Option<String>,
    /// The RPC that published them; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpc_name: Option<String>,
}

/// `LOCAL_QUEUE_MESSAGES_CONSUMED`: one queue command of a waiting state took its messages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueMessagesConsumedDetails {
    /// The waiting state that received them.
    pub state_execution_id: String,
    /// The queue the command waited on. Absent in events of earlier releases.
    #[serde(default)]
    pub queue_name: Option<String>,
    /// The messages taken, in queue order. Empty in events of earlier releases.
    #[serde(default)]
    #[schema(default = json!([]))]
    pub messages: Vec<ConsumedMessage>,
}

/// One message a state took from its local queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConsumedMessage {
    /// The message's position in the execution's queues (unique per execution).
    pub sequence_id: i64,
    /// The `dedupId` it was published with, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedup_id: Option<String>,
}

/// `RPC_COMPLETED`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RpcCompletedDetails {
    pub rpc_name: String,
    /// State ids of the threads the RPC started.
    pub appended_states: Vec<String>,
    /// Messages the RPC published.
    pub published: u64,
}
