//! Runs one async-service instance as its own OS process, so tests can SIGKILL it.
//!
//! Takes the async service's flags, config file and `XDB_` variables (`--database-url`,
//! `--instance-id`, `--lease-seconds`, ...), prints a ready line (with its instance id
//! and HTTP address) on stdout once the service runs, and on SIGINT or SIGTERM shuts
//! down as `xdb-async-service` does: drains, then releases its leases.

use std::io::Write;

use clap::Parser;
use tokio::signal::unix::{signal, SignalKind};
use xdb_async_service::{AsyncService, AsyncServiceArgs};
use xdb_integration_tests::READY_LINE;

#[derive(Parser)]
#[command(about = "An XDB async-service instance for the integration tests")]
struct Cli {
    #[command(flatten)]
    args: AsyncServiceArgs,
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
    let service = AsyncService::start(config).await?;
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(
            stdout,
            "{READY_LINE} {} {}",
            service.instance_id(),
            service.address()
        )?;
        stdout.flush()?;
    }
    let mut terminate = signal(SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
    service.shutdown().await
}
