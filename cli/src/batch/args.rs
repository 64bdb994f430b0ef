//! The arguments of `xdb batch` and its subcommands.

use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use xdb_protocol::{BatchOperation, DeploymentRef, MAX_BATCH_RATE};

use crate::args::{ReprioritizeOpts, RequestIdArg, SelectionArgs};
use crate::format::parse_duration;

#[derive(Debug, Subcommand)]
pub enum BatchCommand {
    /// Apply an operation to every execution a selection matches: shows the count first,
    /// asks, starts the batch and follows it until it closes
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb batch start terminate -t Order --where \"execution.status = 'RUNNING' and amount < 10\" \\\n",
        "      --since 2d --reason 'test orders' \n",
        "  xdb batch start retry-now -t Order --status RUNNING --rate 20 --yes\n",
        "  xdb batch start publish -t Order --where \"tier = 'gold'\" --message 'go={\"fast\":true}' --yes\n",
        "  xdb batch start reset -t Order --status FAILED --state Charge --input '{\"retry\":1}'\n",
        "  xdb batch start move -t Order --to orders@1.5.0 --yes --no-wait\n",
        "  xdb batch start reprioritize -t Order --where \"tier = 'gold'\" --priority 1 --fairness-key gold\n\n",
        "Operations: terminate, fail, retry-now, give-up, pause, resume, publish, reset, move,\n",
        "reprioritize.\n",
        "The selection reads as in `xdb list` and `xdb count`; the count of `xdb count` with\n",
        "the same flags is shown first. Without --yes it asks on the terminal, and refuses to\n",
        "start when stdin is not one. Each execution is handled at most once; one the\n",
        "operation does not apply to (closed, not paused...) is skipped. Executions started\n",
        "after the batch are not part of it.\n\n",
        "While it runs, a progress bar (a line every few seconds when stderr is not a\n",
        "terminal) shows it; Ctrl-C stops following, not the batch (`xdb batch cancel`).\n",
        "Then the batch is described on stdout (json: the API's describe answer).\n",
        "Exit codes: 0 completed with no failed execution (or started, with --no-wait),\n",
        "9 closed FAILED or CANCELLED, failed on some executions, or not confirmed,\n",
        "2 usage (e.g. no --yes without a terminal), 1 refused, 3 unreachable."
    ))]
    Start(Box<BatchStartArgs>),
    /// Batches, newest first
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb batch list\n",
        "  xdb batch list --status RUNNING --output json\n\n",
        "Without --all, the token of the next page is printed on stderr (table) or is the\n",
        "answer's nextPageToken (json).\n",
        "Exit codes: 0 listed, 1 API error, 3 unreachable."
    ))]
    List(BatchListArgs),
    /// A batch's progress and the latest executions it skipped or failed on
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb batch describe 0190f0c4-...\n",
        "  xdb batch describe 0190f0c4-... -o json | jq .batch.failed\n\n",
        "Exit codes: 0 found, 5 no such batch (BATCH_NOT_FOUND), 1 API error, 3 unreachable."
    ))]
    Describe(BatchIdArgs),
    /// Cancel a running batch: it stops after the execution in hand; what it did stays done
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb batch cancel 0190f0c4-... --reason 'wrong selection'\n\n",
        "Exit codes: 0 cancelled, 5 no such batch (BATCH_NOT_FOUND), 1 refused (e.g. the\n",
        "batch is closed already), 3 unreachable."
    ))]
    Cancel(BatchCancelArgs),
}

/// What a batch does to each execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Operation {
    /// Stop it as TERMINATED
    Terminate,
    /// Stop it as FAILED
    Fail,
    /// Retry its failing (backing-off) or parked calls now
    #[value(alias = "retry_now")]
    RetryNow,
    /// Give up on its failing state executions
    #[value(alias = "give_up")]
    GiveUp,
    /// Pause it
    Pause,
    /// Resume it
    Resume,
    /// Publish the --message messages to it
    #[value(
        name = "publish",
        alias = "publish-to-local-queue",
        alias = "publish_to_local_queue"
    )]
    Publish,
    /// Reset it to --state
    Reset,
    /// Move it to the --to deployment
    #[value(
        name = "move",
        alias = "move-to-deployment",
        alias = "move_to_deployment"
    )]
    Move,
    /// Change its priority or fairness key (--priority, --fairness-key,
    /// --no-fairness-key, --fairness-weight)
    Reprioritize,
}

impl Operation {
    pub fn wire(self) -> BatchOperation {
        match self {
            Operation::Terminate => BatchOperation::Terminate,
            Operation::Fail => BatchOperation::Fail,
            Operation::RetryNow => BatchOperation::RetryNow,
            Operation::GiveUp => BatchOperation::GiveUp,
            Operation::Pause => BatchOperation::Pause,
            Operation::Resume => BatchOperation::Resume,
            Operation::Publish => BatchOperation::PublishToLocalQueue,
            Operation::Reset => BatchOperation::Reset,
            Operation::Move => BatchOperation::MoveToDeployment,
            Operation::Reprioritize => BatchOperation::Reprioritize,
        }
    }
}

#[derive(Debug, Args)]
pub struct BatchStartArgs {
    /// What to do to each selected execution
    #[arg(value_enum, ignore_case = true)]
    pub operation: Operation,
    #[command(flatten)]
    pub selection: SelectionArgs,
    /// Executions handled per second, at most (service default 100)
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_BATCH_RATE)))]
    pub rate: Option<u32>,
    /// Why, kept in the batch and in each execution's history
    #[arg(long)]
    pub reason: Option<String>,
    /// Who asks (a person or a tool)
    #[arg(long, env = "XDB_IDENTITY", default_value = "xdb-cli")]
    pub identity: String,
    /// publish: a message each execution receives, QUEUE=JSON (QUEUE alone: no value);
    /// repeat for several, sent in order
    #[arg(long = "message", value_name = "QUEUE=JSON")]
    pub messages: Vec<String>,
    /// reset: the state each execution restarts from
    #[arg(long, value_name = "STATE_ID")]
    pub state: Option<String>,
    /// reset: the state's input, as JSON text
    #[arg(long, requires = "state")]
    pub input: Option<String>,
    /// reset: the state's options, as an AsyncStateConfig in JSON
    #[arg(long, requires = "state")]
    pub state_config: Option<String>,
    /// move: the deployment to move to, NAME@VERSION (or NAME:VERSION)
    #[arg(long, value_name = "NAME@VERSION", value_parser = parse_target)]
    pub to: Option<DeploymentRef>,
    /// Start without asking (needed when stdin is not a terminal)
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Print the batch id once started instead of following the batch
    #[arg(long)]
    pub no_wait: bool,
    /// How often the batch's progress is read while following it
    #[arg(long, value_parser = parse_duration, default_value = "1s")]
    pub interval: Duration,
    #[command(flatten)]
    pub request_id: RequestIdArg,
    // Last, as its heading holds for every flag after it.
    #[command(flatten, next_help_heading = "Reprioritize options")]
    pub reprioritize: ReprioritizeOpts,
}

/// `NAME@VERSION` or `NAME:VERSION`.
fn parse_target(text: &str) -> Result<DeploymentRef, String> {
    crate::deployments::parse_deployment(text).or_else(|_| match text.rsplit_once(':') {
        Some((name, version)) if !name.is_empty() && !version.is_empty() => Ok(DeploymentRef {
            name: name.to_string(),
            version: version.to_string(),
        }),
        _ => Err(format!("expected NAME@VERSION, got {text:?}")),
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BatchStatusArg {
    Running,
    Completed,
    Cancelled,
    Failed,
}

#[derive(Debug, Args)]
pub struct BatchListArgs {
    /// Only batches in this status
    #[arg(long, value_enum, ignore_case = true)]
    pub status: Option<BatchStatusArg>,
    /// Batches per page (service default 50, at most 1000)
    #[arg(long)]
    pub page_size: Option<u32>,
    /// The nextPageToken of the previous page
    #[arg(long, conflicts_with = "all")]
    pub page_token: Option<String>,
    /// Follow every page and print them as one list
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Args)]
pub struct BatchIdArgs {
    /// The batch id, as `batch start` printed it
    pub batch_id: String,
}

#[derive(Debug, Args)]
pub struct BatchCancelArgs {
    /// The batch id, as `batch start` printed it
    pub batch_id: String,
    /// Why, kept in the batch
    #[arg(long)]
    pub reason: Option<String>,
    /// Who asks (a person or a tool)
    #[arg(long, env = "XDB_IDENTITY", default_value = "xdb-cli")]
    pub identity: String,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::args::{Cli, Command};
    use clap::Parser;

    pub(crate) fn parse(args: &[&str]) -> Result<BatchCommand, clap::Error> {
        let cli = Cli::try_parse_from(std::iter::once("xdb").chain(args.iter().copied()))?;
        match cli.command {
            Command::Batch { command } => Ok(command),
            other => panic!("not batch: {other:?}"),
        }
    }

    pub(crate) fn start_args(args: &[&str]) -> BatchStartArgs {
        let mut all = vec!["batch", "start"];
        all.extend(args);
        match parse(&all).unwrap() {
            BatchCommand::Start(a) => *a,
            other => panic!("not start: {other:?}"),
        }
    }
    #[test]
    fn operations_read_in_any_spelling() {
        for (text, op) in [
            ("terminate", BatchOperation::Terminate),
            ("FAIL", BatchOperation::Fail),
            ("retry-now", BatchOperation::RetryNow),
            ("RETRY_NOW", BatchOperation::RetryNow),
            ("give-up", BatchOperation::GiveUp),
            ("pause", BatchOperation::Pause),
            ("Resume", BatchOperation::Resume),
            ("REPRIORITIZE", BatchOperation::Reprioritize),
        ] {
            assert_eq!(start_args(&[text]).operation.wire(), op, "{text}");
        }
        let a = start_args(&["PUBLISH_TO_LOCAL_QUEUE", "--message", "go"]);
        assert_eq!(a.operation.wire(), BatchOperation::PublishToLocalQueue);
        let a = start_args(&["move-to-deployment", "-t", "T", "--to", "w:2"]);
        assert_eq!(a.operation.wire(), BatchOperation::MoveToDeployment);
        assert!(parse(&["batch", "start", "explode"]).is_err());
        assert!(parse(&["batch", "start", "pause", "--rate", "0"]).is_err());
        assert!(parse(&["batch", "start", "pause", "--rate", "10001"]).is_err());
    }
    #[test]
    fn list_describe_and_cancel_parse() {
        let BatchCommand::List(l) = parse(&["batch", "list", "--status", "running"]).unwrap()
        else {
            panic!()
        };
        assert_eq!(l.status, Some(BatchStatusArg::Running));
        assert!(parse(&["batch", "list", "--all", "--page-token", "t"]).is_err());
        let BatchCommand::Describe(d) = parse(&["batch", "describe", "b1"]).unwrap() else {
            panic!()
        };
        assert_eq!(d.batch_id, "b1");
        let BatchCommand::Cancel(c) =
            parse(&["batch", "cancel", "b1", "--reason", "oops"]).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (c.batch_id.as_str(), c.reason.as_deref()),
            ("b1", Some("oops"))
        );
        assert!(parse(&["batch", "cancel"]).is_err());
    }
}
