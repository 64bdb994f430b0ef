//! `xdb batch`: one operation on every execution a selection matches, run by the service
//! at a rate, durably. `start` previews the count, asks, starts and follows the batch
//! until it closes; `list`, `describe` and `cancel` look after batches already started.

use std::io::{BufRead, IsTerminal, Write};
use std::time::{Duration, Instant};

use clap::{Args, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use xdb_protocol::{
    BatchCancelRequest, BatchDescribeRequest, BatchDescribeResponse, BatchInfo, BatchListRequest,
    BatchOperation, BatchReset, BatchStartRequest, BatchStartResponse, BatchStatus, DeploymentRef,
    LocalQueueMessage, ProcessExecutionCountRequest, MAX_BATCH_RATE,
};
use xdb_sdk::Client;

use crate::args::{Output, RequestIdArg, SelectionArgs};
use crate::batch_views as views;
use crate::commands::{now_ms, print, Failure, Outcome};
use crate::exit::Exit;
use crate::format::parse_duration;
use crate::payload::{encode_payload, parse_json};
use crate::requests::Selection;

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
        "  xdb batch start move -t Order --to orders@1.5.0 --yes --no-wait\n\n",
        "Operations: terminate, fail, retry-now, give-up, pause, resume, publish, reset, move.\n",
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

/// A `QUEUE=JSON` message (`QUEUE` alone: a message without a value).
fn parse_message(text: &str) -> Result<LocalQueueMessage, String> {
    let (queue, value) = match text.split_once('=') {
        Some((queue, value)) => (queue.trim(), Some(value)),
        None => (text.trim(), None),
    };
    if queue.is_empty() {
        return Err(format!("--message {text:?} names no queue (QUEUE=JSON)"));
    }
    Ok(LocalQueueMessage {
        queue_name: queue.to_string(),
        dedup_id: None,
        payload: encode_payload(&format!("--message {queue}"), value)?,
    })
}

/// The batch the arguments describe. The arguments of another operation than the one
/// named are refused rather than ignored.
pub fn batch_start_request(a: &BatchStartArgs) -> Result<BatchStartRequest, String> {
    let operation = a.operation.wire();
    let only = |given: bool, flag: &str, op: Operation, name: &str| {
        if given && a.operation != op {
            Err(format!("{flag} goes with `batch start {name}` only"))
        } else {
            Ok(())
        }
    };
    only(
        !a.messages.is_empty(),
        "--message",
        Operation::Publish,
        "publish",
    )?;
    only(a.state.is_some(), "--state", Operation::Reset, "reset")?;
    only(a.to.is_some(), "--to", Operation::Move, "move")?;
    let messages = a
        .messages
        .iter()
        .map(|m| parse_message(m))
        .collect::<Result<Vec<_>, _>>()?;
    let selection = Selection::of(&a.selection);
    match a.operation {
        Operation::Publish if messages.is_empty() => {
            return Err("publish needs at least one --message QUEUE=JSON".to_string())
        }
        Operation::Publish if messages.len() > 1000 => {
            return Err("publish takes at most 1000 --message".to_string())
        }
        Operation::Reset if a.state.is_none() => {
            return Err("reset needs --state STATE_ID".to_string())
        }
        Operation::Move if a.to.is_none() => return Err("move needs --to NAME@VERSION".to_string()),
        Operation::Move if selection.process_type.is_none() => {
            return Err("move needs --type: a batch moves executions of one type".to_string())
        }
        _ => {}
    }
    let reset = match &a.state {
        Some(state_id) => Some(BatchReset {
            state_id: state_id.clone(),
            state_input: encode_payload("--input", a.input.as_deref())?,
            state_config: match &a.state_config {
                Some(text) => Some(
                    serde_json::from_value(parse_json("--state-config", text)?)
                        .map_err(|e| format!("--state-config is not an AsyncStateConfig: {e}"))?,
                ),
                None => None,
            },
        }),
        None => None,
    };
    Ok(BatchStartRequest {
        request_id: a.request_id.request_id.clone(),
        operation,
        process_type: selection.process_type.clone(),
        where_: selection.where_tree(),
        business_table: selection.business_table.clone(),
        rate_per_second: a.rate,
        reason: a.reason.clone(),
        identity: Some(a.identity.clone()).filter(|i| !i.trim().is_empty()),
        messages,
        reset,
        move_to: a.to.clone(),
    })
}

/// The count that previews a batch: the very selection it sends.
pub fn preview_request(batch: &BatchStartRequest) -> ProcessExecutionCountRequest {
    ProcessExecutionCountRequest {
        process_type: batch.process_type.clone(),
        where_: batch.where_.clone(),
        business_table: batch.business_table.clone(),
        group_by: None,
    }
}

/// The exit code of a closed batch: 0 only when it completed with no failed execution.
pub fn exit_for_batch(batch: &BatchInfo) -> Exit {
    if batch.status == BatchStatus::Completed && batch.failed == 0 {
        Exit::Ok
    } else {
        Exit::BatchNotDone
    }
}

/// Whether the answer to a yes/no question is yes.
pub fn is_yes(answer: &str) -> bool {
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

pub async fn run(client: &Client, output: Output, command: &BatchCommand) -> Outcome {
    match command {
        BatchCommand::Start(a) => start(client, output, a).await,
        BatchCommand::List(a) => list(client, output, a).await,
        BatchCommand::Describe(a) => {
            let response = client
                .batch_describe(&BatchDescribeRequest {
                    batch_id: a.batch_id.clone(),
                })
                .await?;
            print(output, &response, || views::describe(&response, now_ms()));
            Ok(Exit::Ok)
        }
        BatchCommand::Cancel(a) => {
            let response = client
                .batch_cancel(&BatchCancelRequest {
                    batch_id: a.batch_id.clone(),
                    reason: a.reason.clone(),
                    identity: Some(a.identity.clone()).filter(|i| !i.trim().is_empty()),
                })
                .await?;
            print(output, &response, || views::describe(&response, now_ms()));
            Ok(Exit::Ok)
        }
    }
}

async fn list(client: &Client, output: Output, a: &BatchListArgs) -> Outcome {
    let mut request = BatchListRequest {
        status: a.status.map(|s| match s {
            BatchStatusArg::Running => BatchStatus::Running,
            BatchStatusArg::Completed => BatchStatus::Completed,
            BatchStatusArg::Cancelled => BatchStatus::Cancelled,
            BatchStatusArg::Failed => BatchStatus::Failed,
        }),
        page_size: a.page_size,
        next_page_token: a.page_token.clone(),
    };
    let mut response = client.batch_list(&request).await?;
    while a.all && response.next_page_token.is_some() {
        request.next_page_token = response.next_page_token.take();
        let page = client.batch_list(&request).await?;
        response.batches.extend(page.batches);
        response.next_page_token = page.next_page_token;
    }
    print(output, &response, || {
        views::list(&response.batches, now_ms())
    });
    if let (Output::Table, Some(token)) = (output, &response.next_page_token) {
        eprintln!("more batches: --page-token {token}");
    }
    Ok(Exit::Ok)
}

async fn start(client: &Client, output: Output, a: &BatchStartArgs) -> Outcome {
    let request = batch_start_request(a)?;
    let preview = client.count(&preview_request(&request)).await?;
    eprint!("{}", views::preview(&request, preview.count));
    if !a.yes {
        if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
            return Err(Failure::Usage(
                "not started: stdin is not a terminal to confirm on; add --yes to start \
                 the batch without asking"
                    .to_string(),
            ));
        }
        eprint!("Start this batch? [y/N] ");
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        if !is_yes(&answer) {
            eprintln!("not started");
            return Ok(Exit::BatchNotDone);
        }
    }
    let started = client.batch_start(&request).await?;
    if a.no_wait {
        print(output, &started, || format!("{}\n", started.batch_id));
        return Ok(Exit::Ok);
    }
    eprintln!(
        "started batch {} ({} expected); Ctrl-C stops following it, not the batch \
         (xdb batch cancel {})",
        started.batch_id, started.expected, started.batch_id
    );
    let last = follow(client, &started, a.interval).await?;
    print(output, &last, || views::describe(&last, now_ms()));
    Ok(exit_for_batch(&last.batch))
}

/// Reads the batch every `interval` until it closes, showing its progress on stderr.
async fn follow(
    client: &Client,
    started: &BatchStartResponse,
    interval: Duration,
) -> Result<BatchDescribeResponse, Failure> {
    let mut progress = Progress::new(std::io::stderr().is_terminal(), started.expected);
    let request = BatchDescribeRequest {
        batch_id: started.batch_id.clone(),
    };
    loop {
        let described = match client.batch_describe(&request).await {
            Ok(described) => described,
            Err(e) => {
                progress.finish();
                return Err(e.into());
            }
        };
        progress.show(&described.batch);
        if described.batch.status.is_closed() {
            progress.finish();
            return Ok(described);
        }
        tokio::time::sleep(interval).await;
    }
}

/// How often a progress line is printed when stderr is not a terminal.
const LINE_EVERY: Duration = Duration::from_secs(5);

/// A batch's progress on stderr: a bar on a terminal, else a line when it moved (at most
/// every [`LINE_EVERY`]) and when it closes.
enum Progress {
    Bar(ProgressBar),
    Lines {
        started: Instant,
        last: Option<(Instant, [u64; 4])>,
    },
}

impl Progress {
    fn new(terminal: bool, expected: u64) -> Self {
        if !terminal {
            return Progress::Lines {
                started: Instant::now(),
                last: None,
            };
        }
        let bar = ProgressBar::with_draw_target(Some(expected), ProgressDrawTarget::stderr());
        // The bar takes what the line leaves, so the line never wraps.
        let style = ProgressStyle::with_template(
            "{spinner} {prefix} [{wide_bar}] {pos}/{len}, eta {eta}: {msg}",
        )
        .expect("a valid template")
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(BatchStatus::Running.as_str());
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress::Bar(bar)
    }

    fn show(&mut self, batch: &BatchInfo) {
        match self {
            Progress::Bar(bar) => {
                bar.set_length(batch.expected.max(batch.matched));
                bar.set_position(batch.matched);
                bar.set_message(views::counts(batch));
                bar.set_prefix(batch.status.as_str());
            }
            Progress::Lines { started, last } => {
                let counts = [batch.matched, batch.done, batch.skipped, batch.failed];
                let due = match last {
                    None => true,
                    Some((at, before)) => {
                        batch.status.is_closed()
                            || (*before != counts && at.elapsed() >= LINE_EVERY)
                    }
                };
                if due {
                    eprintln!("{}", views::progress_line(batch, started.elapsed()));
                    *last = Some((Instant::now(), counts));
                }
            }
        }
    }

    fn finish(&self) {
        if let Progress::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{Cli, Command};
    use clap::Parser;
    use serde_json::json;

    fn parse(args: &[&str]) -> Result<BatchCommand, clap::Error> {
        let cli = Cli::try_parse_from(std::iter::once("xdb").chain(args.iter().copied()))?;
        match cli.command {
            Command::Batch { command } => Ok(command),
            other => panic!("not batch: {other:?}"),
        }
    }

    fn start_args(args: &[&str]) -> BatchStartArgs {
        let mut all = vec!["batch", "start"];
        all.extend(args);
        match parse(&all).unwrap() {
            BatchCommand::Start(a) => *a,
            other => panic!("not start: {other:?}"),
        }
    }

    #[test]
    fn a_terminate_batch_sends_the_selection_of_count() {
        let a = start_args(&[
            "terminate",
            "-t",
            "Order",
            "--where",
            "amount < 10",
            "--status",
            "RUNNING",
            "--table",
            "orders",
            "--key",
            "id",
            "--rate",
            "20",
            "--reason",
            "test orders",
            "--identity",
            "ann",
            "--yes",
            "--request-id",
            "cleanup-1",
        ]);
        assert!(a.yes && !a.no_wait);
        let request = batch_start_request(&a).unwrap();
        assert_eq!(
            serde_json::to_value(&request).unwrap(),
            json!({
                "requestId": "cleanup-1",
                "operation": "TERMINATE",
                "processType": "Order",
                "where": {"and": [
                    {"field": "status", "op": "=", "value": "RUNNING"},
                    {"column": "amount", "op": "<", "value": 10}
                ]},
                "businessTable": {"tableName": "orders", "primaryKeyColumn": "id"},
                "ratePerSecond": 20,
                "reason": "test orders",
                "identity": "ann",
                "messages": [],
                "reset": null,
                "moveTo": null
            })
        );
        // The preview counts exactly what the batch selects, and `xdb count` with the
        // same flags sends the same.
        let preview = preview_request(&request);
        assert_eq!(preview.where_, request.where_);
        assert_eq!(preview.business_table, request.business_table);
        assert_eq!(preview.group_by, None);
        let Command::Count(count) = Cli::try_parse_from([
            "xdb",
            "count",
            "-t",
            "Order",
            "--where",
            "amount < 10",
            "--status",
            "RUNNING",
            "--table",
            "orders",
            "--key",
            "id",
        ])
        .unwrap()
        .command
        else {
            panic!()
        };
        assert_eq!(crate::requests::count_request(&count), preview);
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
    fn each_operation_takes_its_own_arguments() {
        let a = start_args(&["publish", "--message", r#"go={"n":1}"#, "--message", "stop"]);
        let r = batch_start_request(&a).unwrap();
        assert_eq!(r.messages.len(), 2);
        assert_eq!(r.messages[0].queue_name, "go");
        assert_eq!(r.messages[0].payload.as_ref().unwrap().data, r#"{"n":1}"#);
        assert_eq!(
            (r.messages[1].queue_name.as_str(), &r.messages[1].payload),
            ("stop", &None)
        );
        assert!(batch_start_request(&start_args(&["publish"]))
            .unwrap_err()
            .contains("--message"));
        assert!(
            batch_start_request(&start_args(&["publish", "--message", "q={bad"]))
                .unwrap_err()
                .contains("not valid JSON")
        );

        let a = start_args(&["reset", "--state", "Charge", "--input", r#"{"a":1}"#]);
        let reset = batch_start_request(&a).unwrap().reset.unwrap();
        assert_eq!(reset.state_id, "Charge");
        assert_eq!(reset.state_input.unwrap().data, r#"{"a":1}"#);
        assert!(batch_start_request(&start_args(&["reset"]))
            .unwrap_err()
            .contains("--state"));

        let a = start_args(&["move", "-t", "Order", "--to", "orders@1.5.0"]);
        let to = batch_start_request(&a).unwrap().move_to.unwrap();
        assert_eq!((to.name.as_str(), to.version.as_str()), ("orders", "1.5.0"));
        let a = start_args(&["move", "-t", "Order", "--to", "orders:1.5.0"]);
        assert_eq!(batch_start_request(&a).unwrap().move_to, Some(to));
        assert!(batch_start_request(&start_args(&["move", "--to", "o@1"]))
            .unwrap_err()
            .contains("--type"));

        // Another operation's arguments are refused, not ignored.
        for args in [
            &["terminate", "--message", "q=1"][..],
            &["pause", "--state", "S"],
            &["resume", "--to", "o@1"],
        ] {
            assert!(batch_start_request(&start_args(args)).is_err(), "{args:?}");
        }
        assert!(parse(&["batch", "start", "reset", "--input", "1"]).is_err());
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

    #[test]
    fn only_a_clean_completion_exits_zero() {
        let mut batch = views::tests::info(BatchStatus::Completed);
        assert_eq!(exit_for_batch(&batch), Exit::Ok);
        batch.failed = 1;
        assert_eq!(exit_for_batch(&batch), Exit::BatchNotDone);
        for status in [BatchStatus::Failed, BatchStatus::Cancelled] {
            let batch = views::tests::info(status);
            assert_eq!(exit_for_batch(&batch), Exit::BatchNotDone, "{status:?}");
        }
        assert!(is_yes("y\n") && is_yes(" YES ") && !is_yes("") && !is_yes("no"));
    }
}
