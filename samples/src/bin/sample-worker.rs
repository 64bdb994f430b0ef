//! Hosts the sample processes' worker API over HTTP.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use xdb_samples::email::EmailOutbox;
use xdb_samples::site_creation::{default_retry_policy, SiteCreationOptions};
use xdb_samples::site_services::ExternalServices;
use xdb_samples::{sample_router_with, SampleWorkerConfig};

#[derive(Parser, Debug)]
#[command(
    name = "xdb-sample-worker",
    about = "XDB sample worker (user sign-up, site creation)"
)]
struct Args {
    /// Address to listen on.
    #[arg(
        long,
        env = "XDB_SAMPLE_WORKER_LISTEN",
        default_value = "127.0.0.1:8803"
    )]
    listen: SocketAddr,
    /// Seconds between reminder emails to unverified users.
    #[arg(long, env = "XDB_SAMPLE_REMINDER_INTERVAL_SECONDS", default_value_t = 24 * 60 * 60)]
    reminder_interval_seconds: u64,
    /// Probability (0 to 1) that a call to a simulated site service fails.
    #[arg(long, env = "XDB_SAMPLE_SITE_FAILURE_RATE", default_value_t = 0.0)]
    site_failure_rate: f64,
    /// Seed of the site services' failures, to replay a run.
    #[arg(long, env = "XDB_SAMPLE_SITE_SEED", default_value_t = 1)]
    site_seed: u64,
    /// Seconds a site deletion waits before cleaning up.
    #[arg(
        long,
        env = "XDB_SAMPLE_SITE_DELETION_GRACE_SECONDS",
        default_value_t = 3
    )]
    site_deletion_grace_seconds: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let args = Args::parse();
    anyhow::ensure!(
        (0.0..=1.0).contains(&args.site_failure_rate),
        "--site-failure-rate must be between 0 and 1"
    );
    let config = SampleWorkerConfig {
        site_services: ExternalServices::faulty(args.site_failure_rate, args.site_seed),
        site_options: SiteCreationOptions {
            retry_policy: default_retry_policy(),
            deletion_grace: Duration::from_secs(args.site_deletion_grace_seconds),
        },
        ..SampleWorkerConfig::new(
            EmailOutbox::new(),
            Duration::from_secs(args.reminder_interval_seconds),
        )
    };
    let app = sample_router_with(config);
    let listener = xdb_sdk::worker::bind_listener(args.listen)
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    tracing::info!(
        listen = %listener.local_addr()?,
        reminder_interval_seconds = args.reminder_interval_seconds,
        site_failure_rate = args.site_failure_rate,
        site_seed = args.site_seed,
        "xdb sample worker ready"
    );
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
