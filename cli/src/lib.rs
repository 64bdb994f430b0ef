//! `xdb`, the command-line client of the XDB service API, as a library so the binary
//! and the tests share it. [`main`] is the whole program.

#[macro_use]
pub mod exit;
pub mod args;
pub mod batch;
pub mod batch_views;
pub mod command_args;
pub mod commands;
pub mod definitions;
pub mod deployments;
pub mod dev;
pub mod flow_limits;
pub mod format;
mod history_lines;
pub mod operate;
pub mod payload;
pub mod requests;
pub mod schedule;
pub mod views;
pub mod wait;
pub mod where_clause;

use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use xdb_sdk::{Client, ClientError};

use args::{Cli, Command, Output};
use commands::Failure;
use exit::{describe_error, exit_for, Exit};
use operate::Control;

/// Runs `xdb` with the process's arguments and returns its exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            // Help and version exit 0, every parse error 2.
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(Exit::Usage.code()));
        }
    };
    ExitCode::from(run(cli).code())
}

/// Runs a parsed command line; prints the answer on stdout and errors on stderr.
pub fn run(cli: Cli) -> Exit {
    if let Command::Completions { shell } = cli.command {
        clap_complete::generate(shell, &mut Cli::command(), "xdb", &mut std::io::stdout());
        return Exit::Ok;
    }
    if let Command::Dev(args) = &cli.command {
        return dev::run(args);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return Exit::ApiError;
        }
    };
    let mut client =
        Client::new(cli.global.url.clone()).with_request_timeout(cli.global.request_timeout);
    if let Some(token) = &cli.global.token {
        client = client.with_bearer_token(token.clone());
    }
    let output = cli.global.output;
    let outcome = runtime.block_on(async {
        match &cli.command {
            Command::Start(a) => commands::start(&client, output, a).await,
            Command::Definitions { command } => definitions::run(&client, output, command).await,
            Command::Deployments { command } => deployments::run(&client, output, command).await,
            Command::Schedule { command } => schedule::run(&client, output, command).await,
            Command::FlowLimits { command } => flow_limits::run(&client, output, command).await,
            Command::Describe(a) => commands::describe(&client, output, a).await,
            Command::List(a) => commands::list(&client, output, a).await,
            Command::Count(a) => commands::count(&client, output, a).await,
            Command::History(a) => commands::history(&client, output, a).await,
            Command::Stop(a) => commands::stop(&client, output, a).await,
            Command::Publish(a) => commands::publish(&client, output, a).await,
            Command::Rpc(a) => commands::rpc(&client, output, a).await,
            Command::Wait(a) => wait::wait(&client, output, a).await,
            Command::States(a) => commands::states(&client, output, a).await,
            Command::Retry(a) => {
                let state = a.state.as_deref();
                commands::control(
                    &client,
                    output,
                    Control::RetryNow,
                    &a.process_id,
                    state,
                    &a.control,
                )
                .await
            }
            Command::GiveUp(a) => {
                let state = a.state.as_deref();
                commands::control(
                    &client,
                    output,
                    Control::GiveUp,
                    &a.process_id,
                    state,
                    &a.control,
                )
                .await
            }
            Command::Pause(a) => {
                commands::control(
                    &client,
                    output,
                    Control::Pause,
                    &a.process_id,
                    None,
                    &a.control,
                )
                .await
            }
            Command::Resume(a) => {
                commands::control(
                    &client,
                    output,
                    Control::Resume,
                    &a.process_id,
                    None,
                    &a.control,
                )
                .await
            }
            Command::Reprioritize(a) => {
                let change = requests::reprioritization(&a.change)?;
                commands::control(
                    &client,
                    output,
                    Control::Reprioritize(change),
                    &a.process_id,
                    None,
                    &a.control,
                )
                .await
            }
            Command::Reset(a) => commands::reset(&client, output, a).await,
            Command::Batch { command } => batch::run(&client, output, command).await,
            Command::Completions { .. } | Command::Dev(_) => unreachable!("handled above"),
        }
    });
    match outcome {
        Ok(exit) => exit,
        Err(Failure::Usage(message)) => {
            eprintln!("error: {message}");
            Exit::Usage
        }
        Err(Failure::Call(error)) => {
            report(output, &error);
            exit_for(&error)
        }
    }
}

/// A failed call: its sub-type and message on stderr; with `--output json` also the
/// service's error body on stdout, as the API sent it.
fn report(output: Output, error: &ClientError) {
    if let (Output::Json, Some(body)) = (output, error.api_error()) {
        if let Ok(json) = serde_json::to_string_pretty(body) {
            println!("{json}");
        }
    }
    eprintln!("{}", describe_error(error));
}
