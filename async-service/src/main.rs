//! `xdb-async-service`: runs the async service.

/// See [`xdb_allocator`]: mimalloc, with transparent huge pages off.
#[global_allocator]
static ALLOCATOR: xdb_allocator::Allocator = xdb_allocator::Allocator;

use clap::Parser;
use xdb_async_service::{AsyncService, AsyncServiceArgs};

#[derive(Parser)]
#[command(
    version,
    about = "XDB async service: executes process states",
    after_help = "Settings: defaults < config file < XDB_<SECTION>_<KEY> variables < flags.\n\
                  On SIGTERM it stops claiming, lets in-flight work finish within \
                  async.shutdown_grace_seconds and releases its leases."
)]
struct Cli {
    #[command(flatten)]
    args: AsyncServiceArgs,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    xdb_allocator::keep_pages_small();
    let cli = Cli::parse();
    let (settings, config) = cli.args.load().unwrap_or_else(|error| {
        eprintln!("xdb-async-service: {error}");
        std::process::exit(2)
    });
    let telemetry = xdb_telemetry::init(&settings.log, &settings.telemetry, "xdb-async-service")
        .unwrap_or_else(|error| {
            eprintln!("xdb-async-service: {error}");
            std::process::exit(2)
        });
    let service = AsyncService::start(config).await?;
    xdb_cluster::shutdown_signal().await;
    let stopped = service.shutdown().await;
    // Off the runtime's threads: the exporter blocks while it sends the last spans.
    tokio::task::spawn_blocking(move || telemetry.shutdown()).await?;
    stopped
}
