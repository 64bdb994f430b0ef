//! The arguments of each subcommand.

use std::time::Duration;

use clap::{ArgGroup, Args, ValueEnum};
use xdb_protocol::{fairness, BusinessTableRef, FilterNode, HistoryEventType};

use crate::format::{parse_duration, parse_time_ms};

#[derive(Debug, Args)]
pub struct StartArgs {
    /// The process id (your business key, e.g. user-signup-ann)
    pub process_id: String,
    /// The process type, as the worker registers it
    #[arg(long = "type", short = 't')]
    pub process_type: String,
    /// Base URL of the worker hosting the process type; absent: the URL of the deployment
    /// that registered the type
    #[arg(long, env = "XDB_WORKER_URL", default_value = "")]
    pub worker_url: String,
    /// The first state's id; absent: no state runs until an RPC starts one
    #[arg(long)]
    pub state: Option<String>,
    /// The first state's input, as JSON text
    #[arg(long, requires = "state")]
    pub input: Option<String>,
    /// The first state's options as the contract's AsyncStateConfig JSON
    #[arg(long, requires = "state")]
    pub state_config: Option<String>,
    /// The first state has no waitUntil (sets skipWaitUntil)
    #[arg(long, requires = "state")]
    pub skip_wait_until: bool,
    /// Global-attribute columns the first state loads (comma-separated)
    #[arg(long, value_name = "COLUMNS", requires = "state")]
    pub load_global: Vec<String>,
    /// Local attributes the first state loads (comma-separated)
    #[arg(long, value_name = "KEYS", requires = "state")]
    pub load_local: Vec<String>,
    /// Time out the whole execution after this long (e.g. 1h)
    #[arg(long, value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// What to do when the process id already has an execution
    #[arg(long, value_enum)]
    pub id_reuse: Option<IdReuse>,
    /// The key the type's --max-running-executions counts this execution under (a
    /// customer's id, say)
    #[arg(long)]
    pub concurrency_key: Option<String>,
    /// How soon its tasks are claimed when tasks wait: 1 (first) to 5 (last); default 3
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=5))]
    pub priority: Option<u8>,
    /// The key claims share its priority by (a tenant, a customer's id; 1 to 255
    /// characters); absent: the key all starts without one share
    ///
    /// When tasks of several keys wait at one priority, each key is served in turn, taking
    /// up to its --fairness-weight of tasks a turn, so one key's backlog never starves
    /// another's next task. Every task of the execution inherits the key.
    #[arg(long, value_parser = parse_fairness_key)]
    pub fairness_key: Option<String>,
    /// How many tasks the --fairness-key takes in each turn: 1 to 1000; default 1
    #[arg(
        long,
        requires = "fairness_key",
        value_parser = clap::value_parser!(u32).range(1..=i64::from(fairness::MAX_WEIGHT))
    )]
    pub fairness_weight: Option<u32>,
    /// The business table holding the global attributes
    #[arg(long, requires = "key")]
    pub table: Option<String>,
    /// The primary-key column and value of the process's row, COLUMN=VALUE
    #[arg(long, requires = "table")]
    pub key: Option<String>,
    /// A column written into the row at start, COLUMN=VALUE (VALUE as JSON, else a string)
    #[arg(long = "attr", value_name = "COLUMN=VALUE", requires = "table")]
    pub attrs: Vec<String>,
    /// A local attribute written at start, KEY=JSON
    #[arg(long = "local", value_name = "KEY=JSON")]
    pub locals: Vec<String>,
    #[command(flatten)]
    pub request_id: RequestIdArg,
}

/// A `--fairness-key`: an id, 1 to `ID_CHARS_CEILING` characters (a service may hold
/// ids to fewer, and answers 400), none a control character.
fn parse_fairness_key(text: &str) -> Result<String, String> {
    use xdb_protocol::limits::ID_CHARS_CEILING;
    if text.is_empty() {
        return Err(format!(
            "a fairness key is 1 to {ID_CHARS_CEILING} characters; this one is empty"
        ));
    }
    let chars = text.chars().count();
    if chars > ID_CHARS_CEILING {
        return Err(format!(
            "a fairness key is 1 to {ID_CHARS_CEILING} characters; this one has {chars}"
        ));
    }
    if text.chars().any(char::is_control) {
        return Err("a fairness key has no control characters".into());
    }
    Ok(text.to_string())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IdReuse {
    AllowIfNoRunning,
    AllowIfPreviousExitAbnormally,
    DisallowReuse,
    TerminateIfRunning,
}

#[derive(Debug, Args)]
pub struct DescribeArgs {
    pub process_id: String,
    /// An execution id of the process (as start printed it); absent: the latest
    #[arg(long)]
    pub execution: Option<String>,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub selection: SelectionArgs,
    /// Only executions of this process id
    #[arg(long)]
    pub process_id: Option<String>,
    /// Executions per page (service default 100, at most 1000)
    #[arg(long)]
    pub page_size: Option<u32>,
    /// The nextPageToken of the previous page
    #[arg(long, conflicts_with = "all")]
    pub page_token: Option<String>,
    /// Follow every page and print them as one list
    #[arg(long)]
    pub all: bool,
    /// With --where: show the database's plan for the page instead of the page, and
    /// which index would serve the filter when none does
    #[arg(long, requires = "where_", conflicts_with = "all")]
    pub explain: bool,
}

/// Which executions: the selection `list`, `count` and `batch start` share (see
/// [`crate::requests::Selection`]).
#[derive(Debug, Args)]
pub struct SelectionArgs {
    /// Only executions in this status
    #[arg(long, value_enum)]
    pub status: Option<Status>,
    /// Only this process type (needed to name business columns)
    #[arg(long = "type", short = 't')]
    pub process_type: Option<String>,
    /// Started at or after: RFC 3339, a date (UTC), epoch ms, or a duration ago (1h, 2d)
    #[arg(long, value_parser = parse_time_ms)]
    pub since: Option<i64>,
    /// Started before: RFC 3339, a date (UTC), epoch ms, or a duration ago (1h, 2d)
    #[arg(long, value_parser = parse_time_ms)]
    pub until: Option<i64>,
    /// Only executions matching this condition: business columns by name, JSON paths
    /// as col->>'key', execution fields as execution.<field>; =, !=, <, <=, >, >=, IN,
    /// IS [NOT] NULL, LIKE 'abc%' / '%abc' / '%abc%', AND, OR, NOT; times may be
    /// relative to now ('-1h')
    #[arg(long = "where", value_parser = crate::where_clause::parse_where)]
    pub where_: Option<FilterNode>,
    /// The business table (table or schema.table) when no registered definition
    /// declares it; with --key
    #[arg(long, requires = "key")]
    pub table: Option<String>,
    /// The business table's primary-key column (holding the process id); with --table
    #[arg(long, requires = "table")]
    pub key: Option<String>,
}

impl SelectionArgs {
    pub fn business_table(&self) -> Option<BusinessTableRef> {
        Some(BusinessTableRef {
            table_name: self.table.clone()?,
            primary_key_column: self.key.clone()?,
        })
    }
}

#[derive(Debug, Args)]
pub struct CountArgs {
    #[command(flatten)]
    pub selection: SelectionArgs,
    /// Counts per group: status, type, state, priority, or a business column's name
    #[arg(long)]
    pub group_by: Option<String>,
    /// Show the database's plan for the count instead of counting, and which index
    /// would serve the filter when none does
    #[arg(long)]
    pub explain: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Status {
    Running,
    Completed,
    Failed,
    Timeout,
    Terminated,
}

#[derive(Debug, Args)]
pub struct HistoryArgs {
    pub process_id: String,
    /// An execution id of the process; absent: the latest
    #[arg(long)]
    pub execution: Option<String>,
    /// Show every event's details whole instead of a one-line summary
    #[arg(long)]
    pub wide: bool,
    /// Only events of this type (repeatable), e.g. STATE_API_FAILED
    #[arg(long = "event-type", value_name = "TYPE", value_parser = parse_event_type)]
    pub event_types: Vec<HistoryEventType>,
    /// Events per page (service default and limit 1000)
    #[arg(long)]
    pub page_size: Option<u32>,
    /// Only events after this event id: the previous page's nextAfterEventId
    #[arg(long, value_name = "EVENT_ID", conflicts_with = "all")]
    pub after: Option<i64>,
    /// Follow every page and print them as one history
    #[arg(long)]
    pub all: bool,
    /// Keep printing new events as they happen, until the execution closes (Ctrl-C
    /// stops following)
    #[arg(long, conflicts_with_all = ["all", "after"])]
    pub follow: bool,
}

fn parse_event_type(text: &str) -> Result<HistoryEventType, String> {
    HistoryEventType::parse(&text.to_ascii_uppercase()).ok_or_else(|| {
        let names: Vec<&str> = HistoryEventType::ALL.iter().map(|t| t.as_str()).collect();
        format!("unknown event type; one of {}", names.join(", "))
    })
}

/// Makes a write safe to send again: the service answers a repeat of the same id and
/// request with the first answer, without doing it twice.
#[derive(Debug, Args)]
pub struct RequestIdArg {
    /// Idempotency key (1-200 of A-Z a-z 0-9 - _ . :): sending the same command again
    /// with it does nothing more than the first (within 24 h); absent: a fresh one
    #[arg(long, value_parser = parse_request_id)]
    pub request_id: Option<String>,
}

fn parse_request_id(text: &str) -> Result<String, String> {
    if xdb_sdk::client::is_valid_request_id(text) {
        Ok(text.to_string())
    } else {
        Err(format!(
            "a request id is 1 to {} letters, digits and -_.:",
            xdb_sdk::client::MAX_REQUEST_ID_CHARS
        ))
    }
}

#[derive(Debug, Args)]
pub struct StopArgs {
    pub process_id: String,
    /// Only if this execution is the process id's current one
    #[arg(long)]
    pub execution: Option<String>,
    /// Close the execution as FAILED instead of TERMINATED
    #[arg(long)]
    pub fail: bool,
    /// Why, kept as the failure's details
    #[arg(long)]
    pub reason: Option<String>,
    #[command(flatten)]
    pub request_id: RequestIdArg,
}

#[derive(Debug, Args)]
pub struct PublishArgs {
    pub process_id: String,
    /// The local queue's name
    pub queue: String,
    /// A message's value as JSON text; repeat for several messages; none: one message
    /// without a value
    #[arg(long = "payload")]
    pub payloads: Vec<String>,
    /// De-duplication id (with a single message): a repeat with the same id is dropped
    #[arg(long)]
    pub dedup_id: Option<String>,
    /// Only if this execution is the process id's current one
    #[arg(long)]
    pub execution: Option<String>,
    #[command(flatten)]
    pub request_id: RequestIdArg,
}

#[derive(Debug, Args)]
pub struct RpcArgs {
    pub process_id: String,
    pub rpc_name: String,
    /// The RPC's input as JSON text
    #[arg(long)]
    pub input: Option<String>,
    /// Timeout of the worker call in seconds (service default 10, at most 60)
    #[arg(long)]
    pub timeout: Option<u32>,
    /// Global-attribute columns loaded for the RPC (comma-separated)
    #[arg(long, value_name = "COLUMNS")]
    pub load_global: Vec<String>,
    /// Local attributes loaded for the RPC (comma-separated)
    #[arg(long, value_name = "KEYS")]
    pub load_local: Vec<String>,
    /// How the loaded attributes are locked until the RPC's answer commits
    #[arg(long, value_enum, default_value_t = Lock::None)]
    pub lock: Lock,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Lock {
    None,
    Shared,
    Exclusive,
}

#[derive(Debug, Args)]
pub struct WaitArgs {
    pub process_id: String,
    /// How long to wait in all (e.g. 90, 30s, 10m, 1h)
    #[arg(long, value_parser = parse_duration, default_value = "5m")]
    pub timeout: Duration,
    /// Show progress on stderr even when it is not a terminal
    #[arg(long, conflicts_with = "no_progress")]
    pub progress: bool,
    /// Never show progress
    #[arg(long)]
    pub no_progress: bool,
}

#[derive(Debug, Args)]
pub struct StatesArgs {
    pub process_id: String,
    /// An execution id of the process; absent: the latest
    #[arg(long)]
    pub execution: Option<String>,
}

/// What every control sends besides its target: why, and who asks.
#[derive(Debug, Args)]
pub struct ControlOpts {
    /// An execution id of the process; absent: the latest
    #[arg(long)]
    pub execution: Option<String>,
    /// Why, kept in the execution's history
    #[arg(long)]
    pub reason: Option<String>,
    /// Who asks (a person or a tool), kept in the execution's history
    #[arg(long, env = "XDB_IDENTITY", default_value = "xdb-cli")]
    pub identity: String,
    #[command(flatten)]
    pub request_id: RequestIdArg,
}

/// `retry` and `give-up`: every state the control applies to, or one.
#[derive(Debug, Args)]
pub struct StateControlArgs {
    pub process_id: String,
    /// Only this state execution (`stateId-number`, as `xdb states` shows it)
    #[arg(long, value_name = "STATE_EXECUTION_ID")]
    pub state: Option<String>,
    #[command(flatten)]
    pub control: ControlOpts,
}

/// `reset`: restart an execution from a named state.
#[derive(Debug, Args)]
pub struct ResetArgs {
    pub process_id: String,
    /// The state to continue from
    #[arg(long, value_name = "STATE_ID")]
    pub state: String,
    /// The state's input, as JSON text
    #[arg(long)]
    pub input: Option<String>,
    /// The state's options, as an AsyncStateConfig in JSON; absent: as its registered
    /// definition declares them, else the defaults
    #[arg(long)]
    pub state_config: Option<String>,
    #[command(flatten)]
    pub control: ControlOpts,
}

/// `pause` and `resume`: the whole execution.
#[derive(Debug, Args)]
pub struct PauseArgs {
    pub process_id: String,
    #[command(flatten)]
    pub control: ControlOpts,
}

/// `reprioritize`: the whole execution's claim order, changed in at least one way.
#[derive(Debug, Args)]
#[command(group(
    ArgGroup::new("change")
        .required(true)
        .multiple(true)
        .args(["priority", "fairness_key", "no_fairness_key", "fairness_weight"])
))]
pub struct ReprioritizeArgs {
    pub process_id: String,
    #[command(flatten)]
    pub change: ReprioritizeOpts,
    #[command(flatten)]
    pub control: ControlOpts,
}

/// The change `reprioritize` and `batch start reprioritize` make; a flag left out leaves
/// that part of the order as it is.
#[derive(Debug, Args)]
pub struct ReprioritizeOpts {
    /// The new priority: 1 (claimed first) to 5 (claimed last)
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=5))]
    pub priority: Option<u8>,
    /// The new fairness key (1 to 255 characters); it keeps the execution's weight unless
    /// --fairness-weight names one
    #[arg(long, value_parser = parse_fairness_key, conflicts_with = "no_fairness_key")]
    pub fairness_key: Option<String>,
    /// Remove the execution's fairness key, and its weight with it
    #[arg(long)]
    pub no_fairness_key: bool,
    /// The weight of the execution's key (the new one, or the one it has): 1 to 1000
    #[arg(
        long,
        conflicts_with = "no_fairness_key",
        value_parser = clap::value_parser!(u32).range(1..=i64::from(fairness::MAX_WEIGHT))
    )]
    pub fairness_weight: Option<u32>,
}

impl ReprioritizeOpts {
    /// The first change flag given, to name it where it does not belong.
    pub fn first_given(&self) -> Option<&'static str> {
        if self.priority.is_some() {
            Some("--priority")
        } else if self.fairness_key.is_some() {
            Some("--fairness-key")
        } else if self.no_fairness_key {
            Some("--no-fairness-key")
        } else if self.fairness_weight.is_some() {
            Some("--fairness-weight")
        } else {
            None
        }
    }
}

/// The paging flags of the listings and audit histories whose service default is 50 a
/// page: `schedule list`, `schedule history`, `flow-limits history`.
#[derive(Debug, Args)]
pub struct PageArgs {
    /// Rows per page (service default 50, at most 1000)
    #[arg(long)]
    pub page_size: Option<u32>,
    /// The token the previous page printed (its nextPageToken in JSON)
    #[arg(long)]
    pub page_token: Option<String>,
}

/// The line after a page's table naming the flag that asks for the next page (nothing
/// on the last page); kept beside [`PageArgs`] so it names the flag as declared.
pub fn next_page_line(token: Option<&str>) -> String {
    token
        .map(|token| format!("next page: --page-token {token}\n"))
        .unwrap_or_default()
}
