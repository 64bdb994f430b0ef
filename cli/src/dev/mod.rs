//! `xdb dev`: everything a developer needs on one machine, in one process.
//!
//! An embedded PostgreSQL (`xdb-embedded-postgres`; or `--database-url`), the API and
//! async services (`xdb_server`), the web console, no authentication, and the samples'
//! worker with its tables, so their process types start from the printed commands.
//! Ctrl-C (or SIGTERM) stops them in dependency order: the services first (they drain
//! work that still calls the worker), then the worker, then the database.

mod args;
pub mod banner;
mod sample;

use std::time::Instant;

use anyhow::Context as _;
use xdb_config::{ConfigArgs, DatabaseUrl, Overrides, Service};
use xdb_embedded_postgres::{EmbeddedPostgres, Options};

pub use args::DevArgs;

use crate::exit::Exit;

/// The database `xdb dev` creates in the embedded server.
pub const DEV_DATABASE: &str = "xdb";
/// Quiet services; the samples' emails and the database's start are worth seeing.
const DEV_LOG_LEVEL: &str = "warn,xdb_samples=info,xdb_embedded_postgres=info";
/// How long tasks still running after the services stopped may take to finish.
const RUNTIME_SHUTDOWN: std::time::Duration = std::time::Duration::from_secs(5);

/// Runs `xdb dev` until Ctrl-C; errors are printed on stderr.
pub fn run(args: &DevArgs) -> Exit {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return Exit::ApiError;
        }
    };
    // The embedded server is spawned from this (the main) thread, so its
    // parent-death signal is tied to the process, not to a pool thread.
    let mut postgres = None;
    let outcome = runtime.block_on(dev(args, &mut postgres));
    // The database stops last, once the runtime is gone: no session of the services
    // (their notification listeners included) is left to lose its connection.
    runtime.shutdown_timeout(RUNTIME_SHUTDOWN);
    let stopped = postgres.map_or(Ok(()), EmbeddedPostgres::stop);
    match outcome.and(stopped.map_err(anyhow::Error::from)) {
        Ok(()) => {
            println!("xdb dev: stopped");
            Exit::Ok
        }
        Err(error) => {
            eprintln!("xdb dev: {error:#}");
            Exit::ApiError
        }
    }
}

/// Starts everything, prints the banner, runs until Ctrl-C and stops all but the
/// embedded database, which it leaves in `postgres` for [`run`] to stop.
async fn dev(args: &DevArgs, postgres: &mut Option<EmbeddedPostgres>) -> anyhow::Result<()> {
    let began = Instant::now();
    // Logging before the database exists, so its download and first start show.
    let placeholder = DatabaseUrl::parse("postgres://127.0.0.1/xdb").expect("a valid URL");
    xdb_config::init_logging(&settings(args, &placeholder)?.log);
    let database = match &args.database_url {
        Some(url) => DatabaseUrl::parse(url).map_err(|e| anyhow::anyhow!("--database-url: {e}"))?,
        None => {
            let data_dir = if args.ephemeral {
                None
            } else {
                Some(
                    args.data_dir
                        .clone()
                        .unwrap_or_else(xdb_embedded_postgres::default_data_dir),
                )
            };
            let mut options = Options::from_env(data_dir);
            options.port = args.postgres_port;
            let started = postgres.insert(xdb_embedded_postgres::start(&options).await?);
            started.ensure_database(DEV_DATABASE).await?;
            DatabaseUrl::parse(&started.url(DEV_DATABASE))
                .expect("the embedded server's URL parses")
        }
    };
    let (services, worker) = start_services(args, &database).await?;
    let running = banner::Running {
        api: services.api_address(),
        worker: worker.address(),
        database: database.redacted().to_string(),
        database_note: database_note(postgres.as_ref()),
        started_in: began.elapsed(),
    };
    print!("{}", banner::banner(&running));
    use std::io::Write as _;
    let _ = std::io::stdout().flush();

    let served = services.run_until(xdb_cluster::shutdown_signal()).await;
    let worker_stopped = worker.stop().await;
    served.and(worker_stopped)
}

async fn start_services(
    args: &DevArgs,
    database: &DatabaseUrl,
) -> anyhow::Result<(xdb_server::Services, sample::SampleWorker)> {
    let settings = settings(args, database)?;
    sample::create_tables(database).await?;
    let worker =
        sample::SampleWorker::start(args.worker_listen, args.sample_reminder_interval).await?;
    match xdb_server::start(&settings, true).await {
        Ok(services) => Ok((services, worker)),
        Err(error) => {
            let _ = worker.stop().await;
            Err(error)
        }
    }
}

/// The services' settings: the config file and `XDB_*` variables as for `xdb-server`,
/// with this database, these addresses and no authentication.
fn settings(args: &DevArgs, database: &DatabaseUrl) -> anyhow::Result<xdb_config::Settings> {
    let mut overrides = Overrides::default();
    overrides
        .set("database.url", Some(database.as_str()))
        .set("api.listen", Some(args.listen.to_string()))
        .set("async.listen", Some(args.async_listen.to_string()))
        // No authentication, whatever the environment says: a local sandbox.
        .set("security.api_tokens", Some(Vec::<String>::new()))
        .set("security.tokens", Some(Vec::<String>::new()))
        .default_value("log.level", DEV_LOG_LEVEL);
    ConfigArgs::default()
        .load(Service::Both, overrides)
        .context("settings")
}

fn database_note(postgres: Option<&EmbeddedPostgres>) -> String {
    let version = xdb_embedded_postgres::POSTGRES_VERSION;
    match postgres {
        None => "your database".to_string(),
        Some(pg) if pg.is_ephemeral() => {
            format!("embedded PostgreSQL {version}, ephemeral: removed on exit")
        }
        Some(pg) => format!(
            "embedded PostgreSQL {version} started in {:.1} s, data in {}",
            pg.started_in().as_secs_f64(),
            pg.data_dir().display()
        ),
    }
}
