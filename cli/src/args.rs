//! The command line: global options and one subcommand per service call.

use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::format::parse_duration;

#[derive(Debug, Parser)]
#[command(
    name = "xdb",
    bin_name = "xdb",
    version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("XDB_COMMIT"), ")"),
    about = "Command-line client of the XDB service API: start, inspect and drive process executions",
    after_help = concat!(
        "Examples:\n",
        "  export XDB_URL=http://127.0.0.1:8801 XDB_TOKEN=secret\n",
        "  xdb list --status RUNNING\n",
        "  xdb describe user-signup-ann\n",
        "  xdb wait user-signup-ann --timeout 5m && echo done\n",
        "  xdb states user-signup-ann              # why is it not progressing?\n",
        "  xdb retry user-signup-ann --reason 'worker fixed'\n",
        "  xdb describe user-signup-ann --output json | jq -r .status\n\n",
        exit_codes_text!(),
    ),
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalOpts,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct GlobalOpts {
    /// Base URL of the XDB API service
    #[arg(
        long,
        global = true,
        env = "XDB_URL",
        default_value = "http://127.0.0.1:8801"
    )]
    pub url: String,
    /// Bearer token for a service with `security.tokens` or `api_tokens` (exit code 8 when
    /// its roles do not cover the command)
    #[arg(long, global = true, env = "XDB_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// `table` for people, `json` for the API's JSON answer as is
    #[arg(long, short = 'o', global = true, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// Timeout of each service call (wait's long polls add their own wait)
    #[arg(long, global = true, value_parser = parse_duration, default_value = "60s")]
    pub request_timeout: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Table,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start a process execution
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb start user-signup-ann --type UserSignupProcess --state SubmitState \\\n",
        "      --worker-url http://127.0.0.1:8803 --load-global form,status,source \\\n",
        "      --table user --key user_id=ann --attr 'form={\"email\":\"ann@example.com\"}' --attr status=waiting\n",
        "  xdb start order-42 --type OrderProcess --state Init --input '{\"sku\":\"x\"}' --id-reuse terminate-if-running\n\n",
        "Prints the new execution id (json: {\"processExecutionId\": ...}).\n\n",
        "Exit codes: 0 started, 1 refused (e.g. PROCESS_ALREADY_STARTED), 2 usage, 3 unreachable."
    ))]
    Start(StartArgs),
    /// Describe the current (or a given) execution of a process id
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb describe user-signup-ann\n",
        "  xdb describe user-signup-ann --execution 0190f0c4-... --output json\n\n",
        "Exit codes: 0 found, 5 no such process or execution, 1 other API error, 3 unreachable."
    ))]
    Describe(DescribeArgs),
    /// List executions, newest first
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb list --status RUNNING --type UserSignupProcess\n",
        "  xdb list --since 2024-05-01T00:00:00Z --page-size 50\n",
        "  xdb list --all --output json | jq '.executions | length'\n",
        "  xdb list -t UserSignupProcess --where \"form->>'email' like 'ann%'\" --since 1d\n\n",
        "Without --all, the token of the next page is printed on stderr (table) or is the\n",
        "answer's nextPageToken (json); pass it back with --page-token."
    ))]
    List(ListArgs),
    /// Count executions, exactly, optionally per status, type, state, priority or column
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb count --group-by status\n",
        "  xdb count -t UserSignupProcess --group-by state\n",
        "  xdb count -t UserSignupProcess --where \"execution.status = 'RUNNING' and form->>'email' like 'ann%'\"\n",
        "  xdb count -t Order --group-by tier --table orders --key order_id\n\n",
        "--group-by status, type, state and priority group by the execution's (state: the one\n",
        "it runs; with several, the first by id); any other name (or column:NAME)\n",
        "by that column of the business row."
    ))]
    Count(CountArgs),
    /// Show the history events of the current (or a given) execution, oldest first
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb history user-signup-ann\n",
        "  xdb history user-signup-ann --wide --event-type STATE_API_FAILED\n",
        "  xdb history user-signup-ann --all --page-size 500\n",
        "  xdb history user-signup-ann --output json | jq '.events[].eventType'\n\n",
        "Without --all, when more events follow, the id to continue --after is printed on\n",
        "stderr (table) or is the answer's nextAfterEventId (json).\n",
        "Exit codes: 0 found, 5 no such process or execution, 1 other API error, 3 unreachable."
    ))]
    History(HistoryArgs),
    /// Stop the current execution of a process id (TERMINATED, or FAILED with --fail)
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb stop user-signup-ann --reason 'duplicate account'\n",
        "  xdb stop order-42 --fail --reason 'payment provider gone'\n\n",
        "Exit codes: 0 stopped, 1 refused (e.g. PROCESS_NOT_RUNNING), 5 not found, 3 unreachable."
    ))]
    Stop(StopArgs),
    /// Publish messages to a local queue of the current execution
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb publish user-signup-ann verify --payload '{\"source\":\"email-link\"}'\n",
        "  xdb publish order-42 items --payload 1 --payload 2 --payload 3\n",
        "  xdb publish order-42 cancel              # one message without a value\n\n",
        "Several --payload flags send several messages, in order, in one call.\n",
        "Exit codes: 0 published, 1 refused (e.g. PROCESS_NOT_RUNNING), 5 not found, 3 unreachable."
    ))]
    Publish(PublishArgs),
    /// Call an RPC of the current execution and print its output
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb rpc user-signup-ann verify --input '\"support\"' --load-global form,status,source --lock exclusive\n",
        "  xdb rpc order-42 addItem --input '{\"sku\":\"x\"}' --timeout 30\n\n",
        "Prints the RPC's output as JSON text (json: the API's {\"output\": ...}).\n",
        "Exit codes: 0 answered, 1 refused or the worker failed (WORKER_API_ERROR), 5 not found, 3 unreachable."
    ))]
    Rpc(RpcArgs),
    /// Wait until the current execution closes, printing its result
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb wait user-signup-ann --timeout 10m\n",
        "  xdb wait order-42 --timeout 1h --progress 2>progress.log\n",
        "  if xdb wait order-42 -o json > result.json; then echo completed; fi\n\n",
        "While waiting, the execution's status, running states and the time waited are shown\n",
        "on stderr when it is a terminal (or always with --progress).\n",
        "Exit codes: 0 completed, 6 closed otherwise (FAILED, TIMEOUT, TERMINATED),\n",
        "4 still running at --timeout, 5 not found, 1 other API error, 3 unreachable."
    ))]
    Wait(WaitArgs),
    /// Show why an execution is not progressing: each state, its pending call, last failure, waits
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb states user-signup-ann\n",
        "  xdb states user-signup-ann --execution 0190f0c4-... --output json\n\n",
        "One row per state execution: its status, the attempt, phase and due time of the\n",
        "waitUntil/execute call it waits on (PARKED: set aside until `xdb retry`), its last\n",
        "failure, and the timers and local queues a waiting state waits for.\n",
        "Exit codes: 0 found, 5 no such process or execution, 1 other API error, 3 unreachable."
    ))]
    States(StatesArgs),
    /// Retry now the failing (backing-off) or parked calls of the current execution
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb retry user-signup-ann --reason 'worker fixed'\n",
        "  xdb retry user-signup-ann --state VerifyState-1 --identity ann@ops\n\n",
        "Calls waiting for their retry backoff become due at once (attempt counts kept) and\n",
        "parked ones are released; without --state, every such state execution.\n",
        "The reason and identity (--identity, XDB_IDENTITY, else xdb-cli) are kept in the history.\n",
        "Exit codes: 0 retried, 7 nothing to retry (CONTROL_NOT_APPLICABLE), 5 not found,\n",
        "1 other API error, 3 unreachable."
    ))]
    Retry(StateControlArgs),
    /// Give up on failing state executions now, skipping their remaining attempts
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb give-up order-42 --reason 'provider gone for good'\n",
        "  xdb give-up order-42 --state Charge-2\n\n",
        "Each goes to its failure recovery without the remaining attempts: the process\n",
        "fails, or proceeds to the configured state.\n",
        "Exit codes: 0 given up, 7 nothing is failing (CONTROL_NOT_APPLICABLE), 5 not found,\n",
        "1 other API error, 3 unreachable."
    ))]
    GiveUp(StateControlArgs),
    /// Pause the current execution: none of its calls run until it resumes
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb pause order-42 --reason 'investigating double charge'\n\n",
        "Calls and timers that fall due wait (a call already running finishes); messages\n",
        "and RPCs are still accepted. What fell due runs on `xdb resume`.\n",
        "Exit codes: 0 paused, 7 paused already (CONTROL_NOT_APPLICABLE), 5 not found,\n",
        "1 other API error (e.g. PROCESS_NOT_RUNNING), 3 unreachable."
    ))]
    Pause(PauseArgs),
    /// Resume a paused execution
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb resume order-42 --reason 'fixed'\n\n",
        "Exit codes: 0 resumed, 7 not paused (CONTROL_NOT_APPLICABLE), 5 not found,\n",
        "1 other API error, 3 unreachable."
    ))]
    Resume(PauseArgs),
    /// Change the priority or fairness key its waiting and later calls are claimed by
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb reprioritize order-42 --priority 1 --reason 'customer escalation'\n",
        "  xdb reprioritize order-42 --fairness-key acme --fairness-weight 2\n",
        "  xdb reprioritize order-42 --no-fairness-key\n\n",
        "At least one of --priority, --fairness-key, --no-fairness-key, --fairness-weight;\n",
        "what is not named stays. The calls it waits on are claimed in the new order at once\n",
        "(one running finishes as it is), and so are those it makes later.\n",
        "Exit codes: 0 reprioritized, 7 a weight for an execution without a fairness key\n",
        "(CONTROL_NOT_APPLICABLE), 5 not found, 1 other API error (e.g. PROCESS_NOT_RUNNING),\n",
        "2 usage, 3 unreachable."
    ))]
    Reprioritize(ReprioritizeArgs),
    /// Restart an execution from a named state (a closed one continues as a new execution)
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb reset order-42 --state Charge --input '{\"amount\": 10}' --reason 'bad deploy'\n",
        "  xdb reset order-42 --execution 0190... --state Ship\n\n",
        "A running execution: its open states are aborted (their calls, timers and waits\n",
        "cancelled; queued local-queue messages stay) and the state starts. A closed one\n",
        "(completed, failed, timed out, terminated) is continued by a new execution of the\n",
        "same process id, linked to it (resetFrom), with its local attributes.\n",
        "Exit codes: 0 reset, 5 not found, 7 the latest execution still runs\n",
        "(CONTROL_NOT_APPLICABLE), 1 other API error (e.g. an unknown state), 3 unreachable."
    ))]
    Reset(ResetArgs),
    /// Batch operations: one operation on every execution a selection matches, at a rate
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb batch start terminate -t Order --where \"amount < 10\" --since 2d --reason 'test orders'\n",
        "  xdb batch list --status RUNNING\n",
        "  xdb batch describe 0190f0c4-...\n",
        "  xdb batch cancel 0190f0c4-... --reason 'wrong selection'\n\n",
        "Exit codes: 0 done, 9 the batch closed FAILED or CANCELLED or failed on some\n",
        "executions, 5 no such batch, 1 refused, 2 usage, 3 unreachable."
    ))]
    Batch {
        #[command(subcommand)]
        command: crate::batch::BatchCommand,
    },
    /// Schedules: a process type started on a cron expression or an interval
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb schedule create nightly -t Report --cron '0 3 * * *' --tz Europe/Paris --overlap skip\n",
        "  xdb schedule create tick -t Poll --every 60 --jitter 10 --worker-url http://w:8080\n",
        "  xdb schedule describe nightly\n",
        "  xdb schedule pause nightly --reason 'maintenance'\n",
        "  xdb schedule trigger nightly\n",
        "  xdb schedule backfill nightly --from 2026-11-01 --to 2026-11-08\n",
        "  xdb schedule history nightly                 # who changed it, when and why\n\n",
        "A skipped local time (spring forward) does not fire; a repeated one fires once.\n",
        "Exit codes: 0 done, 5 no such schedule, 1 refused (e.g. a bad cron expression),\n",
        "3 unreachable."
    ))]
    Schedule {
        #[command(subcommand)]
        command: crate::schedule::ScheduleCommand,
    },
    /// Flow limits: how fast and how many at once a process type's worker is called
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb flow-limits set -t Order --max-calls-per-second 20 --reason 'payments API at 25/s'\n",
        "  xdb flow-limits set -t Order --state Charge --max-calls-per-second 0.5\n",
        "  xdb flow-limits set -t Order --state Charge --max-concurrent-calls 8 --max-calls-per-second 5\n",
        "  xdb flow-limits set -t Order --unlimited --reason 'backlog after the outage'\n",
        "  xdb flow-limits set -t Order --clear            # the declared limits apply again\n",
        "  xdb flow-limits list\n",
        "  xdb flow-limits history -t Order\n\n",
        "`set` needs the operate role. A call over its limit waits (FLOW_LIMITED in `xdb states`).\n",
        "Exit codes: 0 done, 1 refused (e.g. a rate or a concurrency of 0, or a state the type\n",
        "does not have; the field is named), 2 usage, 3 unreachable."
    ))]
    FlowLimits {
        #[command(subcommand)]
        command: crate::flow_limits::FlowLimitsCommand,
    },
    /// Process definitions registered by worker deployments
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb definitions list\n",
        "  xdb definitions show OrderProcess\n",
        "  xdb definitions register --file orders-v2.json   # needs the deploy role\n\n",
        "Exit codes: 0 done, 5 no such process type, 1 refused (e.g. DEFINITION_INCOMPATIBLE),\n",
        "3 unreachable."
    ))]
    Definitions {
        #[command(subcommand)]
        command: crate::definitions::DefinitionsCommand,
    },
    /// Worker deployments: which serves each process type, rollbacks, moving executions
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb deployments list\n",
        "  xdb deployments set-current orders@1.4.2          # roll back (deploy role)\n",
        "  xdb deployments move --type OrderProcess --to orders@1.5.0 --from orders@1.4.2\n\n",
        "A deployment current for no type and running nothing is drained.\n",
        "Exit codes: 0 done, 5 no such deployment, 1 refused, 3 unreachable."
    ))]
    Deployments {
        #[command(subcommand)]
        command: crate::deployments::DeploymentsCommand,
    },
    /// Run XDB for development: an embedded PostgreSQL, the API and async services, the
    /// console and the samples' worker, until Ctrl-C
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb dev                         # data kept in the user's data dir\n",
        "  xdb dev --ephemeral             # a throwaway database\n",
        "  xdb dev --database-url postgres://postgres@127.0.0.1:5432/mydb\n\n",
        "The PostgreSQL binaries are downloaded once from Maven Central and cached\n",
        "(XDB_DEV_CACHE_DIR; XDB_DEV_MAVEN_REPOSITORY names a mirror). Started as root,\n",
        "PostgreSQL runs as user nobody (XDB_DEV_POSTGRES_USER names another)."
    ))]
    Dev(crate::dev::DevArgs),
    /// Print a shell completion script
    #[command(after_help = concat!(
        "Examples:\n",
        "  xdb completions bash > ~/.local/share/bash-completion/completions/xdb\n",
        "  xdb completions zsh > \"${fpath[1]}/_xdb\"\n",
        "  xdb completions fish > ~/.config/fish/completions/xdb.fish"
    ))]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

pub use crate::command_args::*;

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use xdb_protocol::HistoryEventType;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("xdb").chain(args.iter().copied()))
    }

    #[test]
    fn definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_global_flags_after_the_subcommand() {
        let cli = parse(&["describe", "p1", "-o", "json", "--url", "http://h:1"]).unwrap();
        assert_eq!(cli.global.output, Output::Json);
        assert_eq!(cli.global.url, "http://h:1");
        assert!(
            matches!(cli.command, Command::Describe(DescribeArgs { ref process_id, .. }) if process_id == "p1")
        );
    }

    #[test]
    fn parses_start_and_its_dependencies() {
        let cli = parse(&[
            "start",
            "p1",
            "-t",
            "T",
            "--worker-url",
            "http://w",
            "--state",
            "S",
            "--input",
            "{}",
            "--load-global",
            "a,b",
            "--table",
            "user",
            "--key",
            "id=1",
            "--attr",
            "x=1",
            "--id-reuse",
            "terminate-if-running",
            "--timeout",
            "1h",
        ])
        .unwrap();
        let Command::Start(start) = cli.command else {
            panic!("not start")
        };
        assert_eq!(start.timeout, Some(Duration::from_secs(3600)));
        assert_eq!(start.id_reuse, Some(IdReuse::TerminateIfRunning));
        // An input needs a state; a key needs a table.
        let e = parse(&[
            "start",
            "p1",
            "-t",
            "T",
            "--worker-url",
            "w",
            "--input",
            "1",
        ]);
        assert_eq!(e.unwrap_err().exit_code(), 2);
        let e = parse(&[
            "start",
            "p1",
            "-t",
            "T",
            "--worker-url",
            "w",
            "--key",
            "id=1",
        ]);
        assert_eq!(e.unwrap_err().exit_code(), 2);
    }

    #[test]
    fn parses_list_wait_and_rpc() {
        let cli = parse(&["list", "--status", "RUNNING", "--since", "1000"]).unwrap();
        let Command::List(list) = cli.command else {
            panic!("not list")
        };
        assert_eq!(
            (list.selection.status, list.selection.since),
            (Some(Status::Running), Some(1000))
        );
        let cli = parse(&["wait", "p1", "--timeout", "2m", "--progress"]).unwrap();
        let Command::Wait(wait) = cli.command else {
            panic!("not wait")
        };
        assert_eq!(wait.timeout, Duration::from_secs(120));
        assert!(parse(&["wait", "p1", "--timeout", "soon"]).is_err());
        let cli = parse(&["rpc", "p1", "verify", "--lock", "exclusive"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Rpc(RpcArgs {
                lock: Lock::Exclusive,
                ..
            })
        ));
        assert!(parse(&["list", "--all", "--page-token", "t"]).is_err());
        let cli = parse(&["history", "p1", "--event-type", "timer_fired"]).unwrap();
        let Command::History(h) = cli.command else {
            panic!("not history")
        };
        assert_eq!(h.event_types, vec![HistoryEventType::TimerFired]);
        assert!(parse(&["history", "p1", "--event-type", "NOPE"]).is_err());
    }

    #[test]
    fn parses_the_operator_commands() {
        let cli = parse(&["give-up", "p1", "--state", "S-2", "--reason", "r"]).unwrap();
        let Command::GiveUp(g) = cli.command else {
            panic!("not give-up")
        };
        assert_eq!(
            (g.state.as_deref(), g.control.reason.as_deref()),
            (Some("S-2"), Some("r"))
        );
        let cli = parse(&["resume", "p1", "--identity", "ann"]).unwrap();
        assert!(
            matches!(cli.command, Command::Resume(PauseArgs { ref control, .. }) if control.identity == "ann")
        );
        let cli = parse(&[
            "reset",
            "p1",
            "--state",
            "Charge",
            "--input",
            "{\"a\":1}",
            "--reason",
            "r",
        ])
        .unwrap();
        let Command::Reset(r) = cli.command else {
            panic!("not reset")
        };
        assert_eq!(
            (
                r.state.as_str(),
                r.input.as_deref(),
                r.control.reason.as_deref()
            ),
            ("Charge", Some("{\"a\":1}"), Some("r"))
        );
        assert!(parse(&["reset", "p1"]).is_err(), "--state is required");
        // pause, resume and reprioritize act on the whole execution.
        assert!(parse(&["pause", "p1", "--state", "S-1"]).is_err());
        assert!(parse(&["reprioritize", "p1", "--priority", "1", "--state", "S-1"]).is_err());
        let cli = parse(&["states", "p1", "--execution", "e1"]).unwrap();
        assert!(
            matches!(cli.command, Command::States(StatesArgs { ref execution, .. }) if execution.as_deref() == Some("e1"))
        );
    }

    #[test]
    fn reprioritize_needs_a_change_within_bounds() {
        let cli = parse(&[
            "reprioritize",
            "p1",
            "--priority",
            "1",
            "--fairness-key",
            "acme",
            "--fairness-weight",
            "1000",
            "--execution",
            "e1",
        ])
        .unwrap();
        let Command::Reprioritize(r) = cli.command else {
            panic!("not reprioritize")
        };
        assert_eq!(
            (
                r.change.priority,
                r.change.fairness_key.as_deref(),
                r.change.fairness_weight,
                r.control.execution.as_deref()
            ),
            (Some(1), Some("acme"), Some(1000), Some("e1"))
        );
        // Each flag alone is a change.
        for flag in [
            &["--priority", "5"][..],
            &["--fairness-key", "k"],
            &["--no-fairness-key"],
            &["--fairness-weight", "2"],
        ] {
            let args = [&["reprioritize", "p1"][..], flag].concat();
            assert!(parse(&args).is_ok(), "{flag:?}");
        }
        let err = parse(&["reprioritize", "p1", "--reason", "r"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("--priority"), "{err}");
        for bad in [
            &["--priority", "0"][..],
            &["--priority", "6"],
            &["--fairness-weight", "0"],
            &["--fairness-weight", "1001"],
            &["--fairness-key", ""],
            &["--no-fairness-key", "--fairness-key", "k"],
            &["--no-fairness-key", "--fairness-weight", "2"],
        ] {
            let args = [&["reprioritize", "p1"][..], bad].concat();
            assert_eq!(parse(&args).unwrap_err().exit_code(), 2, "{bad:?}");
        }
    }

    #[test]
    fn every_subcommand_has_examples_and_exit_codes_in_help() {
        let mut cmd = Cli::command();
        for sub in cmd.get_subcommands_mut() {
            let help = sub.render_long_help().to_string();
            assert!(
                help.contains("Examples:"),
                "{} has no examples",
                sub.get_name()
            );
        }
        let top = cmd.render_long_help().to_string();
        assert!(top.contains("Exit codes:"), "{top}");
    }
}
