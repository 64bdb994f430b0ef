//! Runs one API-service instance as its own OS process, so tests can SIGKILL it, with
//! the test hooks of `xdb_api_service::fault_injection` compiled in (and off unless its
//! variables are set).
//!
//! Takes the API service's flags, config file and `XDB_` variables, prints
//! [`API_READY_LINE`] and its address on stdout once it listens, and stops on SIGINT or
//! SIGTERM.

use std::io::Write;

use clap::Parser;
use tokio::signal::unix::{signal, SignalKind};
use xdb_api_service::ApiServiceArgs;
use xdb_integration_tests::API_READY_LINE;

#[derive(Parser)]
#[command(about = "An XDB API-service instance for the integration tests")]
struct Cli {
    #[command(flatten)]
    args: ApiServiceArgs,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let (_, config) = cli.args.load()?;
    let listener = tokio::net::TcpListener::bind(config.api.listen).await?;
    let address = listener.local_addr()?;
    let state = xdb_api_service::connect(config).await?;
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{API_READY_LINE} {address}")?;
        stdout.flush()?;
    }
    let mut terminate = signal(SignalKind::terminate())?;
    let stopped = async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
    };
    xdb_api_service::serve(state, listener, stopped).await
}
