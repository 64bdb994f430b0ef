//! `xdb-server`: the API service and the async service in one process.
//!
//! For local development and demos; production runs the two binaries separately so
//! that async consumers scale on their own. It reads the same config file, `XDB_*`
//! variables and shared flags as the two binaries, and honours every section of both.

/// See [`xdb_allocator`]: mimalloc, with transparent huge pages off.
#[global_allocator]
static ALLOCATOR: xdb_allocator::Allocator = xdb_allocator::Allocator;

use clap::Parser;
use xdb_api_service::ApiArgs;
use xdb_config::{ConfigArgs, Service};

#[derive(Parser)]
#[command(
    version,
    about = "XDB API + async service in one process (local development)",
    after_help = "Settings: defaults < config file < XDB_<SECTION>_<KEY> variables < flags.\n\
                  The file's [api] section configures the API, [async] and [queue] the \
                  async service; --listen is the API's address. Unless async.listen is \
                  set, the async service's health and internal API take a free port."
)]
struct Cli {
    #[command(flatten)]
    common: ConfigArgs,
    #[command(flatten)]
    api: ApiArgs,
    /// Install or upgrade the XDB system tables before starting
    #[arg(long, env = "XDB_INSTALL_SCHEMA")]
    install_schema: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    xdb_allocator::keep_pages_small();
    let cli = Cli::parse();
    let mut overrides = cli.common.overrides();
    // One process needs no fixed port for its async half: nothing but its own API
    // half calls it.
    overrides.default_value("async.listen", "127.0.0.1:0");
    cli.api.add_to(&mut overrides);
    let settings = cli
        .common
        .load(Service::Both, overrides)
        .unwrap_or_else(|error| {
            eprintln!("xdb-server: {error}");
            std::process::exit(2)
        });
    let telemetry = xdb_telemetry::init(&settings.log, &settings.telemetry, "xdb-server")
        .unwrap_or_else(|error| {
            eprintln!("xdb-server: {error}");
            std::process::exit(2)
        });
    let services = xdb_server::start(&settings, cli.install_schema).await?;
    let served = services.run_until(xdb_cluster::shutdown_signal()).await;
    // Off the runtime's threads: the exporter blocks while it sends the last spans.
    tokio::task::spawn_blocking(move || telemetry.shutdown()).await?;
    served
}
