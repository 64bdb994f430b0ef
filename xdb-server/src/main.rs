//! `xdb-server`: the API service and the async service in one process.
//!
//! For local development and demos; production runs the two binaries separately so
//! that async consumers scale on their own.

/// mimalloc: under load the services allocate per request and per statement, and glibc
/// malloc's functions were about 5% of all CPU samples on the machine (14% of the Rust
/// processes' samples) in a profile of the benchmark's load.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::net::SocketAddr;

use clap::Parser;
use xdb_api_service::ApiServiceConfig;
use xdb_async_service::{AsyncService, AsyncServiceConfig};

#[derive(Parser)]
#[command(
    version,
    about = "XDB API + async service in one process (local development)"
)]
struct Cli {
    /// PostgreSQL URL of the user's database.
    #[arg(long, env = "XDB_DATABASE_URL")]
    database_url: String,
    #[arg(long, env = "XDB_API_LISTEN", default_value = "127.0.0.1:8801")]
    listen: SocketAddr,
    /// Install or upgrade the XDB system tables before starting.
    #[arg(long, env = "XDB_INSTALL_SCHEMA", default_value_t = false)]
    install_schema: bool,
    /// Longest wait-for-completion a client may ask for, in seconds (`api.max_wait_seconds`).
    #[arg(long, env = "XDB_API_MAX_WAIT_SECONDS", default_value_t = 300,
          value_parser = clap::value_parser!(u32).range(1..))]
    max_wait_seconds: u32,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let cli = Cli::parse();
    if cli.install_schema {
        let outcome = xdb_sys_schema::install(&cli.database_url).await?;
        tracing::info!(%outcome, "schema");
    }
    let mut api_config = ApiServiceConfig::new(cli.database_url.clone());
    api_config.listen = cli.listen;
    api_config.max_wait_seconds = cli.max_wait_seconds;
    let listener = tokio::net::TcpListener::bind(cli.listen).await?;
    let state = xdb_api_service::connect(api_config).await?;
    let async_service = AsyncService::start(AsyncServiceConfig::new(cli.database_url)).await?;
    xdb_api_service::serve(state, listener, xdb_cluster::shutdown_signal()).await?;
    async_service.shutdown().await
}
