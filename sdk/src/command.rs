//! What a state waits for (`CommandRequest`) and what it got (`CommandResults`).

use std::time::Duration;

use serde::de::DeserializeOwned;
use xdb_protocol as proto;
use xdb_protocol::{CommandWaitingType, LocalQueueCommandStatus, TimerStatus};

use crate::encoding;
use crate::error::XdbError;

/// One command of a [`CommandRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// A durable timer.
    Timer(Duration),
    /// Wait for `count` messages on a local queue.
    LocalQueue { queue_name: String, count: u32 },
}

impl Command {
    /// A durable timer firing after `delay`.
    pub fn timer(delay: Duration) -> Self {
        Command::Timer(delay)
    }

    /// Wait for one message on `queue_name`.
    pub fn local_queue(queue_name: impl Into<String>) -> Self {
        Self::local_queue_count(queue_name, 1)
    }

    /// Wait for `count` messages on `queue_name`.
    pub fn local_queue_count(queue_name: impl Into<String>, count: u32) -> Self {
        Command::LocalQueue {
            queue_name: queue_name.into(),
            count,
        }
    }
}

/// What a state's `wait_until` asks XDB to wait for before `execute` runs.
///
/// Timer and local-queue commands go over the wire in two lists; their results come back
/// in the same order, so [`CommandResults`] indexes each kind separately: the second timer
/// in the request is `timer_fired(1)` whatever local-queue commands sit between.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRequest {
    waiting_type: CommandWaitingType,
    commands: Vec<Command>,
}

impl CommandRequest {
    /// Go on when any one command completes.
    pub fn any_of(commands: Vec<Command>) -> Self {
        Self {
            waiting_type: CommandWaitingType::AnyOfCompletion,
            commands,
        }
    }

    /// Go on once every command completed.
    pub fn all_of(commands: Vec<Command>) -> Self {
        Self {
            waiting_type: CommandWaitingType::AllOfCompletion,
            commands,
        }
    }

    /// Wait for nothing: `execute` is called at once.
    pub fn empty() -> Self {
        Self::all_of(Vec::new())
    }

    pub fn waiting_type(&self) -> CommandWaitingType {
        self.waiting_type
    }

    pub fn commands(&self) -> &[Command] {
        &self.commands
    }

    /// Local queue names this request waits on, for checking them against the schema.
    pub(crate) fn queue_names(&self) -> impl Iterator<Item = &str> {
        self.commands.iter().filter_map(|c| match c {
            Command::LocalQueue { queue_name, .. } => Some(queue_name.as_str()),
            Command::Timer(_) => None,
        })
    }

    /// The wire form. Timer delays round up to whole seconds: a timer may fire late, never early.
    pub fn to_protocol(&self) -> proto::CommandRequest {
        let mut out = proto::CommandRequest {
            waiting_type: self.waiting_type,
            ..Default::default()
        };
        for command in &self.commands {
            match command {
                Command::Timer(delay) => {
                    let secs = delay.as_secs() + u64::from(delay.subsec_nanos() > 0);
                    out.timer_commands.push(proto::TimerCommand {
                        delay_in_seconds: u32::try_from(secs).unwrap_or(u32::MAX),
                    });
                }
                Command::LocalQueue { queue_name, count } => {
                    out.local_queue_commands.push(proto::LocalQueueCommand {
                        queue_name: queue_name.clone(),
                        count: Some(*count),
                    })
                }
            }
        }
        out
    }
}

/// The outcome of a state's commands, handed to `execute`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandResults {
    raw: proto::CommandResults,
}

impl CommandResults {
    pub fn new(raw: proto::CommandResults) -> Self {
        Self { raw }
    }

    /// The wire form, for anything the accessors do not cover.
    pub fn raw(&self) -> &proto::CommandResults {
        &self.raw
    }

    /// Whether the `index`-th timer command fired.
    pub fn timer_fired(&self, index: usize) -> bool {
        self.raw
            .timer_results
            .get(index)
            .is_some_and(|r| r.status == TimerStatus::Fired)
    }

    /// Status of the `index`-th local-queue command, if there is one.
    pub fn local_queue_status(&self, index: usize) -> Option<LocalQueueCommandStatus> {
        self.raw.local_queue_results.get(index).map(|r| r.status)
    }

    /// Whether the `index`-th local-queue command received its messages.
    pub fn local_queue_received(&self, index: usize) -> bool {
        self.local_queue_status(index) == Some(LocalQueueCommandStatus::Received)
    }

    /// Whether any local-queue command on `queue_name` received its messages.
    pub fn received_from_queue(&self, queue_name: &str) -> bool {
        self.raw
            .local_queue_results
            .iter()
            .any(|r| r.queue_name == queue_name && r.status == LocalQueueCommandStatus::Received)
    }

    /// The payloads consumed by the `index`-th local-queue command, decoded as `T`, in
    /// FIFO order. A message without payload reads as JSON `null`.
    pub fn local_queue_messages<T: DeserializeOwned>(
        &self,
        index: usize,
    ) -> Result<Vec<T>, XdbError> {
        let Some(result) = self.raw.local_queue_results.get(index) else {
            return Ok(Vec::new());
        };
        let what = format!("message of local queue {:?}", result.queue_name);
        result
            .messages
            .iter()
            .map(|m| encoding::decode(&what, m.payload.as_ref()))
            .collect()
    }

    /// The payloads consumed from `queue_name` by all commands on it, decoded as `T`.
    pub fn messages_from_queue<T: DeserializeOwned>(
        &self,
        queue_name: &str,
    ) -> Result<Vec<T>, XdbError> {
        let what = format!("message of local queue {queue_name:?}");
        self.raw
            .local_queue_results
            .iter()
            .filter(|r| r.queue_name == queue_name)
            .flat_map(|r| r.messages.iter())
            .map(|m| encoding::decode(&what, m.payload.as_ref()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xdb_protocol::{LocalQueueMessage, LocalQueueResult, TimerResult};

    #[test]
    fn builds_wire_request_with_separate_lists_and_rounded_timers() {
        let req = CommandRequest::any_of(vec![
            Command::timer(Duration::from_millis(1500)),
            Command::local_queue("verify"),
            Command::timer(Duration::from_secs(60)),
            Command::local_queue_count("batch", 3),
        ])
        .to_protocol();
        assert_eq!(req.waiting_type, CommandWaitingType::AnyOfCompletion);
        let delays: Vec<u32> = req
            .timer_commands
            .iter()
            .map(|t| t.delay_in_seconds)
            .collect();
        assert_eq!(delays, vec![2, 60]);
        assert_eq!(req.local_queue_commands[0].queue_name, "verify");
        assert_eq!(req.local_queue_commands[0].count, Some(1));
        assert_eq!(req.local_queue_commands[1].count, Some(3));

        let all = CommandRequest::all_of(vec![Command::local_queue("a")]).to_protocol();
        assert_eq!(all.waiting_type, CommandWaitingType::AllOfCompletion);
        assert!(all.timer_commands.is_empty());
    }

    #[test]
    fn results_accessors_read_status_and_typed_messages() {
        let results = CommandResults::new(proto::CommandResults {
            timer_results: vec![TimerResult {
                status: TimerStatus::Skipped,
            }],
            local_queue_results: vec![LocalQueueResult {
                queue_name: "verify".into(),
                status: LocalQueueCommandStatus::Received,
                messages: vec![LocalQueueMessage {
                    queue_name: "verify".into(),
                    dedup_id: None,
                    payload: Some(encoding::encode("m", &"email").unwrap()),
                }],
            }],
        });
        assert!(!results.timer_fired(0));
        assert!(!results.timer_fired(5));
        assert!(results.local_queue_received(0));
        assert!(!results.local_queue_received(1));
        assert!(results.received_from_queue("verify"));
        assert!(!results.received_from_queue("other"));
        let msgs: Vec<String> = results.local_queue_messages(0).unwrap();
        assert_eq!(msgs, vec!["email".to_string()]);
        let by_name: Vec<String> = results.messages_from_queue("verify").unwrap();
        assert_eq!(by_name, msgs);
        assert!(results.local_queue_messages::<u32>(0).is_err());
    }
}
