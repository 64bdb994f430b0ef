//! `xdb-async-service`: runs the async service on the database queue.

use clap::Parser;
use xdb_async_service::{AsyncService, AsyncServiceConfig};

#[derive(Parser)]
#[command(version, about = "XDB async service: executes process states")]
struct Cli {
    #[command(flatten)]
    config: AsyncServiceConfig,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let cli = Cli::parse();
    let service = AsyncService::start(cli.config).await?;
    xdb_cluster::shutdown_signal().await;
    service.shutdown().await
}
