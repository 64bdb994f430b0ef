//! Rows of the system tables as the state machine sees them.

use std::collections::BTreeMap;
use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;
use xdb_protocol::{
    AsyncStateConfig, CommandRequest, CommandResults, EncodedObject, GlobalAttributeConfig,
    LocalQueueMessage, ProcessFailure, ProcessStatus,
};

/// Lifecycle of one state execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StateExecutionStatus {
    /// waitUntil is due or being called.
    WaitUntilRunning,
    /// waitUntil answered; waiting for its commands.
    WaitingCommands,
    /// execute is due or being called.
    ExecuteRunning,
    Completed,
    /// Its API failed for good (retries exhausted).
    Failed,
    /// Ended by the process closing (stop, timeout, force complete/fail).
    Aborted,
}

impl StateExecutionStatus {
    const ALL: [StateExecutionStatus; 6] = [
        Self::WaitUntilRunning,
        Self::WaitingCommands,
        Self::ExecuteRunning,
        Self::Completed,
        Self::Failed,
        Self::Aborted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::WaitUntilRunning => "WAIT_UNTIL_RUNNING",
            Self::WaitingCommands => "WAITING_COMMANDS",
            Self::ExecuteRunning => "EXECUTE_RUNNING",
            Self::Completed => "COMPLETED",
            Self::Failed => "FAILED",
            Self::Aborted => "ABORTED",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// Whether the state still counts as a running thread.
    pub fn is_active(self) -> bool {
        matches!(
            self,
            Self::WaitUntilRunning | Self::WaitingCommands | Self::ExecuteRunning
        )
    }
}

/// `stateId` plus the execution number: a state may run any number of times.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct StateExecutionId {
    pub state_id: String,
    pub number: i32,
}

impl StateExecutionId {
    /// Reads `stateId-number` (as [`fmt::Display`] writes it); the number is after the
    /// last `-`, as a state id may contain dashes itself.
    pub fn parse(text: &str) -> Option<Self> {
        let (state_id, number) = text.rsplit_once('-')?;
        let number: i32 = number.parse().ok()?;
        (!state_id.is_empty() && number >= 1).then(|| Self {
            state_id: state_id.to_owned(),
            number,
        })
    }
}

impl fmt::Display for StateExecutionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.state_id, self.number)
    }
}

/// A row of `xdb_sys_process_executions`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessExecution {
    pub id: Uuid,
    pub process_id: String,
    pub process_type: String,
    pub worker_url: String,
    pub status: ProcessStatus,
    pub start_time: DateTime<Utc>,
    pub close_time: Option<DateTime<Utc>>,
    pub timeout_seconds: i32,
    pub running_state_executions: i32,
    /// `Some(output)` once a thread decided graceful completion.
    pub graceful_completion: Option<GracefulCompletion>,
    pub state_execution_sequences: BTreeMap<String, i32>,
    pub global_attribute_config: Option<GlobalAttributeConfig>,
    pub result: Option<EncodedObject>,
    pub failure: Option<ProcessFailure>,
    /// Set while an operator has paused the execution: its tasks are set aside.
    pub paused: Option<xdb_protocol::PauseInfo>,
    /// The priority its tasks are claimed by, 1 (first) to 5.
    pub priority: u8,
    /// The key claims share its priority by, with its weight; `None`: the key every
    /// execution without one shares.
    pub fairness: Option<Fairness>,
}

/// A fairness key and its weight (`processStartConfig.fairnessKey`, `fairnessWeight`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fairness {
    /// Not empty: the empty key stands for executions without one.
    pub key: String,
    /// Tasks the key takes in each turn, 1 to [`xdb_protocol::fairness::MAX_WEIGHT`].
    pub weight: u32,
}

/// A pending graceful completion and its output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GracefulCompletion {
    pub output: Option<EncodedObject>,
}

/// A row of `xdb_sys_async_state_executions`.
#[derive(Debug, Clone, PartialEq)]
pub struct StateExecution {
    pub process_execution_id: Uuid,
    pub id: StateExecutionId,
    pub status: StateExecutionStatus,
    pub version: i32,
    pub input: Option<EncodedObject>,
    pub config: AsyncStateConfig,
    pub command_request: Option<CommandRequest>,
    pub command_progress: Option<CommandProgress>,
    pub created_at: DateTime<Utc>,
}

/// Which commands of a waiting state completed so far.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandProgress {
    /// One flag per timer command: fired.
    pub timers_fired: Vec<bool>,
    /// One entry per local-queue command: the messages consumed for it, once complete.
    pub queues_received: Vec<Option<Vec<LocalQueueMessage>>>,
}

impl CommandProgress {
    pub fn new(request: &CommandRequest) -> Self {
        Self {
            timers_fired: vec![false; request.timer_commands.len()],
            queues_received: vec![None; request.local_queue_commands.len()],
        }
    }

    /// Whether the request's waiting type is satisfied.
    pub fn is_satisfied(&self, request: &CommandRequest) -> bool {
        let total = self.timers_fired.len() + self.queues_received.len();
        if total == 0 {
            return true;
        }
        let done = self.timers_fired.iter().filter(|f| **f).count()
            + self.queues_received.iter().filter(|q| q.is_some()).count();
        match request.waiting_type {
            xdb_protocol::CommandWaitingType::AnyOfCompletion => done > 0,
            xdb_protocol::CommandWaitingType::AllOfCompletion => done == total,
        }
    }

    /// The results handed to execute.
    pub fn to_results(&self, request: &CommandRequest) -> CommandResults {
        use xdb_protocol::{LocalQueueCommandStatus, LocalQueueResult, TimerResult, TimerStatus};
        CommandResults {
            timer_results: self
                .timers_fired
                .iter()
                .map(|fired| TimerResult {
                    status: if *fired {
                        TimerStatus::Fired
                    } else {
                        TimerStatus::Skipped
                    },
                })
                .collect(),
            local_queue_results: request
                .local_queue_commands
                .iter()
                .zip(&self.queues_received)
                .map(|(command, received)| LocalQueueResult {
                    queue_name: command.queue_name.clone(),
                    status: if received.is_some() {
                        LocalQueueCommandStatus::Received
                    } else {
                        LocalQueueCommandStatus::Skipped
                    },
                    messages: received.clone().unwrap_or_default(),
                })
                .collect(),
        }
    }
}

/// Kinds of rows in `xdb_sys_tasks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TaskType {
    WaitUntil,
    Execute,
    /// A timer command of a waiting state.
    Timer,
    /// The whole process execution's deadline.
    ProcessTimeout,
}

impl TaskType {
    const ALL: [TaskType; 4] = [
        Self::WaitUntil,
        Self::Execute,
        Self::Timer,
        Self::ProcessTimeout,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::WaitUntil => "WAIT_UNTIL",
            Self::Execute => "EXECUTE",
            Self::Timer => "TIMER",
            Self::ProcessTimeout => "PROCESS_TIMEOUT",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == text)
    }
}

/// A claimed row of `xdb_sys_tasks`.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub id: i64,
    pub task_type: TaskType,
    pub fire_at: DateTime<Utc>,
    pub process_execution_id: Uuid,
    pub state: Option<StateExecutionId>,
    pub timer_index: Option<i32>,
    pub attempt: i32,
    pub first_attempt_at: Option<DateTime<Utc>>,
    /// The W3C `traceparent` of the span that created the task, so its handling joins
    /// the process's trace.
    pub traceparent: Option<String>,
}

/// A queued (not yet consumed) local-queue message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedMessage {
    pub queue_name: String,
    pub sequence_id: i64,
    pub message: LocalQueueMessage,
}
