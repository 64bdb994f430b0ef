//! `xdb-api-service`: runs the API service.

/// See [`xdb_allocator`]: mimalloc, with transparent huge pages off.
#[global_allocator]
static ALLOCATOR: xdb_allocator::Allocator = xdb_allocator::Allocator;

use clap::Parser;
use xdb_api_service::ApiServiceArgs;

#[derive(Parser)]
#[command(
    version,
    about = "XDB API service: the REST API for clients",
    after_help = "Settings: defaults < config file < XDB_<SECTION>_<KEY> variables < flags."
)]
struct Cli {
    #[command(flatten)]
    args: ApiServiceArgs,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    xdb_allocator::keep_pages_small();
    let cli = Cli::parse();
    let (settings, config) = cli.args.load().unwrap_or_else(|error| {
        eprintln!("xdb-api-service: {error}");
        std::process::exit(2)
    });
    let telemetry = xdb_telemetry::init(&settings.log, &settings.telemetry, "xdb-api-service")
        .unwrap_or_else(|error| {
            eprintln!("xdb-api-service: {error}");
            std::process::exit(2)
        });
    let listener = xdb_cluster::bind_listener(config.api.listen)?;
    let state = xdb_api_service::connect(config).await?;
    let served = xdb_api_service::serve(state, listener, xdb_cluster::shutdown_signal()).await;
    // Off the runtime's threads: the exporter blocks while it sends the last spans.
    tokio::task::spawn_blocking(move || telemetry.shutdown()).await?;
    served
}
