//! `xdb-api-service`: runs the API service.

use clap::Parser;
use xdb_api_service::ApiServiceConfig;

#[derive(Parser)]
#[command(version, about = "XDB API service: the REST API for clients")]
struct Cli {
    #[command(flatten)]
    config: ApiServiceConfig,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let cli = Cli::parse();
    let listener = tokio::net::TcpListener::bind(cli.config.listen).await?;
    let state = xdb_api_service::connect(cli.config).await?;
    xdb_api_service::serve(state, listener, xdb_cluster::shutdown_signal()).await
}
